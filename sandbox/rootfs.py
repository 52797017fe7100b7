"""Debian root file systems made into Docker images with no registry: ``debootstrap``, ``apt-get``, ``docker import``.

The sandbox image (:mod:`sandbox.image`) and the offline base images of the deployment (:mod:`app.deploy_images`)
are built the same way: a minimal Debian from the mirror apt already uses, packages installed by apt inside it (no
service started: a ``policy-rc.d`` denies every start while apt runs), the tree packed and imported as one layer.
Only a Debian mirror is needed, never a container registry. Building needs root (debootstrap, chroot).

Errors: :class:`~sandbox.errors.SandboxError` naming the step and the tail of its output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from docker.errors import DockerException

from sandbox.docker_sandbox import docker_client
from sandbox.errors import SandboxError

DEFAULT_MIRROR = "http://deb.debian.org/debian"
CHROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
# apt asks policy-rc.d before a package's maintainer script starts its service: 101 means "not now"
POLICY_RC = "#!/bin/sh\nexit 101\n"

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


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def debootstrap(root: Path, *, suite: str, mirror: str, include: Sequence[str], say: Say) -> None:
    """A minimal Debian ``suite`` at ``root`` (which must not exist yet), with ``include`` installed by debootstrap."""
    if shutil.which("debootstrap") is None:
        raise SandboxError("debootstrap is not installed (apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise SandboxError("debootstrap needs root: build the image as root")
    say(f"debootstrap {suite} from {mirror} (one-off, about a minute)")
    argv = ["debootstrap", "--variant=minbase"]
    if include:
        argv.append("--include=" + ",".join(include))
    proc = subprocess.run([*argv, suite, str(root), mirror], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SandboxError(f"debootstrap failed (exit {proc.returncode}):\n{_tail(proc.stdout + proc.stderr)}")


def chroot(root: Path, argv: Sequence[str], what: str, env: dict[str, str] | None = None) -> str:
    """Run ``argv`` inside ``root``; its output, or SandboxError naming ``what``."""
    proc = subprocess.run(["chroot", str(root), *argv], capture_output=True, text=True, check=False,
                          env={**CHROOT_ENV, **(env or {})})
    if proc.returncode != 0:
        raise SandboxError(f"{what} failed (exit {proc.returncode}):\n{_tail(proc.stdout + proc.stderr, 25)}")
    return proc.stdout


def apt_install(root: Path, packages: Sequence[str], say: Say) -> None:
    """``apt-get install`` ``packages`` (no recommends) inside ``root``, starting no service, then drop apt's lists."""
    say("apt-get install " + " ".join(packages))
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text(POLICY_RC, encoding="utf-8")
    policy.chmod(0o755)
    try:
        chroot(root, ["apt-get", "update", "-qq"], "apt-get update")
        chroot(root, ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
               "apt-get install " + " ".join(packages))
        chroot(root, ["apt-get", "clean"], "apt-get clean")
    finally:
        policy.unlink(missing_ok=True)


def import_rootfs(root: Path, tag: str, *, changes: Sequence[str], excludes: Sequence[str], say: Say) -> str:
    """Pack ``root`` (without ``excludes``) and ``docker import`` it as ``tag`` with ``changes``; the image id."""
    archive = root.with_name(root.name + ".tar")
    say(f"packing {root}")
    subprocess.run(["tar", "-C", str(root), *(f"--exclude={e}" for e in excludes), "-cf", str(archive), "."],
                   check=True)
    client = docker_client(timeout=900)
    try:
        repository, _, version = tag.partition(":")
        say(f"importing as {tag}")
        client.api.import_image(src=str(archive), repository=repository, tag=version or "latest",
                                changes=list(changes))
        return str(client.images.get(tag).id)
    except DockerException as exc:
        raise SandboxError(f"docker import failed: {exc}") from exc
    finally:
        client.close()
        archive.unlink(missing_ok=True)
