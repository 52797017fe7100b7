"""The worker's start-up: reap what a killed worker left behind, load the model once, check the sandbox image.

Runs in arq's ``on_startup``, before the first job. What a review *requires* (``LOGOMESH_SANDBOX=docker``,
``LOGOMESH_EMBEDDING=on``) and is missing stops the worker with :class:`StartupError`, whose message says what
to fix; what is only *wanted* (``auto``) is logged as a warning and reviews say "not measured".

Sweeping is safe with many workers on one Docker host: a sandbox object older than the job timeout (plus a
margin) cannot belong to a live job, because arq cancels the job by then and the run removes its own objects.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

import structlog

from app.settings import Settings

log = structlog.get_logger("logomesh.startup")
SWEEP_MARGIN_SECONDS = 300


class StartupError(RuntimeError):
    """The worker must not take jobs: a required part is missing. The message names the fix."""


@dataclass(frozen=True)
class StartupReport:
    sandbox_missing: str | None = None
    embedder_missing: str | None = None
    swept_containers: int = 0
    swept_volumes: int = 0
    swept_images: int = 0
    # how many sandboxes the Docker host fits at the default limits (CPUs and memory); None without Docker
    sandbox_capacity: int | None = None


def sweep_after_seconds(settings: Settings) -> float:
    return float(settings.job_timeout_seconds + SWEEP_MARGIN_SECONDS)


def sandbox_capacity(info: dict[str, Any], memory_mb: int, cpus: float) -> int:
    """Sandboxes that fit the Docker host at once: each takes ``cpus`` CPUs and ``memory_mb`` of memory."""
    by_cpu = int(float(info.get("NCPU") or 1) / cpus)
    by_memory = int(int(info.get("MemTotal") or 0) / (memory_mb * 1024 * 1024))
    return max(1, min(by_cpu, by_memory))


def _docker(settings: Settings) -> tuple[str | None, Any, int | None]:
    """(missing reason, swept counts, capacity) — the engine is asked in a thread: docker-py is blocking.

    A required sandbox (``LOGOMESH_SANDBOX=docker``) waits up to ``docker_wait_seconds`` for its engine (a sidecar
    may still be starting; the worker is not ready meanwhile), and a missing image is loaded or pulled
    (:mod:`sandbox.engine`)."""
    from sandbox.docker_sandbox import outdated_layout, require_image
    from sandbox.engine import provision_image, wait_for_engine
    from sandbox.errors import SandboxUnavailable
    from sandbox.janitor import Swept, sweep
    from sandbox.limits import SandboxLimits
    from sandbox.runtime import require_runtime

    def waiting(error: str) -> None:
        log.warning("waiting for the Docker engine", docker_host=os.environ.get("DOCKER_HOST") or "the local socket",
                    up_to_seconds=settings.docker_wait_seconds, error=error)

    wait = settings.docker_wait_seconds if settings.sandbox == "docker" else 0
    try:
        client = wait_for_engine(wait, on_wait=waiting)
    except SandboxUnavailable as exc:
        return exc.reason, Swept(), None
    try:
        try:
            # a runtime the engine does not know fails every container: not ready, the fix named
            require_runtime(client, settings.sandbox_runtime)
        except SandboxUnavailable as exc:
            return exc.reason, Swept(), None
        swept = sweep(client, sweep_after_seconds(settings))
        defaults = SandboxLimits()
        capacity = sandbox_capacity(client.info(), defaults.memory_mb, defaults.cpus)
        try:
            # an image of an older layout (an engine's volume kept across an upgrade) is replaced, not refused
            provisioned = provision_image(client, settings.sandbox_image, archive=settings.sandbox_image_archive,
                                          digest=settings.sandbox_image_digest,
                                          outdated=lambda image: outdated_layout(image.labels))
            if provisioned.how != "present":
                log.info(f"sandbox image {provisioned.how}", image=provisioned.image, image_id=provisioned.image_id)
            require_image(client, settings.sandbox_image)
        except SandboxUnavailable as exc:
            return exc.reason, swept, capacity
        return None, swept, capacity
    finally:
        client.close()


async def start_up(settings: Settings) -> StartupReport:
    """Check and warm what reviews need; raises :class:`StartupError` when a required part is missing."""
    sandbox_missing: str | None = None
    swept = None
    capacity: int | None = None
    if settings.sandbox == "off":
        sandbox_missing = "the sandbox is turned off (LOGOMESH_SANDBOX=off)"
    else:
        sandbox_missing, swept, capacity = await asyncio.to_thread(_docker, settings)
        if capacity is not None and settings.concurrency > capacity:
            # more reviews than the host fits: sandboxes would fight for CPU and hit their timeouts
            log.warning("LOGOMESH_CONCURRENCY exceeds the sandbox capacity of the Docker host",
                        concurrency=settings.concurrency, capacity=capacity)
        if swept is not None and (swept.containers or swept.volumes or swept.images):
            log.info("swept orphaned sandbox objects", containers=swept.containers, volumes=swept.volumes,
                     images=swept.images)
        if sandbox_missing is not None:
            if settings.sandbox == "docker":
                raise StartupError(f"LOGOMESH_SANDBOX=docker but {sandbox_missing}; the worker will not take "
                                   "reviews it cannot measure (or set LOGOMESH_SANDBOX=auto to review without T)")
            log.warning("sandbox unavailable: reviews will report tests as not measured", reason=sandbox_missing)

    embedder_missing: str | None = None
    if settings.embedding == "off":
        embedder_missing = "the embedding model is switched off (LOGOMESH_EMBEDDING=off)"
    else:
        from app.review.embeddings import EmbeddingModelMissing, load_model, model_available

        embedder_missing = model_available(settings.embedding_model_path)
        if embedder_missing is None:
            try:
                # cached for the process: every review's attach_embedder gets this same model
                await asyncio.to_thread(load_model, settings.embedding_model_path)
                log.info("embedding model loaded")
            except EmbeddingModelMissing as exc:
                embedder_missing = exc.message
        if embedder_missing is not None:
            if settings.embedding == "on":
                raise StartupError(f"LOGOMESH_EMBEDDING=on but {embedder_missing}")
            log.warning("embedding model unavailable: reviews will report rationale as not measured",
                        reason=embedder_missing)
    return StartupReport(sandbox_missing=sandbox_missing, embedder_missing=embedder_missing,
                         swept_containers=swept.containers if swept else 0,
                         swept_volumes=swept.volumes if swept else 0, swept_images=swept.images if swept else 0,
                         sandbox_capacity=capacity)
