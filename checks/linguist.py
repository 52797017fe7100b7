"""GitHub Linguist's path attributes, read from the base commit's ``.gitattributes``: which changed files the
repository marks as generated, vendored or documentation (``linguist-generated``, ``linguist-vendored``,
``linguist-documentation``). Pure: the caller hands in the file's text.

Patterns follow gitattributes: a pattern without a slash matches a file name at any depth, one with a slash is
anchored at the root, ``**`` spans directories; a later line wins; ``-attr`` and ``attr=false`` unset.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

ATTRIBUTES = ("generated", "vendored", "documentation")
MAX_LINES = 2000


def _matches(path: str, pattern: str) -> bool:
    if not pattern.endswith("/**"):
        pattern = pattern.rstrip("/")
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    pattern = pattern.lstrip("/")
    if pattern.endswith("/**"):
        return path.startswith(pattern[:-3] + "/") or fnmatch.fnmatchcase(path, pattern)
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return pattern.startswith("**/") and fnmatch.fnmatchcase(path, pattern[3:])


def linguist_marks(gitattributes: str | None, paths: Iterable[str]) -> dict[str, str]:
    """``{path: "generated" | "vendored" | "documentation"}`` for the paths the file marks (the first of those
    attributes set, in that order)."""
    if not gitattributes:
        return {}
    rules: list[tuple[str, dict[str, bool]]] = []
    for line in gitattributes.splitlines()[:MAX_LINES]:
        fields = line.split()
        if not fields or fields[0].startswith("#") or fields[0].startswith("[attr]"):
            continue
        settings: dict[str, bool] = {}
        for field in fields[1:]:
            for name in ATTRIBUTES:
                key = f"linguist-{name}"
                if field in (key, f"{key}=true", f"{key}=1"):
                    settings[name] = True
                elif field in (f"-{key}", f"!{key}", f"{key}=false", f"{key}=0"):
                    settings[name] = False
        if settings:
            rules.append((fields[0], settings))
    marks: dict[str, str] = {}
    for path in paths:
        state: dict[str, bool] = {}
        for pattern, settings in rules:
            if _matches(path, pattern):
                state.update(settings)
        for name in ATTRIBUTES:
            if state.get(name):
                marks[path] = name
                break
    return marks
