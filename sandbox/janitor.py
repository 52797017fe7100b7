"""The janitor: removes sandbox containers, volumes and prepared images that a crashed run left behind.

Everything a run creates carries the ``org.logomesh.sandbox`` label, its creation time and, in a worker, the
worker process that owns it (``org.logomesh.sandbox.worker``). A run removes its own objects in ``finally``, so
an object is an orphan when the worker that owns it is gone (the caller knows which workers live: the janitor
only reads labels, :func:`owners`) or, whoever owns it, when it is older than the longest possible run. Setup
networks are swept the same way. Cached environments (``logomesh-env:*``) are not orphans: their cache evicts them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection
from dataclasses import dataclass

import docker
from docker.errors import DockerException

from sandbox.docker_sandbox import LABEL, LABEL_CREATED, LABEL_WORKER
from sandbox.setup_phase import ENV_LABEL


@dataclass(frozen=True)
class Swept:
    containers: int = 0
    volumes: int = 0
    images: int = 0


def _orphan(labels: dict[str, str] | None, cutoff: float, gone: Collection[str]) -> bool:
    if (labels or {}).get(LABEL_WORKER) in gone:
        return True
    try:
        return float((labels or {}).get(LABEL_CREATED, "0")) <= cutoff
    except ValueError:
        return True


def owners(client: docker.DockerClient) -> set[str]:
    """The worker identities on the engine's sandbox containers, volumes and networks."""
    api = client.api
    found: set[str] = set()
    for listing in (api.containers(all=True, filters={"label": LABEL}),
                    api.volumes(filters={"label": LABEL}).get("Volumes") or [],
                    api.networks(filters={"label": LABEL})):
        found |= {(info.get("Labels") or {}).get(LABEL_WORKER, "") for info in listing}
    return found - {""}


def sweep(client: docker.DockerClient, older_than_seconds: float = 3900.0, *,
          gone_workers: Collection[str] = ()) -> Swept:
    """Remove labelled sandbox objects of the ``gone_workers``, and any created more than ``older_than_seconds``
    ago."""
    cutoff = time.time() - older_than_seconds
    gone = frozenset(gone_workers)

    def _old(labels: dict[str, str] | None, cutoff: float) -> bool:
        return _orphan(labels, cutoff, gone)

    api = client.api
    containers = volumes = images = 0
    for info in api.containers(all=True, filters={"label": LABEL}):
        if _old(info.get("Labels"), cutoff):
            with contextlib.suppress(DockerException):
                api.remove_container(info["Id"], force=True, v=True)
                containers += 1
    for info in api.volumes(filters={"label": LABEL}).get("Volumes") or []:
        if _old(info.get("Labels"), cutoff):
            with contextlib.suppress(DockerException):
                api.remove_volume(info["Name"], force=True)
                volumes += 1
    for info in api.images(filters={"label": LABEL}):
        if ENV_LABEL in (info.get("Labels") or {}):
            continue  # a cached environment: bounded by its own eviction (sandbox/setup_phase.py), not an orphan
        if _old(info.get("Labels"), cutoff):
            with contextlib.suppress(DockerException):
                api.remove_image(info["Id"], force=True)
                images += 1
    for network in api.networks(filters={"label": LABEL}):
        if _old(network.get("Labels"), cutoff):
            with contextlib.suppress(DockerException):
                api.remove_network(network["Id"])
    return Swept(containers, volumes, images)
