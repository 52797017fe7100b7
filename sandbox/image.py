"""Build the sandbox image offline: debootstrap a minimal Debian, add LogoMesh's own interpreter, ``docker import``.

No registry is needed, only a Debian mirror (the one apt already uses on this machine) and the package index the
host's pip uses (for the wheels of pytest and coverage). The debootstrap folder is cached (``/var/cache/logomesh``
by default) so a rebuild is a ``docker import`` of a few seconds. Production users may instead build
``sandbox/Dockerfile``, which lays out the same paths.

Layout the sandbox relies on (both images):

- ``/opt/logomesh/tools``: a venv of the image's CPython **without** the distribution's site-packages, holding
  pytest and coverage. Projects' environments are venvs made from the same interpreter; the tools are appended
  to their path, so a project's own pins win.
- the label ``org.logomesh.python`` lists the interpreter versions the image offers (``3.11``), and
  ``org.logomesh.image-version`` the layout's version: an image of an older layout is rebuilt, never used.
- the non-root user ``sandbox`` (uid 10001) owns ``/sandbox`` (each run's tmpfs volume) and ``/opt/logomesh/envs``
  (where the setup phase builds a project's environment).
- the system tools real test suites call: ``git``, ``less``, the locales ``C.UTF-8`` and ``en_US.UTF-8``, and the
  time zone database (``/usr/share/zoneinfo``, read by ``zoneinfo``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from docker.errors import ImageNotFound

from sandbox.docker_sandbox import docker_client
from sandbox.errors import SandboxError
from sandbox.limits import SANDBOX_UID
from sandbox.rootfs import Say, apt_mirror, chroot, debootstrap, import_rootfs

DEFAULT_TAG = "logomesh-sandbox:latest"
DEFAULT_CACHE = Path("/var/cache/logomesh")
DEFAULT_SUITE = "bookworm"
# the interpreter, and the system tools real suites call (git, less, locales, the time zone database)
PACKAGES = ("python3", "python3-venv", "python3-pip", "git", "less", "locales", "tzdata")
# generated into the image (C.UTF-8 is built into glibc); what /etc/locale.gen lists
LOCALES = ("en_US.UTF-8 UTF-8",)
IMAGE_LABEL = "org.logomesh.image"
# bump when the layout above changes: an image with another version is rebuilt, never run
IMAGE_VERSION = "3"
VERSION_LABEL = "org.logomesh.image-version"
PYTHON_LABEL = "org.logomesh.python"
PYTHON_VERSIONS = "3.11"
TOOLS = "/opt/logomesh/tools"
ENVS = "/opt/logomesh/envs"
# what the runner needs in the tools venv; wheels come from the host's package index, installed with --no-index
TOOL_REQUIREMENTS = ("pytest>=8,<9", "coverage>=7.4,<8")
# dropped from the image: package caches and documentation, nothing a test run reads
EXCLUDES = ("./var/cache/apt/archives", "./var/lib/apt/lists", "./usr/share/doc", "./usr/share/man",
            "./usr/share/locale", "./usr/share/info", "./usr/share/i18n")
CHANGES = (
    f"USER {SANDBOX_UID}:{SANDBOX_UID}",
    "WORKDIR /sandbox/repo",
    "ENV LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 HOME=/tmp",
    f"LABEL {IMAGE_LABEL}=sandbox",
    f"LABEL {VERSION_LABEL}={IMAGE_VERSION}",
    f"LABEL {PYTHON_LABEL}={PYTHON_VERSIONS}",
    'CMD ["python3"]',
)

def image_exists(tag: str) -> bool:
    """Whether ``tag`` exists with this layout's version (an image of an older layout does not count)."""
    client = docker_client()
    try:
        labels = client.images.get(tag).labels or {}
        return labels.get(VERSION_LABEL) == IMAGE_VERSION
    except ImageNotFound:
        return False
    finally:
        client.close()


def _debootstrap(rootfs: Path, suite: str, mirror: str, say: Say) -> None:
    partial = rootfs.with_name(rootfs.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    debootstrap(partial, suite=suite, mirror=mirror, include=PACKAGES, say=say)
    _add_user(partial)
    _add_locales(partial, say)
    _add_tools(partial, say)
    (partial / "opt/logomesh/image-version").write_text(IMAGE_VERSION + "\n", encoding="utf-8")
    partial.rename(rootfs)


def _add_tools(root: Path, say: Say) -> None:
    """The tools venv: pytest and coverage from wheels the host's pip fetches, installed with no network."""
    wheels = root / "tmp/logomesh-wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    say("fetching the wheels of " + ", ".join(TOOL_REQUIREMENTS))
    download = subprocess.run(
        ["python3", "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--dest", str(wheels),
         "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311", "--platform",
         "manylinux2014_" + os.uname().machine, "--platform", "manylinux_2_17_" + os.uname().machine,
         *TOOL_REQUIREMENTS],
        capture_output=True, text=True, check=False)
    if download.returncode != 0:
        raise SandboxError(f"could not fetch the sandbox tools' wheels:\n{download.stderr[-2000:]}")
    steps = (["python3", "-m", "venv", "--without-pip", TOOLS],
             ["python3", "-m", "pip", "--python", TOOLS + "/bin/python", "install", "--quiet", "--no-index",
              "--no-cache-dir", "--find-links", "/tmp/logomesh-wheels", *TOOL_REQUIREMENTS])  # noqa: S108
    for argv in steps:
        chroot(root, argv, f"building the tools venv ({' '.join(argv[:3])})",
               env={"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_BREAK_SYSTEM_PACKAGES": "1"})
    shutil.rmtree(wheels)
    envs = root / ENVS.lstrip("/")
    envs.mkdir(parents=True, exist_ok=True)
    os.chown(envs, SANDBOX_UID, SANDBOX_UID)


def _add_locales(root: Path, say: Say) -> None:
    """Generate the locales tests set (``en_US.UTF-8``) into ``/usr/lib/locale``; ``C.UTF-8`` comes with glibc."""
    say("generating the locales " + ", ".join(LOCALES))
    (root / "etc/locale.gen").write_text("".join(f"{name}\n" for name in LOCALES), encoding="utf-8")
    chroot(root, ["locale-gen"], "locale-gen")


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
    marker = rootfs / "opt/logomesh/image-version"
    if rootfs.exists() and not (marker.is_file() and marker.read_text(encoding="utf-8").strip() == IMAGE_VERSION):
        say(f"the cached root file system {rootfs} has an older layout; rebuilding it")
        shutil.rmtree(rootfs)
    if not (rootfs / "usr/bin/python3").exists():
        rootfs.parent.mkdir(parents=True, exist_ok=True)
        _debootstrap(rootfs, suite, mirror or apt_mirror(), say)
    else:
        say(f"reusing the cached root file system {rootfs}")
    import_rootfs(rootfs, tag, changes=CHANGES, excludes=EXCLUDES, say=say)
    say(f"built {tag}")
    return True
