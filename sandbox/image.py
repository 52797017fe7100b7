"""Build the sandbox image offline: debootstrap a minimal Debian, add python3 and pytest, ``docker import`` it.

No registry is needed, only a Debian mirror (the one apt already uses on this machine). The debootstrap folder
is cached (``/var/cache/logomesh`` by default) so a rebuild is a ``docker import`` of a few seconds.
Production users may instead build ``sandbox/Dockerfile`` (python-slim with pytest).

The image runs as the non-root user ``sandbox`` (uid 10001), has ``/sandbox`` (where each run's tmpfs volume is
mounted) and ``/home/sandbox`` (where an opt-in setup phase installs with ``pip --user``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from docker.errors import DockerException, ImageNotFound

from sandbox.docker_sandbox import docker_client
from sandbox.errors import SandboxError
from sandbox.limits import SANDBOX_UID

DEFAULT_TAG = "logomesh-sandbox:latest"
DEFAULT_CACHE = Path("/var/cache/logomesh")
DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "python3-pytest", "python3-pip")
IMAGE_LABEL = "org.logomesh.image"
# dropped from the image: package caches and documentation, nothing a test run reads
EXCLUDES = ("./var/cache/apt/archives", "./var/lib/apt/lists", "./usr/share/doc", "./usr/share/man",
            "./usr/share/locale", "./usr/share/info")
CHANGES = (
    f"USER {SANDBOX_UID}:{SANDBOX_UID}",
    "WORKDIR /sandbox/repo",
    "ENV LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 HOME=/tmp",
    f"LABEL {IMAGE_LABEL}=sandbox",
    'CMD ["python3"]',
)

Say = Callable[[str], None]


def apt_mirror(sources: tuple[Path, ...] = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))) -> str:
    """The Debian mirror apt uses here (deb822 ``URIs:`` or one-line ``deb URL``), else deb.debian.org."""
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            files.extend(sorted(p for p in source.iterdir() if p.suffix in (".list", ".sources")))
        elif source.is_file():
            files.append(source)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in re.finditer(r"^(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.M):
            uri = match.group(1).rstrip("/")
            if uri.startswith(("http://", "https://")) and uri.endswith("/debian"):
                return uri
    return DEFAULT_MIRROR


def image_exists(tag: str) -> bool:
    client = docker_client()
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False
    finally:
        client.close()


def _debootstrap(rootfs: Path, suite: str, mirror: str, say: Say) -> None:
    if shutil.which("debootstrap") is None:
        raise SandboxError("debootstrap is not installed (apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise SandboxError("debootstrap needs root: run `logomesh sandbox build-image` as root")
    partial = rootfs.with_name(rootfs.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    say(f"debootstrap {suite} from {mirror} (one-off, about a minute)")
    proc = subprocess.run(
        ["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES), suite, str(partial), mirror],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise SandboxError(f"debootstrap failed (exit {proc.returncode}):\n{tail}")
    _add_user(partial)
    partial.rename(rootfs)


def _add_user(root: Path) -> None:
    with open(root / "etc/passwd", "a", encoding="utf-8") as passwd:
        passwd.write(f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:LogoMesh sandbox:/home/sandbox:/usr/sbin/nologin\n")
    with open(root / "etc/group", "a", encoding="utf-8") as group:
        group.write(f"sandbox:x:{SANDBOX_UID}:\n")
    for directory in ("home/sandbox", "sandbox"):
        target = root / directory
        target.mkdir(parents=True, exist_ok=True)
        os.chown(target, SANDBOX_UID, SANDBOX_UID)


def build_image(tag: str = DEFAULT_TAG, *, cache_dir: Path = DEFAULT_CACHE, suite: str = DEFAULT_SUITE,
                mirror: str | None = None, force: bool = False, say: Say | None = None) -> bool:
    """Build and tag the image; False when ``tag`` already exists and ``force`` is not set."""
    say = say or (lambda _msg: None)
    if not force and image_exists(tag):
        say(f"{tag} already exists")
        return False
    rootfs = Path(cache_dir) / f"rootfs-{suite}"
    if not (rootfs / "usr/bin/python3").exists():
        rootfs.parent.mkdir(parents=True, exist_ok=True)
        _debootstrap(rootfs, suite, mirror or apt_mirror(), say)
    else:
        say(f"reusing the cached root file system {rootfs}")
    archive = rootfs.with_name(rootfs.name + ".tar")
    say(f"packing {rootfs}")
    excludes = [f"--exclude={e}" for e in EXCLUDES]
    subprocess.run(["tar", "-C", str(rootfs), *excludes, "-cf", str(archive), "."], check=True)
    client = docker_client(timeout=900)
    try:
        repository, _, version = tag.partition(":")
        say(f"importing as {tag}")
        client.api.import_image(src=str(archive), repository=repository, tag=version or "latest",
                                changes=list(CHANGES))
        client.images.get(tag)
    except DockerException as exc:
        raise SandboxError(f"docker import failed: {exc}") from exc
    finally:
        client.close()
        archive.unlink(missing_ok=True)
    say(f"built {tag}")
    return True
