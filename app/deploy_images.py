"""The deployment's base images, built where no container registry can be reached.

``deploy/compose.yaml`` names registry images (``python:3.11.14-slim-bookworm`` under ``deploy/Dockerfile``,
``redis``, ``postgres``, ``docker:dind``): what production users pull. A machine that reaches a Debian mirror but
no registry builds stand-ins from Debian packages instead (:mod:`sandbox.rootfs`: debootstrap, apt, docker
import) and brings compose up with ``deploy/compose.offline.yaml``, which names them:

=================  ==========================================  =====================================================
image              stands in for                               holds
=================  ==========================================  =====================================================
python             ``python:3.11.14-slim-bookworm``            Debian's python3 (3.11), venv, pip, git, CA certs
engine             ``docker:27.5.1-dind``                      Debian's docker.io, iptables, openssl; an entry point
                                                               making the TLS certificates and serving 2376
redis              ``redis:7.4.2-alpine``                      Debian's redis-server; runs as ``redis``
postgres           ``postgres:16.6-bookworm``                  Debian's PostgreSQL 15; initialises ``$PGDATA`` from
                                                               ``POSTGRES_USER``/``_DB``/``_PASSWORD_FILE``
=================  ==========================================  =====================================================

Each image carries the label ``org.logomesh.recipe``, a hash of its suite, packages, entry point and image
settings: an image whose recipe is current is kept (nothing is rebuilt), another is rebuilt. The debootstrap
trees are cached under ``cache_dir`` keyed by suite and packages, so rebuilding after a changed entry point is an
import of seconds. Errors: :class:`~sandbox.errors.SandboxError`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from docker.errors import ImageNotFound

from sandbox.docker_sandbox import docker_client
from sandbox.errors import SandboxError
from sandbox.rootfs import Say, apt_install, apt_mirror, chroot, debootstrap, import_rootfs

OFFLINE = Path(__file__).resolve().parents[1] / "deploy" / "offline"
DEFAULT_CACHE = Path("/var/cache/logomesh")
SUITE = "bookworm"
RECIPE_LABEL = "org.logomesh.recipe"
ENTRYPOINT = "/usr/local/bin/docker-entrypoint.sh"
EXCLUDES = ("./var/cache/apt/archives", "./var/lib/apt/lists", "./usr/share/doc", "./usr/share/man",
            "./usr/share/info")
ENTRY = f'ENTRYPOINT ["{ENTRYPOINT}"]'
HOST_CAS = Path("/usr/local/share/ca-certificates")
PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class BaseImage:
    """One offline image: its tag, its Debian packages, its entry point script (under ``deploy/offline/``)."""

    name: str
    tag: str
    packages: tuple[str, ...]
    changes: tuple[str, ...]
    entrypoint: str | None = None
    # directories made in the image (mount points the services write to)
    directories: tuple[str, ...] = ()
    # trusts the certificate authorities this host added: the package index it reaches may sit behind one
    host_cas: bool = False

    def entrypoint_text(self) -> str:
        return (OFFLINE / self.entrypoint).read_text(encoding="utf-8") if self.entrypoint else ""

    def recipe(self, suite: str) -> str:
        """What the image is made of, hashed: a different hash means a rebuild."""
        parts = {"suite": suite, "packages": self.packages, "changes": self.changes,
                 "entrypoint": self.entrypoint_text(), "directories": self.directories, "excludes": EXCLUDES,
                 "cas": {path.name: path.read_text(encoding="utf-8") for path in self.cas()}}
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]

    def cas(self) -> list[Path]:
        """The certificate authorities of this host the image trusts (none unless ``host_cas``)."""
        return sorted(HOST_CAS.glob("*.crt")) if self.host_cas and HOST_CAS.is_dir() else []

    def tree_key(self, suite: str) -> str:
        """The cached debootstrap tree's name: suite and packages only (an entry point is written at import)."""
        digest = hashlib.sha256(json.dumps([suite, self.packages]).encode()).hexdigest()[:12]
        return f"rootfs-{self.name}-{suite}-{digest}"


IMAGES: dict[str, BaseImage] = {image.name: image for image in (
    BaseImage("python", "logomesh-offline/python:3.11-bookworm",
              ("python3", "python3-venv", "python3-pip", "git", "ca-certificates"),
              (f"ENV LANG=C.UTF-8 {PATH} PIP_CERT=/etc/ssl/certs/ca-certificates.crt", 'CMD ["python3"]'),
              host_cas=True),
    BaseImage("engine", "logomesh-offline/engine:bookworm",
              ("docker.io", "iptables", "openssl", "ca-certificates", "procps", "util-linux", "xz-utils"),
              (f"ENV LANG=C.UTF-8 {PATH} DOCKER_TLS_CERTDIR=/certs", ENTRY, "CMD []",
               "VOLUME /var/lib/docker", "EXPOSE 2376"),
              entrypoint="engine-entrypoint.sh", directories=("certs",)),
    BaseImage("redis", "logomesh-offline/redis:bookworm", ("redis-server",),
              (f"ENV LANG=C.UTF-8 {PATH}", ENTRY, 'CMD ["redis-server"]', "WORKDIR /data",
               "VOLUME /data", "EXPOSE 6379"),
              entrypoint="redis-entrypoint.sh", directories=("data",)),
    BaseImage("postgres", "logomesh-offline/postgres:15-bookworm", ("postgresql-15", "postgresql-client-15"),
              (f"ENV LANG=C.UTF-8 PATH=/usr/lib/postgresql/15/bin:{PATH[5:]} PGDATA=/var/lib/postgresql/data",
               ENTRY, 'CMD ["postgres"]', "VOLUME /var/lib/postgresql/data", "EXPOSE 5432",
               ),
              entrypoint="postgres-entrypoint.sh", directories=("var/lib/postgresql/data",)),
)}


def current(image: BaseImage, suite: str = SUITE) -> bool:
    """Whether the image is in the engine's store with the current recipe."""
    client = docker_client()
    try:
        labels = client.images.get(image.tag).labels or {}
        return labels.get(RECIPE_LABEL) == image.recipe(suite)
    except ImageNotFound:
        return False
    finally:
        client.close()


def _tree(image: BaseImage, cache_dir: Path, suite: str, mirror: str, say: Say) -> Path:
    root = cache_dir / image.tree_key(suite)
    if (root / "etc/debian_version").is_file():
        say(f"reusing the cached root file system {root}")
        return root
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    debootstrap(partial, suite=suite, mirror=mirror, include=(), say=say)
    apt_install(partial, image.packages, say)
    partial.rename(root)
    return root


def build_base_image(image: BaseImage, *, cache_dir: Path = DEFAULT_CACHE, suite: str = SUITE,
                     mirror: str | None = None, force: bool = False, say: Say | None = None) -> bool:
    """Build ``image`` unless it is current (or ``force``); True when it was built."""
    say = say or (lambda _message: None)
    if not force and current(image, suite):
        say(f"{image.tag} is current")
        return False
    root = _tree(image, Path(cache_dir), suite, mirror or apt_mirror(), say)
    # the entry point and mount points are written into the cached tree on every import: never stale
    if image.entrypoint:
        target = root / ENTRYPOINT.lstrip("/")
        target.write_text(image.entrypoint_text(), encoding="utf-8")
        target.chmod(0o755)
    for directory in image.directories:
        (root / directory).mkdir(parents=True, exist_ok=True)
    if image.cas():
        target = root / HOST_CAS.relative_to("/")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for ca in image.cas():
            shutil.copy(ca, target / ca.name)
        chroot(root, ["update-ca-certificates", "--fresh"], "update-ca-certificates")
    changes = (*image.changes, f"LABEL {RECIPE_LABEL}={image.recipe(suite)}", "LABEL org.logomesh.image=offline-base")
    import_rootfs(root, image.tag, changes=changes, excludes=EXCLUDES, say=say)
    say(f"built {image.tag}")
    return True


def build_base_images(names: Sequence[str] = tuple(IMAGES), *, cache_dir: Path = DEFAULT_CACHE, suite: str = SUITE,
                      mirror: str | None = None, force: bool = False, say: Say | None = None) -> list[str]:
    """Build the named images (all by default) that are not current; the tags built."""
    unknown = sorted(set(names) - set(IMAGES))
    if unknown:
        raise SandboxError(f"unknown offline image(s) {', '.join(unknown)}; known: {', '.join(IMAGES)}")
    return [IMAGES[name].tag for name in names
            if build_base_image(IMAGES[name], cache_dir=cache_dir, suite=suite, mirror=mirror, force=force, say=say)]
