"""JavaScript and TypeScript, on the court's side: which files are theirs, which are tests and test harness, and what
a change does to that harness (``.only``, skips added, tests or test files deleted, runner configuration and setup
files). Pure: paths and text in, facts out.

The test files are the ones node's own runner finds (``node --test`` with no arguments): ``*.test.js``,
``*-test.js``, ``*_test.js``, ``test-*.js``, ``test.js`` and every script under a ``test`` directory, plus Jest's and
Vitest's names (``*.spec.*``, ``__tests__/``); ``node_modules`` is never the project's. ``package.json`` and the lock
files decide what the tests run with, so a change to them re-runs the base's tests against the head's code (the guard
run), as a change to a test file does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from checks.models import Severity

NAME = "JavaScript"
SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs")
TYPED_SUFFIXES = (".ts", ".mts", ".cts", ".tsx", ".jsx")
SUFFIXES = SCRIPT_SUFFIXES + TYPED_SUFFIXES
TEST_DIRS = frozenset({"test", "tests", "__tests__"})
LOCK_FILES = ("package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml")
VERSION_FILES = (".nvmrc", ".node-version")
ENVIRONMENT_NAMES = frozenset({"package.json", *LOCK_FILES, *VERSION_FILES, ".npmrc"})
# configuration and setup files of the runners: they decide which tests run and what a test sees
RUNNER_CONFIG = re.compile(r"^(jest|vitest|vite|\.mocharc|ava|babel)\.?[\w.-]*\.(js|cjs|mjs|ts|cts|mts|json|ya?ml)$"
                           r"|^\.mocharc$|^\.babelrc$")
SETUP_NAME = re.compile(r"(^|[./_-])(setup|teardown|global-?setup)[^/]*\.(js|cjs|mjs|ts)$", re.IGNORECASE)
# the test functions of node:test, Jest, Vitest and Mocha: `test('name', …)`, `it.only(…)`, `describe.skip(…)`
TEST_CALL = re.compile(r"\b(test|it|describe|suite)(?:\.(only|skip|todo|concurrent))?\s*\(\s*(['\"`])(.*?)\3")
ONLY = re.compile(r"\b(test|it|describe|suite|context)\.only\s*\(|\b(fit|fdescribe)\s*\(|\{\s*only\s*:\s*true")
SKIP = re.compile(r"\b(test|it|describe|suite|context)\.(skip|todo)\s*\(|\b(xit|xdescribe|xtest)\s*\("
                  r"|\{\s*skip\s*:\s*(true|['\"`])|\.skip\s*\(\s*\)|\bthis\.skip\s*\(")
# a file that failed outside any test (it does not load, it throws at the top) is one error: ``test/a.test.js::(file)``
FILE_ID = "::(file)"
TEST_SEPARATOR = " > "


def owns(path: str) -> bool:
    """A JavaScript or TypeScript source file (never one under ``node_modules``)."""
    return path.endswith(SUFFIXES) and "node_modules" not in PurePosixPath(path).parts


def is_test_path(path: str) -> bool:
    """A test file as node's runner, Jest or Vitest finds it, or a script under a test directory."""
    if not owns(path):
        return False
    parts = PurePosixPath(path).parts
    name = parts[-1]
    stem = name.rsplit(".", 1)[0]
    return (any(part in TEST_DIRS for part in parts[:-1]) or stem == "test" or stem.startswith("test-")
            or stem.endswith(("-test", "_test", ".test", ".spec")))


def is_environment_path(path: str) -> bool:
    """A file that decides which packages and which Node the tests run with."""
    return PurePosixPath(path).name in ENVIRONMENT_NAMES and "node_modules" not in PurePosixPath(path).parts


def is_harness_path(path: str) -> bool:
    """A runner's configuration or setup file (``jest.config.js``, ``.mocharc.yml``, ``vitest.setup.ts``)."""
    name = PurePosixPath(path).name
    return "node_modules" not in PurePosixPath(path).parts and (
        RUNNER_CONFIG.match(name) is not None or (owns(path) and SETUP_NAME.search(name) is not None))


def present(paths: Iterable[str]) -> bool:
    """Whether the tree has JavaScript tests LogoMesh can try to run: a ``package.json`` at its root and a test
    file."""
    paths = set(paths)
    return "package.json" in paths and bool(test_files(paths))


def test_files(paths: Iterable[str]) -> tuple[str, ...]:
    """The tree's test files, sorted (the ones LogoMesh hands the runner: the tree's own choice is never asked)."""
    return tuple(sorted(p for p in paths if is_test_path(p) and "fixtures" not in PurePosixPath(p).parts))


def test_names(text: str) -> tuple[str, ...]:
    """The names a test file gives its tests and suites (``test('adds', …)``, ``describe('calc', …)``), in order."""
    return tuple(m.group(4) for m in TEST_CALL.finditer(text))


def node_id(test_file: str, names: Iterable[str]) -> str:
    """LogoMesh's id of one test: ``test/calc.test.js::calc > adds`` (its suites, then its name)."""
    return f"{test_file}::{TEST_SEPARATOR.join(names)}"


def harness_changes(path: str, status: str, content: str | None, added: Iterable[tuple[int, str]],
                    removed: Iterable[str]) -> list[tuple[str, int | None, str, Severity]]:
    """What a change to one JavaScript/TypeScript file does to the harness, as ``(mechanism, line, summary,
    severity)``: ``.only`` added (the other tests of its file may stop running), a skip added to an existing test file,
    tests deleted from a file that stays or the whole test file deleted, a runner's configuration or setup file."""
    found: list[tuple[str, int | None, str, Severity]] = []
    if is_harness_path(path):
        found.append(("runner-config", None, f"{path} is {status}: it configures how the tests run or what they "
                      "see before they start", "medium"))
    if not is_test_path(path):
        return found
    if status == "removed":
        gone = test_names("\n".join(removed))
        named = f" ({', '.join(gone[:5])})" if gone else ""
        return [*found, ("deleted-test", None, f"{path}: a test file is deleted{named}", "medium")]
    for number, text in added:
        if ONLY.search(text):
            found.append(("only", number, f"{path}:{number} adds `.only`: the file's other tests may stop running",
                          "high"))
        if SKIP.search(text) and status != "added":
            found.append(("skip", number, f"{path}:{number} adds a skip to an existing test file", "medium"))
    kept = set(test_names(content or ""))
    deleted = [name for name in test_names("\n".join(removed)) if name not in kept]
    if deleted:
        found.append(("deleted-test", None, f"{path}: test(s) deleted: {', '.join(deleted[:10])}", "medium"))
    return found
