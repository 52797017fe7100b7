"""Parse a unified git diff into the changed files and the head-side line numbers each one adds."""

from __future__ import annotations

from dataclasses import dataclass, field

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet


class DiffError(ValueError):
    """The diff text could not be parsed."""


@dataclass(frozen=True)
class FileDelta:
    path: str
    old_path: str | None
    status: str
    added_lines: tuple[int, ...]
    removed_count: int
    is_binary: bool
    is_symlink: bool = False
    added_text: tuple[str, ...] = field(default=())
    removed_text: tuple[str, ...] = field(default=())


C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def c_unquote(path: str) -> str:
    """Undo git's C-style quoting of a path (``"calc/impl\\"v2.py"``, octal bytes for non-ASCII)."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 3 < len(body) + 1 and all(c in "01234567" for c in body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(C_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out.extend(char.encode("utf-8", "surrogateescape"))
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip_prefix(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
    path = c_unquote(path)
    for prefix in ("a/", "b/"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def parse_diff(text: str) -> list[FileDelta]:
    """Every file of the diff, in diff order, with the 1-based head line numbers of its added lines."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise DiffError(f"cannot parse diff: {exc}") from exc
    deltas: list[FileDelta] = []
    for patched in patch:
        added: list[int] = []
        added_text: list[str] = []
        removed_text: list[str] = []
        removed = 0
        for hunk in patched:
            for line in hunk:
                if line.is_added and line.target_line_no is not None:
                    added.append(line.target_line_no)
                    added_text.append(line.value.rstrip("\n"))
                elif line.is_removed:
                    removed += 1
                    removed_text.append(line.value.rstrip("\n"))
        if patched.is_added_file:
            status = "added"
        elif patched.is_removed_file:
            status = "removed"
        elif patched.is_rename:
            status = "renamed"
        else:
            status = "modified"
        target = _strip_prefix(patched.target_file)
        source = _strip_prefix(patched.source_file)
        path = target or source or c_unquote(patched.path)
        deltas.append(
            FileDelta(
                path=path,
                old_path=source if status == "renamed" else None,
                status=status,
                added_lines=tuple(added),
                removed_count=removed,
                is_binary=bool(patched.is_binary_file),
                added_text=tuple(added_text),
                removed_text=tuple(removed_text),
            )
        )
    return deltas


def diff_hunks(text: str) -> list[tuple[str, list[list[str]]]]:
    """``(path, hunks)`` per file of the diff, in diff order, each hunk its ``+``/``-``/context lines as the diff
    writes them (``"-    assert x"``): what :func:`parse_diff`'s per-file text loses, where one hunk ends and
    the next begins. The head's path; the base's for a deleted file. A diff that does not parse gives none."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError:
        return []
    files: list[tuple[str, list[list[str]]]] = []
    for patched in patch:
        path = _strip_prefix(patched.target_file) or _strip_prefix(patched.source_file) or c_unquote(patched.path)
        hunks = [[f"{line.line_type}{line.value.rstrip(chr(10))}" for line in hunk if line.line_type in "+- "]
                 for hunk in patched]
        files.append((path, hunks))
    return files
