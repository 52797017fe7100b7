"""Test runs share the engine's CPUs: at most as many run at once as the engine has CPUs for them.

A review starts its base, head and guard runs together, and a worker may hold several reviews. Each run's
container is limited to the rubric's CPUs (1 by default); three on a 2-CPU engine would each get two thirds of
one, and a suite that fits the wall clock alone would hit it. So the runs take turns by CPU: a run waits for a
slot before its tests start, and its wall clock starts with them. Slots are the engine's CPU count over one run's
CPU limit, at least one; setup (installs, builds) and the Red Agent's probes do not take one.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import Any

from docker.errors import DockerException

_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = \
    weakref.WeakKeyDictionary()


def slot_count(engine_cpus: int, run_cpus: float) -> int:
    """How many test runs the engine's CPUs hold at once: its CPUs over one run's limit, at least one."""
    return max(1, int(max(engine_cpus, 1) // max(run_cpus, 0.01)))


def engine_cpus(client: Any) -> int:
    """The engine's CPU count (``NCPU`` of ``docker info``), 1 when it does not say."""
    try:
        count = client.info().get("NCPU")
    except (DockerException, OSError, ValueError):  # an engine that cannot say is treated as the smallest
        return 1
    return count if isinstance(count, int) and count > 0 else 1


@contextlib.asynccontextmanager
async def test_slot(engine: str, slots: int) -> AsyncIterator[None]:
    """Hold one of ``engine``'s ``slots`` test-run slots (per event loop: the reviews a worker runs together)."""
    loop = asyncio.get_running_loop()
    by_engine = _SLOTS.setdefault(loop, {})
    semaphore = by_engine.setdefault(f"{engine}|{slots}", asyncio.Semaphore(slots))
    async with semaphore:
        yield
