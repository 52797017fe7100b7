"""Behaviour changes a change declares in its own changelog entry, and the deleted tests that tested them.

What: :func:`declared_deletions` reads a unified diff and returns, for each test function the change deletes from a
Python test file (its ``def`` line removed and not added again in that file), the identifier that ties it to a
*declared* behaviour change: a name that

1. a changelog line the change adds names as code (inside backticks, or shaped like code: ``SERVER_NAME``,
   ``session_cookie``), in a changelog file (``CHANGES.rst``, ``CHANGELOG.md``, ``HISTORY``, ``NEWS``, a
   ``changelog.d/`` or ``newsfragments/`` fragment, ``docs/changelog.rst``, …);
2. the change's own product Python touches (a removed or added line of a non-test ``.py`` file uses it); and
3. the deleted test's own removed lines use.

Why: a change that removes a behaviour on purpose deletes the behaviour's tests; under the base's tests (the guard
run) they fail, exactly as a regression hidden by deleting its tests would. The failure cannot tell the two apart;
the change's own words can say which it means. When all three hold, the differential calls the deleted test
*declared* (:mod:`checks.differential`): not charged as a regression, and never a pass either — the Chief Justice
makes the verdict ``neutral`` for a person to confirm the declared change. Without an entry, or when the entry
names nothing the deleted test uses, or names something the product code of the change does not touch, the
deleted test that fails is still *regressed*.
Example (flask#5054): ``CHANGES.rst`` gains "``SESSION_COOKIE_DOMAIN`` does not fall back to ``SERVER_NAME``",
``src/flask/sessions.py`` loses ``app.config["SERVER_NAME"]``, and the deleted ``test_session_using_server_name``
calls ``app.config.update(SERVER_NAME="example.com")`` → ``{("tests/test_basic.py", "test_session_using_server_
name"): "SERVER_NAME"}``.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from pathlib import PurePosixPath

from checks.diff import diff_hunks
from checks.removed_names import TEST_DEF

CHANGELOG_STEMS = frozenset({"changes", "changelog", "history", "news", "release-notes", "release_notes",
                             "releasenotes", "whatsnew", "whats_new", "whats-new"})
FRAGMENT_DIRS = frozenset({"changelog.d", "newsfragments", "news", "changes", "changelog", "changelogs"})
CODE_SPAN = re.compile(r"`+([^`]+)`+")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a bare word shaped like code: snake_case or SCREAMING_CASE with an inner underscore
CODE_SHAPED = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]\b")
MIN_LENGTH = 3  # ``a``, ``x``, ``id`` name nothing in particular
# words a changelog puts in code spans that name no behaviour of the project
COMMON = frozenset({"self", "cls", "str", "int", "bool", "float", "bytes", "dict", "list", "tuple", "set", "object",
                    "type", "len", "print", "pytest", "test", "tests", "fixture", "assert", "warning", "warnings",
                    "error", "exception", "value", "default", "name", "none", "true", "false", "args", "kwargs"})


def is_changelog(path: str) -> bool:
    """Whether ``path`` is a changelog file or a changelog fragment."""
    pure = PurePosixPath(path)
    if pure.suffix in (".py", ".pyi"):
        return False
    stem = pure.name.lower().split(".", 1)[0]
    if stem in CHANGELOG_STEMS:
        return True
    return any(part.lower() in FRAGMENT_DIRS for part in pure.parts[:-1])


def _declared(line: str) -> set[str]:
    """The names a changelog line writes as code."""
    names: set[str] = set()
    for span in CODE_SPAN.findall(line):
        names.update(IDENTIFIER.findall(span))
    names.update(CODE_SHAPED.findall(CODE_SPAN.sub(" ", line)))
    return {n for n in names if len(n) >= MIN_LENGTH and not keyword.iskeyword(n) and n.lower() not in COMMON}


def _deleted_tests(hunks: list[list[str]]) -> dict[str, set[str]]:
    """The test functions whose ``def`` these hunks remove (and do not add again), each with the identifiers of
    its removed lines (its ``def`` line and the deeper-indented lines removed with it)."""
    bodies: dict[str, set[str]] = {}
    added: set[str] = set()
    for hunk in hunks:
        current: str | None = None
        indent = 0
        for line in hunk:
            text = line[1:]
            match = TEST_DEF.match(text) if line[0] in "+-" else None
            if line[0] == "+" and match:
                added.add(match.group(1))
            if line[0] != "-":
                current = None
                continue
            if match:
                current, indent = match.group(1), len(text) - len(text.lstrip())
                bodies.setdefault(current, set()).update(IDENTIFIER.findall(text))
            elif current is not None and (not text.strip() or len(text) - len(text.lstrip()) > indent):
                bodies[current].update(IDENTIFIER.findall(text))
            else:
                current = None
    return {name: body for name, body in bodies.items() if name not in added}


def declared_deletions(diff: str, is_test: Callable[[str], bool]) -> dict[tuple[str, str], str]:
    """``{(test file, test function): identifier}`` for each test the change deletes that uses a name its own
    changelog entry declares changed and its product Python touches (module docstring)."""
    files = diff_hunks(diff)
    declared: set[str] = set()
    touched: set[str] = set()
    for path, hunks in files:
        lines = [line for hunk in hunks for line in hunk]
        if is_changelog(path):
            for line in lines:
                if line.startswith("+"):
                    declared |= _declared(line[1:])
        elif path.endswith(".py") and not is_test(path):
            for line in lines:
                if line[:1] in ("+", "-"):
                    touched.update(IDENTIFIER.findall(line[1:]))
    names = declared & touched
    if not names:
        return {}
    found: dict[tuple[str, str], str] = {}
    for path, hunks in files:
        if not path.endswith(".py") or not is_test(path):
            continue
        for test, body in _deleted_tests(hunks).items():
            shared = sorted(names & body)
            if shared:
                found[(path, test)] = shared[0]
    return found
