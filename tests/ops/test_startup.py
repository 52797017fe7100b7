"""Worker start-up against the real Docker engine and the real embedding model."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from structlog.testing import capture_logs

from app.settings import Settings
from app.worker.startup import StartupError, sandbox_capacity, start_up
from sandbox.docker_sandbox import LABEL, LABEL_CREATED
from tests.images import SANDBOX_IMAGE
from tests.ops.conftest import REDIS_URL, cli

IMAGE = SANDBOX_IMAGE


def _settings(prefix: str, **overrides: object) -> Settings:
    values: dict[str, Any] = {"redis_url": REDIS_URL, "redis_prefix": prefix, "queue_name": prefix + "queue",
                                 "sandbox": "auto", "embedding": "off", "job_timeout_seconds": 60}
    values.update(overrides)
    return Settings(_env_file=None, **values)


@pytest.fixture
def client() -> Iterator[docker.DockerClient]:
    c = docker.from_env()
    try:
        c.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{IMAGE} is missing: scripts/setup.sh builds it (logomesh sandbox build-image)")
    yield c
    c.close()


async def test_start_up_reaps_orphans_older_than_a_job_and_spares_younger_ones(
        client: docker.DockerClient, prefix: str) -> None:
    tag = uuid.uuid4().hex[:8]
    old = client.api.create_container(IMAGE, command=["true"], name=f"lm-orphan-{tag}",
                                      labels={LABEL: "1", LABEL_CREATED: str(int(time.time()) - 3600)})
    young = client.api.create_container(IMAGE, command=["true"], name=f"lm-live-{tag}",
                                        labels={LABEL: "1", LABEL_CREATED: str(int(time.time()))})
    try:
        report = await start_up(_settings(prefix))
        names = {c.name for c in client.containers.list(all=True, filters={"label": LABEL})}
        assert f"lm-orphan-{tag}" not in names
        assert f"lm-live-{tag}" in names  # may belong to a job of another worker on this host
        assert report.swept_containers >= 1
        assert report.sandbox_missing is None
        assert report.sandbox_capacity is not None and report.sandbox_capacity >= 1
    finally:
        for c in (old, young):
            with contextlib.suppress(docker.errors.NotFound):
                client.api.remove_container(c["Id"], force=True)


def test_sandbox_capacity_is_bounded_by_cpus_and_memory() -> None:
    gib = 1024 ** 3
    assert sandbox_capacity({"NCPU": 2, "MemTotal": 8 * gib}, memory_mb=128, cpus=0.5) == 4
    assert sandbox_capacity({"NCPU": 64, "MemTotal": gib}, memory_mb=512, cpus=0.5) == 2
    assert sandbox_capacity({"NCPU": 1, "MemTotal": 0}, memory_mb=128, cpus=0.5) == 1


async def test_required_sandbox_with_a_missing_image_stops_the_worker(client: docker.DockerClient,
                                                                      prefix: str) -> None:
    missing = f"logomesh-sandbox:missing-{uuid.uuid4().hex[:8]}"
    with pytest.raises(StartupError, match=missing) as caught:
        await start_up(_settings(prefix, sandbox="docker", sandbox_image=missing))
    assert "build-image" in str(caught.value)


async def test_auto_sandbox_with_a_missing_image_warns_and_goes_on(client: docker.DockerClient,
                                                                   prefix: str) -> None:
    missing = f"logomesh-sandbox:missing-{uuid.uuid4().hex[:8]}"
    with capture_logs() as logs:
        report = await start_up(_settings(prefix, sandbox_image=missing))
    assert report.sandbox_missing is not None and missing in report.sandbox_missing
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert any(missing in e.get("reason", "") for e in warnings)


def test_the_worker_command_refuses_to_start_without_the_required_image(tmp_path: Path, prefix: str) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    missing = f"logomesh-sandbox:missing-{uuid.uuid4().hex[:8]}"
    env = {"LOGOMESH_REDIS_URL": REDIS_URL, "LOGOMESH_REDIS_PREFIX": prefix, "LOGOMESH_QUEUE_NAME": prefix + "q",
           "LOGOMESH_APP_ID": "1", "LOGOMESH_PRIVATE_KEY": key, "LOGOMESH_PUBLIC_URL": "https://lm.test",
           "LOGOMESH_HOME": str(tmp_path), "LOGOMESH_SANDBOX": "docker", "LOGOMESH_SANDBOX_IMAGE": missing,
           "LOGOMESH_EMBEDDING": "off"}
    result = cli("worker", env=env, timeout=120)
    assert result.returncode == 3, result.stderr[-2000:]
    assert missing in result.stderr and "LOGOMESH_SANDBOX=docker" in result.stderr


async def test_the_embedding_model_is_loaded_once_at_start_up(prefix: str) -> None:
    from app.review.embeddings import SentenceEmbedder, _load

    report = await start_up(_settings(prefix, sandbox="off", embedding="on"))
    assert report.embedder_missing is None
    loads = _load.cache_info().misses
    # a review's attach_embedder gets the already loaded model: no second load
    embedder = await asyncio.to_thread(SentenceEmbedder.load, None)
    assert _load.cache_info().misses == loads
    assert len((await embedder.embed(["a discount code"]))[0]) == 384


async def test_required_embedding_model_that_cannot_be_found_stops_the_worker(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(StartupError, match="LOGOMESH_EMBEDDING=on"):
        await start_up(_settings(prefix, sandbox="off", embedding="on", embedding_model_path=tmp_path))
