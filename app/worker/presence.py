"""Which worker processes are alive, and the sandbox objects of those that are gone.

Each worker process announces itself in Redis (``{prefix}worker:<id>``, living ``job_liveness_seconds`` and renewed
every third of that) and labels every sandbox object it creates with its id (:mod:`sandbox.docker_sandbox`). At
start and then every ``SWEEP_EVERY_SECONDS`` (20), a worker reads the worker ids on the engine's sandbox objects and
removes those of workers whose announcement is gone (:func:`sandbox.janitor.sweep`): a worker killed mid-review
leaves nothing running for long, and a live worker's objects are never touched — its own never, and nobody's
while Redis has been up for less than two lifetimes (a restarted Redis has forgotten every announcement; live
workers renew theirs within one).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Collection

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError

from app.queue import Keys

log = structlog.get_logger("logomesh.worker")
SWEEP_EVERY_SECONDS = 20.0

Sweeper = Callable[[Collection[str]], Awaitable[int]]
Owners = Callable[[], Awaitable[set[str]]]


class Presence:
    def __init__(self, redis: Redis, keys: Keys, worker_id: str, liveness: float) -> None:
        self.redis, self.keys, self.worker_id, self.liveness = redis, keys, worker_id, liveness

    async def announce(self) -> None:
        await self.redis.set(self.keys.worker(self.worker_id), b"1", ex=max(1, math.ceil(self.liveness)))

    async def withdraw(self) -> None:
        await self.redis.delete(self.keys.worker(self.worker_id))

    async def gone(self, worker_ids: Collection[str]) -> set[str]:
        """The workers among ``worker_ids`` that are not alive (never this one)."""
        others = sorted(set(worker_ids) - {self.worker_id})
        if not others:
            return set()
        info = await self.redis.info("server")
        if int(info.get("uptime_in_seconds", 0)) < 2 * self.liveness:
            return set()  # Redis restarted lately: live workers may not have announced themselves again yet
        values = await self.redis.mget([self.keys.worker(w) for w in others])
        return {w for w, value in zip(others, values, strict=True) if value is None}

    async def sweep_once(self, owners: Owners, sweep: Sweeper) -> int:
        gone = await self.gone(await owners())
        if not gone:
            return 0
        removed = await sweep(gone)
        log.info("swept the sandbox objects of gone workers", workers=sorted(gone), removed=removed)
        return removed

    async def run(self, owners: Owners | None, sweep: Sweeper | None,
                  sweep_every: float = SWEEP_EVERY_SECONDS) -> None:
        """Announce this worker for as long as it runs; sweep gone workers' objects at start and periodically."""
        loop = asyncio.get_running_loop()
        next_sweep = loop.time()
        while True:
            with contextlib.suppress(RedisError, OSError):
                await self.announce()
            if owners is not None and sweep is not None and loop.time() >= next_sweep:
                next_sweep = loop.time() + sweep_every
                try:
                    await self.sweep_once(owners, sweep)
                except Exception as exc:  # the engine or Redis away: the next round tries again
                    log.warning("could not sweep gone workers' sandbox objects", error=type(exc).__name__)
            await asyncio.sleep(self.liveness / 3)
