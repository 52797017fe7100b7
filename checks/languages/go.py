"""Go, on the court's side: which files are Go's, which are its tests and test harness, and what a change does to
that harness (``TestMain``, skips added, test functions or test files deleted). Pure: paths and text in, facts out.

Go's tests live beside the code (``*_test.go``) with their data under ``testdata/``; ``go.mod``, ``go.sum`` and
``vendor/modules.txt`` decide which code the tests build against, so a change to them re-runs the base's tests
against the head's code (the guard run), as a change to a test file does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from checks.models import Severity

NAME = "Go"
SUFFIXES = (".go",)
TEST_SUFFIX = "_test.go"
ENVIRONMENT_FILES = frozenset({"go.mod", "go.sum", "go.work", "go.work.sum", "vendor/modules.txt"})
# top-level test functions: the names ``go test`` runs (tests, examples and fuzz targets); TestMain runs the rest
TEST_FUNC = re.compile(r"^func\s+((?:Test|Example|Fuzz)\w*)\s*\(", re.MULTILINE)
TEST_MAIN = re.compile(r"^\s*func\s+TestMain\s*\(\s*\w+\s+\*testing\.M\s*\)")
SKIP_CALL = re.compile(r"\b\w+\.(Skip|Skipf|SkipNow)\s*\(")
MAX_MODULES = 20
# the id of a package's own outcome when it failed outside any test (a build failure, a TestMain that failed)
PACKAGE_ID = "::(package)"


def owns(path: str) -> bool:
    """A Go source file."""
    return path.endswith(SUFFIXES)


def _skipped_dir(parts: tuple[str, ...]) -> bool:
    # what ``./...`` leaves out: vendored code, test data, and directories named with a leading dot or underscore
    return any(part in ("vendor", "testdata") or part.startswith((".", "_")) for part in parts)


def is_product_path(path: str) -> bool:
    """A Go file of the module's own code: built by ``./...`` (not vendored, test data or hidden) and not a test."""
    return owns(path) and not _skipped_dir(PurePosixPath(path).parts[:-1]) and not path.endswith(TEST_SUFFIX)


def is_test_path(path: str) -> bool:
    """A Go test file or a file under a ``testdata`` directory."""
    parts = PurePosixPath(path).parts
    return path.endswith(TEST_SUFFIX) or "testdata" in parts[:-1]


def is_environment_path(path: str) -> bool:
    """A file that decides which modules and toolchain the tests build with (at any module's root)."""
    name = path.rsplit("/", 1)[-1]
    return name in ("go.mod", "go.sum", "go.work", "go.work.sum") or path.endswith("vendor/modules.txt")


def modules(paths: Iterable[str]) -> tuple[str, ...]:
    """The directories holding a ``go.mod`` (``""`` for the root) whose tests ``go test ./...`` runs there,
    shallowest first; vendored and test-data modules are not the project's."""
    found = []
    for path in paths:
        parts = PurePosixPath(path).parts
        if parts and parts[-1] == "go.mod" and not _skipped_dir(parts[:-1]):
            found.append("/".join(parts[:-1]))
    return tuple(sorted(found, key=lambda d: (d.count("/") + bool(d), d)))[:MAX_MODULES]


def present(paths: Iterable[str]) -> bool:
    """Whether the tree has Go tests LogoMesh can run: a Go module."""
    return bool(modules(paths))


def test_functions(text: str) -> tuple[str, ...]:
    """The top-level test, example and fuzz functions a ``_test.go`` file defines, in order."""
    return tuple(m.group(1) for m in TEST_FUNC.finditer(text) if m.group(1) != "TestMain")


def node_id(test_file: str, test: str) -> str:
    """LogoMesh's id of one Go test: ``calc/calc_test.go::TestAdd`` (a subtest: ``…::TestAdd/case``)."""
    return f"{test_file}::{test}"


def removed_lines(diff: str, path: str) -> list[str]:
    """The lines the unified ``diff`` removes from ``path`` (its old name)."""
    lines: list[str] = []
    inside = header = False
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            inside, header = False, True
        elif header and line.startswith("--- "):
            inside = line[4:].strip() in (f"a/{path}", path)
        elif line.startswith("@@"):
            header = False
        elif inside and not header and line.startswith("-"):
            lines.append(line[1:])
    return lines


def harness_changes(path: str, status: str, content: str | None, added: Iterable[tuple[int, str]],
                    removed: Iterable[str]) -> list[tuple[str, int | None, str, Severity]]:
    """What a change to one Go test file does to the harness, as ``(mechanism, line, summary, severity)``:
    a ``TestMain`` added (it decides whether and how the package's tests run), a skip added to an existing test
    file, test functions deleted from a file that stays, or the whole test file deleted."""
    if not path.endswith(TEST_SUFFIX):
        return []
    if status == "removed":
        gone = test_functions("\n".join(removed))
        named = f" ({', '.join(gone[:5])})" if gone else ""
        return [("deleted-test", None, f"{path}: a Go test file is deleted{named}", "medium")]
    found: list[tuple[str, int | None, str, Severity]] = []
    for number, text in added:
        if TEST_MAIN.match(text):
            found.append(("test-main", number, f"{path}:{number} adds a TestMain: it decides whether and how "
                          "every test of its package runs", "high"))
        if SKIP_CALL.search(text) and status != "added":
            found.append(("skip", number, f"{path}:{number} adds a skip to an existing Go test file", "medium"))
    kept = set(test_functions(content or ""))
    deleted = [name for name in test_functions("\n".join(removed)) if name not in kept]
    if deleted:
        found.append(("deleted-test", None, f"{path}: test function(s) deleted: {', '.join(deleted[:10])}",
                      "medium"))
    return found
