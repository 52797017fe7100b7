"""The environment cache shared through a registry the operator names (``LOGOMESH_SANDBOX_ENV_REGISTRY``).

After a verified build the setup phase pushes ``logomesh-env:<key>`` as ``<registry>:<key>`` and records the
manifest digest the registry answered in the workers' Redis, under the key. A worker whose engine lacks the key
pulls ``<registry>@<digest>`` — never the tag: the engine checks the content against the digest, so whoever can
write to the registry cannot substitute an environment — tags it ``logomesh-env:<key>`` and then verifies it as
any local hit (:func:`sandbox.setup_phase.cached`, RECORD hashes). The digests live in Redis, not in the
registry, because only the workers write there; the store is a small protocol so the setup phase is tested
with a real Redis and a real registry alike.

Every failure (Redis or the registry unreachable, a push refused, a digest the registry does not hold) is logged
and the caller builds the environment locally: a shared cache never fails a review.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from docker.errors import DockerException

REFERENCE = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)+$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
log = logging.getLogger(__name__)


class RegistryError(Exception):
    """A push or pull the registry (or the engine) refused: the caller falls back to a local build."""


class DigestStore(Protocol):
    """Where the workers record the pushed digest of each environment key."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, digest: str) -> None: ...


class RedisDigests:
    """The digests in Redis (the workers' own), ``<prefix>env-digest:<registry>:<key>``, expiring with the
    cache's maximum age."""

    def __init__(self, url: str, prefix: str, registry: str, ttl_seconds: int) -> None:
        import redis

        self._client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self._prefix = f"{prefix}env-digest:{registry}:"
        self._ttl = ttl_seconds

    def get(self, key: str) -> str | None:
        value = self._client.get(self._prefix + key)
        text = value.decode() if isinstance(value, bytes) else value
        return text if isinstance(text, str) and DIGEST.match(text) else None

    def put(self, key: str, digest: str) -> None:
        if not DIGEST.match(digest):
            raise ValueError(f"not a sha256 digest: {digest!r}")
        self._client.set(self._prefix + key, digest, ex=self._ttl)

    def close(self) -> None:
        self._client.close()


@dataclass(frozen=True)
class EnvRegistry:
    """A registry repository (``host[:port]/path``) and the store of its digests."""

    repository: str
    digests: DigestStore

    def __post_init__(self) -> None:
        if not REFERENCE.match(self.repository):
            raise ValueError(f"not a registry repository (host[:port]/path, no tag): {self.repository!r}")


def push(api: Any, registry: EnvRegistry, image: str, key: str) -> str:
    """Push the local ``image`` as ``<registry>:<key>``, record and return the digest the registry answered."""
    try:
        api.tag(image, registry.repository, key)
        try:
            digest = _pushed_digest(api.push(registry.repository, tag=key, stream=True, decode=True))
        finally:
            api.remove_image(f"{registry.repository}:{key}", noprune=True)  # only the remote name goes
    except DockerException as exc:
        raise RegistryError(f"push to {registry.repository} failed: {exc}") from exc
    registry.digests.put(key, digest)
    return digest


def pull(api: Any, registry: EnvRegistry, key: str, local: str) -> str | None:
    """Pull the environment recorded for ``key`` by its digest and tag it ``local``; None when none is
    recorded. The engine refuses content that does not match the digest."""
    digest = registry.digests.get(key)
    if digest is None:
        return None
    reference = f"{registry.repository}@{digest}"
    try:
        _check_stream(api.pull(registry.repository, tag=digest, stream=True, decode=True))
        inspected = api.inspect_image(reference)
        if reference not in (inspected.get("RepoDigests") or []):
            raise RegistryError(f"the engine holds no image under {reference} after pulling it")
        repository, _, version = local.partition(":")
        api.tag(reference, repository, version)
        api.remove_image(reference, noprune=True)  # the environment stays under its local tag only
    except DockerException as exc:
        raise RegistryError(f"pull of {reference} failed: {exc}") from exc
    return digest


def _check_stream(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The engine's progress messages; an error among them (a push or pull does not raise) raises."""
    seen: list[dict[str, Any]] = []
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("error") or event.get("errorDetail"):
            detail = event.get("error") or (event.get("errorDetail") or {}).get("message")
            raise RegistryError(str(detail))
        seen.append(event)
    return seen


def _pushed_digest(events: Iterable[dict[str, Any]]) -> str:
    for event in _check_stream(events):
        aux = event.get("aux")
        if isinstance(aux, dict) and isinstance(aux.get("Digest"), str) and DIGEST.match(aux["Digest"]):
            return str(aux["Digest"])
    raise RegistryError("the registry answered the push with no manifest digest")
