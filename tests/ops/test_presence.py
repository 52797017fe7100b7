"""A worker sweeps the sandbox objects of workers that are gone, never a live one's (app/worker/presence.py,
sandbox/janitor.py), against real Redis and the real Docker engine."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator

import docker
import pytest
import redis.asyncio as aioredis

from app.queue import Keys
from app.worker.jobs import _engine_sweeper
from app.worker.presence import Presence
from sandbox.docker_sandbox import LABEL, LABEL_CREATED, LABEL_OWNER, LABEL_WORKER
from tests.images import SANDBOX_IMAGE

IMAGE = SANDBOX_IMAGE
LIVENESS = 0.5


@pytest.fixture
def engine() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException:
        pytest.skip("no Docker engine")
    yield client
    client.close()


def _sandbox_container(client: docker.DockerClient, worker: str, created: float | None = None) -> str:
    """A container labelled as a review's sandbox object of ``worker`` (none: a CLI review's), created at
    ``created`` (default now; never started)."""
    labels = {LABEL: "1", LABEL_OWNER: uuid.uuid4().hex, LABEL_CREATED: str(int(created or time.time()))}
    if worker:
        labels[LABEL_WORKER] = worker
    return str(client.api.create_container(IMAGE, command=["true"], labels=labels, network_disabled=True)["Id"])


def _exists(client: docker.DockerClient, container: str) -> bool:
    try:
        client.api.inspect_container(container)
    except docker.errors.NotFound:
        return False
    return True


async def test_gone_is_only_workers_whose_announcement_lapsed(redis: aioredis.Redis, prefix: str) -> None:
    keys = Keys(prefix)
    me, alive = Presence(redis, keys, "me", LIVENESS), Presence(redis, keys, "alive", LIVENESS)
    await me.announce()
    await alive.announce()
    assert await me.gone({"me", "alive", "dead"}) == {"dead"}  # never itself, never a live one
    await asyncio.sleep(LIVENESS * 3)  # "alive" stopped announcing: it is gone now; "me" never judges itself
    assert await me.gone({"me", "alive", "dead"}) == {"alive", "dead"}


async def test_a_gone_workers_sandbox_objects_are_swept_and_a_live_ones_kept(
        redis: aioredis.Redis, prefix: str, engine: docker.DockerClient) -> None:
    tag = uuid.uuid4().hex[:8]
    dead, live, me = f"dead-{tag}", f"live-{tag}", f"me-{tag}"
    keys = Keys(prefix)
    presence = Presence(redis, keys, me, 3)
    await Presence(redis, keys, live, 3).announce()
    made = {worker: _sandbox_container(engine, worker) for worker in (dead, live, me)}
    made["cli"] = _sandbox_container(engine, "", created=1.0)  # a long CLI review's: no worker, very old
    try:
        owners, sweep = _engine_sweeper()
        assert {dead, live, me} <= await owners()
        assert await presence.sweep_once(owners, sweep) >= 1
        assert not _exists(engine, made[dead])  # the killed worker's container: gone at once, not after 65 min
        assert _exists(engine, made[live]) and _exists(engine, made[me])
        assert _exists(engine, made["cli"])  # not a worker's: never swept by age behind its back
    finally:
        for container in made.values():
            with contextlib.suppress(docker.errors.DockerException):
                engine.api.remove_container(container, force=True)
