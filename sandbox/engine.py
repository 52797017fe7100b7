"""The worker's Docker engine and sandbox image, wherever the worker runs.

A worker beside a Docker-in-Docker sidecar (Kubernetes) starts before its engine answers, and that engine starts
with an empty image store. So at start-up the worker:

1. **waits for its engine** (:func:`wait_for_engine`): it polls ``DOCKER_HOST`` for up to ``timeout`` seconds,
   logging once that it waits and for what, and fails with :class:`~sandbox.errors.SandboxUnavailable` naming the
   engine when the time is up;
2. **provisions the sandbox image** (:func:`provision_image`): an image already in the store is used as it is; a
   missing one is loaded from ``archive`` (a ``docker save`` tarball shipped with the worker's own image or mounted
   into the pod) or, without one, pulled; in both cases, when the operator names the image's ``digest``
   (``sha256:…``, the image id of ``docker image inspect`` or a registry digest), an image that is not that one is
   refused and removed, so a swapped archive or a moved tag never becomes the sandbox. An image in the store that
   is not ``current`` (the caller's test: an older sandbox layout kept in an engine's volume across an upgrade of
   the App) is replaced the same way, loaded or pulled, rather than refused at every start; an archive or registry
   that offers no current image either is named. Loading an image of hundreds of megabytes on a busy node takes
   longer than an API call: the engine is given :data:`TRANSFER_SECONDS` to answer, and an engine that still does
   not answer is named, as any other refusal, never a traceback (a pull streams its progress with no read timeout).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import requests
from docker.errors import DockerException, ImageNotFound

from sandbox.errors import SandboxUnavailable

DIGEST_PREFIX = "sha256:"
TRANSFER_SECONDS = 1800  # the read timeout of one image load or pull (an API call's is the client's, 60 s)


def wait_for_engine(timeout: float, *, poll: float = 1.0, on_wait: Callable[[str], None] | None = None,
                    client_timeout: int = 60) -> docker.DockerClient:
    """A client of the engine ``DOCKER_HOST`` names, once it answers; SandboxUnavailable after ``timeout``."""
    deadline = time.monotonic() + timeout
    told = False
    while True:
        try:
            client = docker.from_env(timeout=client_timeout)
            client.ping()
            return client
        except DockerException as exc:
            error = exc
        if time.monotonic() >= deadline:
            raise SandboxUnavailable(f"no Docker engine answered within {timeout:.0f}s "
                                     f"({type(error).__name__}: {str(error)[:200]})") from error
        if not told and on_wait is not None:
            on_wait(f"{type(error).__name__}: {str(error)[:200]}")
            told = True
        time.sleep(poll)


@dataclass(frozen=True)
class Provisioned:
    image: str
    image_id: str
    how: str  # "present", "loaded" or "pulled"; "replaced, loaded" or "replaced, pulled" for a stale present one


def _matches(image: docker.models.images.Image, digest: str) -> bool:
    return image.id == digest or any(d.endswith("@" + digest) for d in (image.attrs.get("RepoDigests") or []))


def provision_image(client: docker.DockerClient, image: str, *, archive: Path | None = None,
                    digest: str | None = None,
                    outdated: Callable[[docker.models.images.Image], str | None] | None = None) -> Provisioned:
    """Make ``image`` present in the engine's store (see the module's docstring). ``outdated`` says why an image
    is not current (None when it is)."""
    if digest is not None and not digest.startswith(DIGEST_PREFIX):
        raise SandboxUnavailable(f"the sandbox image digest must start with {DIGEST_PREFIX} (got {digest[:80]!r})",
                                 image)
    how = "present"
    try:
        found = client.images.get(image)
    except ImageNotFound:
        found, how = _fetch(client, image, archive), "loaded" if archive is not None else "pulled"
    except (DockerException, requests.exceptions.RequestException) as exc:
        raise SandboxUnavailable(f"cannot inspect the sandbox image {image}: {type(exc).__name__}: {exc}",
                                 image) from exc
    stale = outdated(found) if outdated is not None else None
    if how == "present" and stale is not None:
        old = found.id
        found = _fetch(client, image, archive, why=stale)
        how = "replaced, " + ("loaded" if archive is not None else "pulled")
        if found.id != old:  # the old image, now untagged, is not left taking the engine's disk
            with contextlib.suppress(DockerException):
                client.images.remove(old)
        stale = outdated(found) if outdated is not None else None
    if stale is not None:
        source = f"the archive {archive}" if archive is not None else "its registry"
        raise SandboxUnavailable(f"the sandbox image {image} {stale}, and {source} offers no current one; "
                                 "build it (`logomesh sandbox build-image`) and load or push it", image)
    if digest is not None and not _matches(found, digest):
        if how != "present":
            with contextlib.suppress(DockerException):  # refused either way; the janitor finds what is left
                client.images.remove(found.id, force=True)
        raise SandboxUnavailable(f"the sandbox image {image} is {found.id}, not the configured digest {digest}"
                                 f" ({how}); refusing it", image)
    return Provisioned(image, found.id, how)


@contextlib.contextmanager
def _transfer(client: docker.DockerClient) -> Iterator[None]:
    """The client's calls inside wait up to :data:`TRANSFER_SECONDS` for the engine's answer."""
    api = client.api
    before = api.timeout
    api.timeout = max(TRANSFER_SECONDS, before or 0)
    try:
        yield
    finally:
        api.timeout = before


def _fetch(client: docker.DockerClient, image: str, archive: Path | None,
           why: str = "is missing") -> docker.models.images.Image:
    if archive is not None:
        try:
            with archive.open("rb") as stream, _transfer(client):
                loaded = client.images.load(stream)
        except requests.exceptions.RequestException as exc:
            raise SandboxUnavailable(f"the engine stopped answering while it loaded {archive} ({type(exc).__name__}"
                                     f"; a load is given {TRANSFER_SECONDS} s)", image) from exc
        except OSError as exc:
            raise SandboxUnavailable(f"the sandbox image archive {archive} cannot be read: {exc}", image) from exc
        except DockerException as exc:
            raise SandboxUnavailable(f"the engine could not load {archive}: {exc}", image) from exc
        try:
            return client.images.get(image)
        except ImageNotFound as exc:
            tags = sorted(t for i in loaded for t in (i.tags or []))
            raise SandboxUnavailable(f"the archive {archive} does not hold {image} (it holds "
                                     f"{', '.join(tags) or 'untagged images'})", image) from exc
    try:
        with _transfer(client):
            return client.images.pull(image)
    except (DockerException, requests.exceptions.RequestException) as exc:
        raise SandboxUnavailable(f"the sandbox image {image} {why} and could not be pulled "
                                 f"({type(exc).__name__}); build it (`logomesh sandbox build-image`), load it "
                                 "(LOGOMESH_SANDBOX_IMAGE_ARCHIVE) or let the engine reach its registry",
                                 image) from exc
