"""The names a change removes from product code: what a test deleted with them may fail on under the base's tests.

What: :func:`removed_names` reads the diff's removed and added lines of Python product files (not tests) and
returns the names whose definition the change deletes and defines nowhere else in the change: ``def name``,
``class name``, a module-level ``name = ...`` and the names a removed ``import`` bound (a re-export).
Why: deleting a deprecated function together with its test is honest work, yet under the base's test files (the
guard run) that test fails, and a deleted test that fails under the base's oracle is a regression by design. The
failure tells the two apart only when it names what the change itself removed (``module 'm' has no attribute
'old_name'``, ``cannot import name 'old_name'``): :func:`names_removed_symbol` checks exactly that.
Example: ``-def soft_unicode(s):`` and ``-    from ._native import soft_unicode`` → ``{"soft_unicode"}``.

:func:`renamed_tests` reads the other side: a test function the change renames where it stands (its ``def`` line
replaced by another test's within one hunk), so that the renamed test is the same test with a new name — an
edited expectation, as an edit that keeps the name is — and not a deletion.
Example: ``-def test_request_url_trims_leading_path_separators():`` / ``+def test_request_url_handles_leading_path_
separators():`` → ``{"tests/test_adapters.py::test_request_url_trims_leading_path_separators":
"tests/test_adapters.py::test_request_url_handles_leading_path_separators"}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import PurePosixPath

from checks.diff import DiffError, diff_hunks, parse_diff

MIN_RENAMED = 3  # a shorter piece of a file name (``a``, ``v2``) is too common in test names to be replaced
DEFINITION = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")
ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")
FROM_IMPORT = re.compile(r"^\s*from\s+[\w.]+\s+import\s+\(?([\w\s,]+?)\)?\s*(?:#.*)?$")
IMPORT = re.compile(r"^\s*import\s+([\w.\s,]+?)\s*(?:#.*)?$")
# the errors by which a test meets a name that no longer exists (NameError is not one: it is code that still
# refers to the name, a break the change made, not a test of what it removed)
TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(")
MISSING_SYMBOL = re.compile(r"has no attribute '([A-Za-z_]\w*)'|cannot import name '([A-Za-z_]\w*)'")


def _bound(line: str) -> set[str]:
    """The names one line of Python binds at its own indentation level (definitions, assignments, imports)."""
    names: set[str] = set()
    stripped = line.strip()
    match = DEFINITION.match(stripped)
    if match:
        names.add(match.group(1))
    assigned = ASSIGNMENT.match(line)  # module level only: no indentation
    if assigned:
        names.add(assigned.group(1))
    imported = FROM_IMPORT.match(stripped)
    if imported:
        for part in imported.group(1).split(","):
            words = part.split()
            if words:
                names.add(words[-1])  # ``a as b`` binds b
    plain = IMPORT.match(stripped)
    if plain:
        for part in plain.group(1).split(","):
            words = part.split()
            if words:
                names.add(words[-1].split(".")[0] if len(words) == 1 else words[-1])
    return names


def removed_names(diff: str, is_test: Callable[[str], bool]) -> frozenset[str]:
    """The names the change's product Python deletes and binds again nowhere in its added lines."""
    try:
        deltas = parse_diff(diff)
    except DiffError:
        return frozenset()
    removed: set[str] = set()
    added: set[str] = set()
    for delta in deltas:
        paths = [p for p in (delta.path, delta.old_path) if p]
        if not any(p.endswith((".py", ".pyi")) for p in paths) or any(is_test(p) for p in paths):
            continue
        for line in delta.removed_text:
            removed |= _bound(line)
        for line in delta.added_text:
            added |= _bound(line)
    return frozenset(n for n in removed - added if not n.startswith("__"))


def names_removed_symbol(messages: Iterable[str | None], removed: Collection[str]) -> str | None:
    """The removed name that a failure's message says is missing, or None."""
    if not removed:
        return None
    for message in messages:
        for match in MISSING_SYMBOL.finditer(message or ""):
            name = next(g for g in match.groups() if g)
            if name in removed:
                return name
    return None


def renamed_tests(diff: str, is_test: Callable[[str], bool]) -> dict[str, str]:
    """``{"path::old_test": "path::new_test"}`` for each test function of a Python test file whose ``def`` line a
    hunk replaces by another test's ``def`` line, neither name defined elsewhere in that hunk: paired in order, and
    only in hunks that remove as many test definitions as they add (a hunk that deletes more than it adds is not
    read as renames)."""
    renamed: dict[str, str] = {}
    for path, hunks in diff_hunks(diff):
        if not path.endswith(".py") or not is_test(path):
            continue
        for hunk in hunks:
            removed = [m.group(1) for line in hunk if line[:1] == "-" and (m := TEST_DEF.match(line[1:]))]
            added = [m.group(1) for line in hunk if line[:1] == "+" and (m := TEST_DEF.match(line[1:]))]
            gone = [n for n in removed if n not in added]
            new = [n for n in added if n not in removed]
            if gone and len(gone) == len(new):
                renamed.update({f"{path}::{old}": f"{path}::{now}" for old, now in zip(gone, new, strict=True)})
    return renamed


def renamed_data(renames: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """What a test named after a data file it reads is renamed by, when the change renames that file: ``(old, new)``
    pairs of its file name, its stem and the ``_``-separated pieces that differ (``charset_KOI8-R.html`` →
    ``charset_koi8-r.html``: the name, ``charset_KOI8-R`` → ``charset_koi8-r``, ``KOI8-R`` → ``koi8-r``), longest
    first. ``renames``: the ``(old_path, new_path)`` of the test data files the change renamed."""
    pairs: dict[str, str] = {}
    for old_path, new_path in renames:
        old, new = PurePosixPath(old_path), PurePosixPath(new_path)
        candidates = [(old.name, new.name), (old.stem, new.stem)]
        old_pieces, new_pieces = old.stem.split("_"), new.stem.split("_")
        if len(old_pieces) == len(new_pieces):
            candidates += list(zip(old_pieces, new_pieces, strict=True))
        for before, after in candidates:
            if before and after and before != after and len(before) >= MIN_RENAMED:
                pairs.setdefault(before, after)
    return tuple(sorted(pairs.items(), key=lambda pair: (-len(pair[0]), pair[0])))


def rename_by_data(name: str, pairs: Sequence[tuple[str, str]]) -> str:
    """``name`` (a node id's part after its file) with each renamed data file's names replaced, longest first."""
    for before, after in pairs:
        name = name.replace(before, after)
    return name
