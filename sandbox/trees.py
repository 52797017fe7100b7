"""The trees a sandbox can run: a commit read from git's objects, a directory, and the *guard* tree.

A tree lists its paths, reads a file's text (for environment detection and the base's test configuration) and
packs itself into the tar the container receives. The guard tree is the head commit's product code under the
base commit's test files: existing behaviour is judged by the oracle that held before the change.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Protocol

from checks.languages import javascript
from checks.testpaths import PYTEST_CONFIGS, holds_pytest_config, is_test_path
from sandbox.tarball import GitBytes, pack_directory, pack_git_entries

MAX_READ = 1024 * 1024


def pytest_config(read: Callable[[str], str | None]) -> tuple[str, str] | None:
    """``(name, text)`` of the file pytest would take its configuration from at this tree's root."""
    for name in PYTEST_CONFIGS:
        text = read(name)
        if text is None:
            continue
        if holds_pytest_config(name, text):
            return name, text
    return None


class Tree(Protocol):
    name: str

    def paths(self) -> list[str]: ...

    def read(self, path: str) -> str | None: ...

    def pack(self, out: BinaryIO, limit: int) -> None: ...


Entry = tuple[str, str]  # (mode, object id)


class GitTree:
    """A commit's tree from git's object store (never ``git archive``: ``.gitattributes`` could hide files)."""

    def __init__(self, git_bytes: GitBytes, sha: str, name: str = "head",
                 entries: dict[str, Entry] | None = None, mtime: int | None = None) -> None:
        self.git_bytes = git_bytes
        self.sha = sha
        self.name = name
        self._entries = entries
        self._mtime = mtime

    def entries(self) -> dict[str, Entry]:
        if self._entries is None:
            listing = self.git_bytes("ls-tree", "-r", "-z", "--full-tree", self.sha)
            entries: dict[str, Entry] = {}
            for record in filter(None, listing.split(b"\0")):
                meta, _, raw_path = record.partition(b"\t")
                mode, kind, oid = meta.decode("ascii").split(" ")
                if kind == "blob" and mode in ("100644", "100755", "120000"):
                    entries[raw_path.decode("utf-8", "surrogateescape")] = (mode, oid)
            self._entries = entries
        return self._entries

    @property
    def mtime(self) -> int:
        """The commit's time: zip-based builds refuse files dated before 1980, and the epoch is not a real date."""
        if self._mtime is None:
            try:
                self._mtime = int(self.git_bytes("show", "-s", "--format=%ct", self.sha).strip() or 0)
            except Exception:
                self._mtime = 0
            if self._mtime < 315532800:
                self._mtime = 315532800  # 1980-01-01
        return self._mtime

    def paths(self) -> list[str]:
        return sorted(self.entries())

    def read(self, path: str) -> str | None:
        entry = self.entries().get(path)
        if entry is None or entry[0] == "120000":
            return None
        data = self.git_bytes("cat-file", "blob", entry[1])
        if len(data) > MAX_READ:
            return None
        return data.decode("utf-8", "replace")

    def pack(self, out: BinaryIO, limit: int) -> None:
        pack_git_entries(self.git_bytes, sorted(self.entries().items()), out, limit, mtime=self.mtime)


class DirTree:
    """A directory on disk (tests and local use); symlinks are packed as links, never followed."""

    def __init__(self, root: Path, name: str = "head") -> None:
        self.root = Path(root)
        self.name = name

    def paths(self) -> list[str]:
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not (dirpath == str(self.root) and d == ".git"))
            rel = os.path.relpath(dirpath, self.root)
            found.extend(name if rel == "." else f"{rel}/{name}" for name in filenames)
        return sorted(found)

    def read(self, path: str) -> str | None:
        target = self.root / path
        if target.is_symlink() or not target.is_file() or target.stat().st_size > MAX_READ:
            return None
        return target.read_text(encoding="utf-8", errors="replace")

    def pack(self, out: BinaryIO, limit: int) -> None:
        pack_directory(self.root, out, limit)


def _the_bases_in_a_guard(path: str) -> bool:
    """A test file, or a JavaScript runner's configuration or setup file (``jest.config.js``, ``.mocharc.json``,
    ``vitest.setup.ts``): the guard run takes the base's, as it takes the base's pytest configuration."""
    return is_test_path(path) or javascript.is_harness_path(path)


def guard_tree(head: GitTree, base: GitTree) -> GitTree:
    """The head's tree with every test path and JavaScript runner configuration replaced by the base's version (or
    removed when the base had none)."""
    entries = {p: e for p, e in head.entries().items() if not _the_bases_in_a_guard(p)}
    entries.update({p: e for p, e in base.entries().items() if _the_bases_in_a_guard(p)})
    return GitTree(head.git_bytes, head.sha, name="guard", entries=entries, mtime=head.mtime)


def tar_of(tree: Tree, limit: int) -> bytes:
    buf = io.BytesIO()
    tree.pack(buf, limit)
    return buf.getvalue()


class TarTree:
    """A tree given as a ready sandbox tar (``repo/...`` entries); read-only views for detection."""

    def __init__(self, data: bytes, name: str = "head") -> None:
        self.data = data
        self.name = name

    def _members(self) -> dict[str, tarfile.TarInfo]:
        with tarfile.open(fileobj=io.BytesIO(self.data), mode="r:") as tar:
            return {m.name[len("repo/"):]: m for m in tar.getmembers() if m.name.startswith("repo/") and m.isreg()}

    def paths(self) -> list[str]:
        return sorted(self._members()) if self.data else []

    def read(self, path: str) -> str | None:
        if not self.data:
            return None
        with tarfile.open(fileobj=io.BytesIO(self.data), mode="r:") as tar:
            try:
                handle = tar.extractfile("repo/" + path)
            except KeyError:
                return None
            return handle.read(MAX_READ).decode("utf-8", "replace") if handle is not None else None

    def pack(self, out: BinaryIO, limit: int) -> None:
        out.write(self.data)
