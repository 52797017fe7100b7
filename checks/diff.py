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


def _strip_prefix(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
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
        removed = 0
        for hunk in patched:
            for line in hunk:
                if line.is_added and line.target_line_no is not None:
                    added.append(line.target_line_no)
                    added_text.append(line.value.rstrip("\n"))
                elif line.is_removed:
                    removed += 1
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
        path = target or source or patched.path
        deltas.append(
            FileDelta(
                path=path,
                old_path=source if status == "renamed" else None,
                status=status,
                added_lines=tuple(added),
                removed_count=removed,
                is_binary=bool(patched.is_binary_file),
                added_text=tuple(added_text),
            )
        )
    return deltas
