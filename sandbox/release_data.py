"""Release data: the files a project generates and leaves out of git, taken from its own released wheel.

Some projects generate data at release time and never commit it: Babel's CLDR tables (``babel/locale-data/*.dat``,
``babel/global.dat``) come from unicode.org through a script, and the sandbox reaches only the package index. Its
tests then fail by the hundred at base and head alike, and nothing is measured. The project's release on the index
carries those files. For a change with a base commit, every run's tree (base, head, guard) gets them when:

- the base names the project (``[project].name``, ``setup.cfg``'s ``[metadata] name`` or a literal
  ``setup(name=...)``) and its ignore rules name files inside one of its packages that are not code (:func:`wanted`;
  nothing is fetched for a project whose ignored files are build output, caches or ``_version.py``);
- the wheel is the newest of that name uploaded before the base commit, its bytes checked against the index's hash;
- a file lies inside a package directory of the base, is not code (modules, extension modules, ``.pth`` files),
  is absent from the base and ignored by the base's own rules (git's ``check-ignore``, nested ``.gitignore`` files
  included): the base decides, so a file a change deletes or stops ignoring is never put back;
- the run's tree has no file of that path, nor a file or link where one of its directories would be: a tree's own
  file always wins;
- and the change does not edit what generates them: a changed file outside the packages and the tests whose text
  names a filled directory or file (``locale-data``, ``global.dat``) makes the release's copy unfit for the head,
  and nothing is filled.

What was filled, or why nothing was, is named on the environment line (:attr:`Fill.note`). The wheel is read as a
zip archive and never installed or run.
"""

from __future__ import annotations

import configparser
import datetime
import hashlib
import io
import logging
import subprocess
import tempfile
import tomllib
import zipfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import httpx
from packaging.utils import canonicalize_name, parse_wheel_filename

from checks.testpaths import is_test_path
from sandbox.setup_py import read_setup_py

log = logging.getLogger(__name__)

CODE_SUFFIXES = (".py", ".pyi", ".pyc", ".pyo", ".pyd", ".so", ".dylib", ".dll", ".pth", ".pyx", ".pxd", ".pxi",
                 ".c", ".h", ".cc", ".cpp", ".rs", ".egg-info")
NOT_DATA = ("__pycache__", ".pytest_cache", ".mypy_cache", "*.egg-info", ".coverage")  # ignored, but never data
MAX_WHEEL_BYTES = 64 * 1024 * 1024
MAX_FILL_BYTES = 256 * 1024 * 1024
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
TIMEOUT_SECONDS = 60.0

Reader = Callable[[str], str | None]


@dataclass(frozen=True)
class Wanted:
    """What a base asks the release for: its project name and package directories (tree paths)."""

    project: str
    packages: tuple[str, ...]


@dataclass(frozen=True)
class Fill:
    files: dict[str, bytes] = field(default_factory=dict)  # tree path → bytes, for every run
    note: str | None = None  # the environment line's words; None: release data did not concern this change
    wheel: str | None = None  # the file name of the wheel they came from

    def for_tree(self, paths: Collection[str]) -> dict[str, bytes]:
        """The files a run's tree does not have itself (nor a file or link where one of their directories is)."""
        present = set(paths)
        return {path: data for path, data in self.files.items()
                if path not in present and not any(parent in present for parent in _parents(path))}


class ReleaseIndex:
    """A PEP 691 simple index read by the worker itself (the sandbox's setup phase reaches the same index)."""

    def __init__(self, url: str, ca_bundle: Path | None = None) -> None:
        self.url = url.rstrip("/")
        self.ca_bundle = ca_bundle

    def wheel(self, project: str, before: str) -> tuple[str, bytes]:
        """``(file name, bytes)`` of the newest wheel of ``project`` uploaded before ``before``; :class:`LookupError`
        with the reason when there is none or it cannot be had."""
        verify: str | bool = str(self.ca_bundle) if self.ca_bundle is not None else True
        with httpx.Client(timeout=TIMEOUT_SECONDS, verify=verify, follow_redirects=True) as client:
            try:
                page = client.get(f"{self.url}/{canonicalize_name(project)}/", headers={"Accept": SIMPLE_JSON})
            except httpx.HTTPError as exc:
                raise LookupError(f"the index did not answer ({type(exc).__name__})") from exc
            if page.status_code == 404:
                raise LookupError(f"the index has no project {project}")
            if page.status_code != 200 or SIMPLE_JSON not in page.headers.get("content-type", ""):
                raise LookupError(f"the index answered {page.status_code} without a JSON project page")
            try:
                files = page.json().get("files") or []
            except (ValueError, AttributeError) as exc:
                raise LookupError("the index's project page is not JSON") from exc
            filename, link, sha256 = newest_wheel(files, before)
            try:
                response = client.get(page.url.join(link))
            except httpx.HTTPError as exc:
                raise LookupError(f"{filename} could not be downloaded ({type(exc).__name__})") from exc
        data = response.content
        if response.status_code != 200:
            raise LookupError(f"{filename} could not be downloaded ({response.status_code})")
        if len(data) > MAX_WHEEL_BYTES:
            raise LookupError(f"{filename} is larger than {MAX_WHEEL_BYTES // 2**20} MB")
        if hashlib.sha256(data).hexdigest() != sha256:
            raise LookupError(f"{filename} does not match the index's sha256")
        return filename, data


def newest_wheel(files: Sequence[object], before: str) -> tuple[str, str, str]:
    """``(file name, link, sha256)`` of the newest wheel (by upload time) uploaded before ``before``, not yanked;
    a pure-Python wheel first among those of one upload."""
    limit = _when(before)
    dated: list[tuple[datetime.datetime, bool, str, str, str]] = []
    undated = 0
    for entry in files:
        if not isinstance(entry, dict):
            continue
        name, link, hashes = entry.get("filename"), entry.get("url"), entry.get("hashes")
        if not isinstance(name, str) or not name.endswith(".whl") or not isinstance(link, str) \
                or entry.get("yanked") or not isinstance(hashes, dict) or not isinstance(hashes.get("sha256"), str):
            continue
        if not entry.get("upload-time"):
            undated += 1
            continue
        try:
            uploaded = _when(str(entry["upload-time"]))
        except ValueError:
            continue
        if uploaded < limit:
            dated.append((uploaded, _pure(name), name, link, hashes["sha256"]))
    if not dated:
        raise LookupError("the index gives no upload times" if undated else f"no wheel uploaded before {before}")
    _, _, name, link, sha256 = max(dated)
    return name, link, sha256


def _pure(filename: str) -> bool:
    try:
        tags = parse_wheel_filename(filename)[3]
    except ValueError:
        return False
    return any(tag.abi == "none" and tag.platform == "any" for tag in tags)


def _when(text: str) -> datetime.datetime:
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def project_name(read: Reader) -> str | None:
    """The name the base gives its project: ``pyproject.toml``, ``setup.cfg``, a literal ``setup(name=...)``."""
    text = read("pyproject.toml")
    if text:
        try:
            table = tomllib.loads(text).get("project")
        except tomllib.TOMLDecodeError:
            table = None
        declared = table.get("name") if isinstance(table, dict) else None
        if isinstance(declared, str) and declared.strip():
            return declared.strip()
    text = read("setup.cfg")
    if text:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
            name = parser.get("metadata", "name", fallback=None)
        except configparser.Error:
            name = None
        if name and name.strip():
            return name.strip()
    return read_setup_py(read("setup.py")).name


def packages(paths: Collection[str]) -> tuple[str, ...]:
    """The base's top-level package directories, at its root or under ``src/``."""
    found = set()
    for path in paths:
        parts = path.split("/")
        if parts[-1] == "__init__.py" and (len(parts) == 2 or (len(parts) == 3 and parts[0] == "src")):
            found.add("/".join(parts[:-1]))
    return tuple(sorted(found))


def _ignore_files(paths: Collection[str]) -> list[str]:
    return [p for p in paths if p == ".gitignore" or p.endswith("/.gitignore")]


def wanted(read: Reader, paths: Collection[str]) -> Wanted | None:
    """What a base asks its release for, or None: it has no name, no package, or ignores no data inside one."""
    name = project_name(read)
    roots = packages(paths)
    if not name or not roots:
        return None
    for ignore in _ignore_files(paths):
        where = ignore[: -len(".gitignore")].rstrip("/")
        for pattern in _patterns(read(ignore) or ""):
            anchored = f"{where}/{pattern}" if where else pattern
            inside = any(anchored.startswith(root + "/") for root in roots) or any(
                where == root or where.startswith(root + "/") for root in roots)
            if inside and not pattern.rstrip("/").endswith(CODE_SUFFIXES) \
                    and pattern.rstrip("/").rsplit("/", 1)[-1] not in NOT_DATA:
                return Wanted(name, roots)
    return None


def _patterns(text: str) -> list[str]:
    return [line.strip().lstrip("/") for line in text.splitlines()
            if line.strip() and not line.startswith(("#", "!"))]


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def candidates(wheel: bytes, want: Wanted, base_paths: Collection[str]) -> dict[str, bytes]:
    """The wheel's files that would land inside a package of the base: not code, absent at base (tree path →
    bytes); the ignore rules are asked next (:func:`ignored`)."""
    by_top = {PurePosixPath(root).name: root for root in want.packages}
    present = set(base_paths)
    chosen: dict[str, bytes] = {}
    total = 0
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        for info in archive.infolist():
            name = info.filename
            parts = name.split("/")
            if info.is_dir() or parts[0] not in by_top or len(parts) < 2 or any(
                    part in ("", ".", "..") for part in parts) or "\\" in name or name.endswith(CODE_SUFFIXES):
                continue
            path = "/".join([by_top[parts[0]], *parts[1:]])
            if path in present or any(parent in present for parent in _parents(path)):
                continue
            total += info.file_size
            if total > MAX_FILL_BYTES:
                raise LookupError(f"its data is larger than {MAX_FILL_BYTES // 2**20} MB")
            chosen[path] = archive.read(info)
    return chosen


def ignored(read: Reader, paths: Collection[str], wanted_paths: Collection[str]) -> set[str]:
    """The paths the tree's own ignore rules (every ``.gitignore`` of it) ignore, as git decides."""
    if not wanted_paths:
        return set()
    with tempfile.TemporaryDirectory(prefix="logomesh-ignore-") as scratch:
        root = Path(scratch)
        subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
        for ignore in _ignore_files(paths):
            target = root / ignore
            if ".." in PurePosixPath(ignore).parts:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(read(ignore) or "", encoding="utf-8")
        listed = "\0".join(sorted(wanted_paths)) + "\0"
        result = subprocess.run(
            ["git", "-c", "core.excludesFile=/dev/null", "-C", str(root), "check-ignore", "--no-index", "-z",
             "--stdin"], input=listed.encode("utf-8", "surrogateescape"), capture_output=True, check=False)
        if result.returncode not in (0, 1):
            raise LookupError("git could not read the ignore rules: "
                              + result.stderr.decode("utf-8", "replace").strip()[:200])
    return {p.decode("utf-8", "surrogateescape") for p in result.stdout.split(b"\0") if p}


def markers(paths: Collection[str], want: Wanted) -> dict[str, str]:
    """The names a generator of these files would write (their directory below the package, or their own name),
    each with the package it lies in."""
    found: dict[str, str] = {}
    for path in sorted(paths):
        root = next(r for r in want.packages if path.startswith(r + "/"))
        rest = path[len(root) + 1:].split("/")
        found.setdefault(rest[0], root)
    return found


def generator_edited(changed: dict[str, tuple[str | None, str | None]], names: Collection[str],
                     want: Wanted) -> str | None:
    """A changed file (path → its base and head text) outside the packages and the tests that names one of the
    filled files' names: the change edits what generates them."""
    for path, texts in sorted(changed.items()):
        if is_test_path(path) or any(path.startswith(root + "/") for root in want.packages):
            continue
        for text in texts:
            if text and any(name in text for name in names):
                return path
    return None


def fill(want: Wanted, read_base: Reader, base_paths: Collection[str], before: str, index: ReleaseIndex,
         changed: Callable[[], dict[str, tuple[str | None, str | None]]]) -> Fill:
    """The release data every run of this change gets (:class:`Fill`; nothing, named, when it gets none), from the
    newest release uploaded before ``before`` (ISO 8601: the base commit's time); ``changed`` gives the changed
    files' base and head texts, read only when there is something to fill."""
    try:
        filename, wheel = index.wheel(want.project, before)
        found = candidates(wheel, want, base_paths)
        kept = ignored(read_base, base_paths, found)
    except (LookupError, zipfile.BadZipFile, OSError, subprocess.SubprocessError, ValueError) as exc:
        log.info("release data of %s: %s", want.project, exc)
        return Fill(note=f"release data of {want.project} not used: {exc}")
    files = {path: data for path, data in found.items() if path in kept}
    if not files:
        return Fill()
    names = markers(files, want)
    edited = generator_edited(changed(), names, want)
    if edited is not None:
        return Fill(note=f"release data of {want.project} not used: the change edits {edited}, which names "
                         f"{', '.join(sorted(names))}, left out of git (the release's copy is not the head's)")
    shown = ", ".join(f"{root}/{name}" for name, root in sorted(names.items()))
    return Fill(files=files, wheel=filename,
                note=f"release data: {len(files)} files the base leaves out of git ({shown}) from {filename}")

