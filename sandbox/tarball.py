"""Build the tar that carries a repository tree into the sandbox.

The tree never touches the host's file system as a checkout: ``git archive`` output is re-packed entry by
entry (regular files, directories and symlinks only; no devices, no hard links, no set-uid bits, no absolute
or ``..`` names), every entry owned by the sandbox user. Symlinks stay symlinks: they are resolved, if ever,
inside the container, where a link to ``/etc/passwd`` finds the container's file, not the host's.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from sandbox.errors import RepositoryTooLarge, SandboxError
from sandbox.limits import SANDBOX_UID

REPO_DIR = "repo"
OUT_DIR = "out"


def _safe_name(name: str) -> str | None:
    path = PurePosixPath(name)
    if path.is_absolute() or any(part in ("..", "") for part in path.parts) or not path.parts:
        return None
    if path.parts == (".",):
        return None
    return "/".join(p for p in path.parts if p != ".") or None


def _escapes(name: str, link: str) -> bool:
    """Whether a relative symlink at ``name`` resolves outside the repository directory."""
    if link.startswith("/"):
        return False  # absolute links resolve inside the container's own file system
    depth = len(PurePosixPath(name).parts) - 1
    for part in PurePosixPath(link).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return True
    return False


def _dir_entry(name: str, mode: int = 0o755) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    info.uid = info.gid = SANDBOX_UID
    return info


class _Packer:
    def __init__(self, out: BinaryIO, limit: int, mtime: int = 0) -> None:
        self.tar = tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT)  # noqa: SIM115 - closed by close()
        self.limit = limit
        self.size = 0
        self.mtime = mtime
        self.tar.addfile(_dir_entry(REPO_DIR))
        self.tar.addfile(_dir_entry(OUT_DIR))

    def add(self, name: str, kind: str, mode: int = 0o644, data: IO[bytes] | None = None, size: int = 0,
            link: str = "") -> None:
        safe = _safe_name(name)
        if safe is None:
            return
        info = tarfile.TarInfo(f"{REPO_DIR}/{safe}")
        info.uid = info.gid = SANDBOX_UID
        info.mtime = self.mtime
        if kind == "dir":
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            self.tar.addfile(info)
        elif kind == "symlink":
            if _escapes(safe, link):
                # Docker refuses the whole archive over one such link, which would let a PR opt out of
                # having its tests run; a link out of the repository has nothing to point at anyway.
                return
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, link, 0o777
            self.tar.addfile(info)
        else:
            self.size += size
            if self.size > self.limit:
                raise RepositoryTooLarge(self.size, self.limit)
            info.type, info.size = tarfile.REGTYPE, size
            info.mode = 0o755 if mode & 0o111 else 0o644
            self.tar.addfile(info, data)

    def close(self) -> None:
        self.tar.close()


def repack_archive(source: BinaryIO, out: BinaryIO, limit: int) -> None:
    """Re-pack a tar (``git archive`` output) into the sandbox layout, keeping only safe entry kinds."""
    packer = _Packer(out, limit)
    try:
        with tarfile.open(fileobj=source, mode="r|*") as src:
            for member in src:
                if member.isdir():
                    packer.add(member.name, "dir")
                elif member.issym():
                    packer.add(member.name, "symlink", link=member.linkname)
                elif member.isreg():
                    packer.add(member.name, "file", member.mode, src.extractfile(member), member.size)
    except tarfile.TarError as exc:
        raise SandboxError(f"the repository archive is unreadable: {exc}") from exc
    packer.close()


GitBytes = Callable[..., bytes]


def pack_git_tree(git_bytes: GitBytes, sha: str, out: BinaryIO, limit: int, mtime: int = 0) -> None:
    """Pack the tree of commit ``sha`` straight from git's object store.

    Not ``git archive``: that obeys the tree's own ``.gitattributes`` (``export-ignore``, ``export-subst``), so
    a PR could hide its failing tests from the sandbox. Submodules (gitlinks) are left out.
    """
    listing = git_bytes("ls-tree", "-r", "-z", "--full-tree", sha)
    found: list[tuple[str, tuple[str, str]]] = []
    for record in filter(None, listing.split(b"\0")):
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, oid = meta.decode("ascii").split(" ")
        if kind == "blob" and mode in ("100644", "100755", "120000"):
            found.append((raw_path.decode("utf-8", "surrogateescape"), (mode, oid)))
    pack_git_entries(git_bytes, found, out, limit, mtime)


def pack_git_entries(git_bytes: GitBytes, found: list[tuple[str, tuple[str, str]]], out: BinaryIO, limit: int,
                     mtime: int = 0) -> None:
    """Pack ``(path, (mode, blob id))`` entries read from git's object store, every entry dated ``mtime``."""
    entries = [(path, mode, oid) for path, (mode, oid) in found]
    packer = _Packer(out, limit, mtime)
    made: set[str] = set()
    batch = 500  # one cat-file process per batch keeps memory bounded by the batch, not the repository
    for start in range(0, len(entries), batch):
        chunk = entries[start:start + batch]
        data = git_bytes("cat-file", "--batch", input=("\n".join(oid for _, _, oid in chunk) + "\n").encode())
        pos = 0
        for path, mode, _oid in chunk:
            parents = PurePosixPath(path).parents
            for parent in reversed(list(parents)[:-1]):  # owned by the sandbox user, unlike implied ones
                if str(parent) not in made:
                    made.add(str(parent))
                    packer.add(str(parent), "dir")
            header_end = data.index(b"\n", pos)
            size = int(data[pos:header_end].split()[2])
            body = data[header_end + 1: header_end + 1 + size]
            pos = header_end + 1 + size + 1
            if mode == "120000":
                packer.add(path, "symlink", link=body.decode("utf-8", "surrogateescape"))
            else:
                packer.add(path, "file", 0o755 if mode == "100755" else 0o644, io.BytesIO(body), size)
    packer.close()


def pack_directory(root: Path, out: BinaryIO, limit: int) -> None:
    """Pack a directory tree without following any symlink in it (``.git`` is left out)."""
    packer = _Packer(out, limit)
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not (dirpath == str(root) and d == ".git"))
        rel_dir = os.path.relpath(dirpath, root)
        # a symlinked directory appears in dirnames but is never walked: lstat records it as a link
        for name in [*dirnames, *sorted(filenames)]:
            full = os.path.join(dirpath, name)
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                packer.add(rel, "symlink", link=os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                packer.add(rel, "dir")
            elif stat.S_ISREG(st.st_mode):
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as handle:
                    packer.add(rel, "file", st.st_mode, handle, st.st_size)
    packer.close()


def files_tar(files: dict[str, bytes], mtime: int, limit: int) -> bytes:
    """``files`` (tree path → bytes) as sandbox-layout tar entries under ``repo/``, with their directories, the
    sandbox user's as the tree's own are; :class:`RepositoryTooLarge` past ``limit`` bytes."""
    buf = io.BytesIO()
    packer = _Packer(buf, limit, mtime)
    made: set[str] = set()
    for path, data in sorted(files.items()):
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in made:
                made.add(parent)
                packer.add(parent, "dir")
        packer.add(path, "file", 0o644, io.BytesIO(data), len(data))
    packer.close()
    return buf.getvalue()


def owned_files_tar(directory: str, files: dict[str, bytes], removable_by: int = 0) -> bytes:
    """A directory of read-only files owned by root: the sandbox user can run them but not change them. With
    ``removable_by`` (a uid), the directory is that user's, who can then remove the files (never change them)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(directory)
        info.type, info.mode = tarfile.DIRTYPE, 0o755 if removable_by else 0o555
        info.uid = info.gid = removable_by
        tar.addfile(info)
        for name, data in sorted(files.items()):
            entry = tarfile.TarInfo(f"{directory}/{name}")
            entry.size, entry.mode, entry.uid, entry.gid = len(data), 0o444, 0, 0
            tar.addfile(entry, io.BytesIO(data))
    return buf.getvalue()


def single_file_tar(name: str, data: bytes, mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        info.uid = info.gid = SANDBOX_UID
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
