"""The janitor: removes sandbox containers, volumes and prepared images that a crashed run left behind.

Everything a run creates carries the ``org.logomesh.sandbox`` label and its creation time; a run removes its
own objects in ``finally``, so anything older than the longest possible run is an orphan. Setup networks are
swept the same way. Cached environments (``logomesh-env:*``) are not orphans: their cache evicts them.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import docker
from docker.errors import DockerException

from sandbox.docker_sandbox import LABEL, LABEL_CREATED
from sandbox.setup_phase import ENV_LABEL


@dataclass(frozen=True)
class Swept:
    containers: int = 0
    volumes: int = 0
    images: int = 0


def _old(labels: dict[str, str] | None, cutoff: float) -> bool:
    try:
        return float((labels or {}).get(LABEL_CREATED, "0")) <= cutoff
    except ValueError:
        return True


def sweep(client: docker.DockerClient, older_than_seconds: float = 3900.0) -> Swept:
    """Remove labelled sandbox objects created more than ``older_than_seconds`` ago."""
    cutoff = time.time() - older_than_seconds
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
