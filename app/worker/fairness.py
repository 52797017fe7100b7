"""Per-installation fairness: at most ``installation_concurrency`` reviews of one installation run at once,
across every worker sharing the Redis, so one busy organisation cannot hold all the worker slots.

A running review holds a **lease** in the sorted set ``{prefix}running:<installation>`` (member: the job id,
score: when the lease ends). Taking a lease is one Lua script — drop expired leases, then add ours if the set
is below the cap — so two workers never both take the last slot. A lease lasts ``settings.job_liveness_seconds``
and the job's heartbeat renews it (:func:`renew`, :mod:`app.worker.liveness`): a worker killed with SIGKILL loses
its leases within seconds, not after the job timeout. A job over the cap is deferred with ``Retry(defer=…)``; the
deferral does not count as one of the job's ``max_tries`` (see :func:`uncount_try`), so a burst from one
organisation waits instead of failing.
"""

from __future__ import annotations

import random
import time

from arq import Retry
from arq.constants import retry_key_prefix
from redis.asyncio import Redis

from app.queue import Keys

DEFER_SECONDS = 3.0
LEASE_MARGIN_SECONDS = 60

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  return 1
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


_RENEW = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0
"""


class Deferred(Retry):
    """The job waits for a slot of its installation (arq re-runs it after ``defer``)."""


def running_key(keys: Keys, installation_id: int) -> str:
    return f"{keys.prefix}running:{installation_id}"


async def acquire(redis: Redis, keys: Keys, installation_id: int, job_id: str, *, cap: int, lease_seconds: float,
                  now: float | None = None) -> bool:
    """Take one of the installation's ``cap`` slots for ``job_id`` (idempotent for the same job)."""
    now = time.time() if now is None else now
    taken = await redis.eval(  # type: ignore[misc]
        _ACQUIRE, 1, running_key(keys, installation_id), str(now), job_id, str(now + lease_seconds), str(cap),
        str(int((lease_seconds + LEASE_MARGIN_SECONDS) * 1000)))
    return bool(taken)


async def renew(redis: Redis, keys: Keys, installation_id: int, job_id: str, *, lease_seconds: float,
                now: float | None = None) -> bool:
    """Extend ``job_id``'s lease (False: it lapsed or was released, and is no longer ours)."""
    now = time.time() if now is None else now
    renewed = await redis.eval(  # type: ignore[misc]
        _RENEW, 1, running_key(keys, installation_id), job_id, str(now + lease_seconds),
        str(int((lease_seconds + LEASE_MARGIN_SECONDS) * 1000)))
    return bool(renewed)


async def release(redis: Redis, keys: Keys, installation_id: int, job_id: str) -> None:
    await redis.zrem(running_key(keys, installation_id), job_id)


async def running(redis: Redis, keys: Keys, installation_id: int, now: float | None = None) -> int:
    now = time.time() if now is None else now
    return int(await redis.zcount(running_key(keys, installation_id), f"({now}", "+inf"))


async def uncount_try(redis: Redis, job_id: str) -> None:
    """arq counts every run of a job against ``max_tries``; a fairness deferral is not a failed try."""
    await redis.decr(retry_key_prefix + job_id)


def defer_seconds() -> float:
    # jitter: deferred jobs of one installation should not all come back in the same poll
    return DEFER_SECONDS + random.uniform(0, 1)  # noqa: S311 - scheduling jitter, not security
