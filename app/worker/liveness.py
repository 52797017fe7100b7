"""A running job's claims live only as long as the job: one heartbeat renews them, a dead worker's lapse in seconds.

A review holds three claims in Redis:

- arq's **in-progress mark** of the job (``arq:in-progress:<job id>``): while it exists no other worker starts the
  job; once it lapses, arq hands the job (still in the queue) to the next worker that polls; beside it the job's
  **owner** token (:class:`Ownership`), which fences a try that was cut off from Redis from publishing beside the
  try that took its job over;
- the installation's **fairness lease** (:mod:`app.worker.fairness`);
- the PR's **lock** (one review of a pull request at a time).

Each is written with a short time to live, ``settings.job_liveness_seconds``, and :class:`Heartbeat` renews all of
them every third of it while the job runs. A worker killed with SIGKILL (the OOM killer, a node drained without
grace) stops renewing: within ``job_liveness_seconds`` every claim of its jobs lapses and another worker takes the
work over, instead of waiting out the job timeout. A heartbeat that cannot reach Redis keeps trying at the next
beat; a lock it finds taken by someone else (its TTL lapsed while Redis was away) is reported, so the job can stop
rather than publish beside another review of the same PR.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from types import TracebackType

import structlog
from arq.constants import in_progress_key_prefix
from redis.asyncio import Redis
from redis.exceptions import LockError, RedisError

log = structlog.get_logger("logomesh.worker")
BEATS_PER_LIVENESS = 3

Renewal = Callable[[], Awaitable[None]]


class ClaimLost(Exception):
    """A claim the job held was taken by another holder while its heartbeat could not renew it."""

    def __init__(self, claim: str) -> None:
        self.claim = claim
        super().__init__(claim)


def in_progress_key(job_id: str) -> str:
    return in_progress_key_prefix + job_id


class Heartbeat:
    """Renews a job's claims every ``liveness / 3`` seconds while the ``async with`` block runs.

    ``add(name, renew)`` registers a claim; ``renew`` raises :class:`ClaimLost` when the claim is someone else's
    now. Redis errors are logged and retried at the next beat: a short outage must not end the job.
    """

    def __init__(self, liveness: float) -> None:
        self.liveness = float(liveness)
        self.interval = self.liveness / BEATS_PER_LIVENESS
        self._claims: dict[str, Renewal] = {}
        self._task: asyncio.Task[None] | None = None
        self.lost: str | None = None
        self.beats = 0
        self.job: Ownership | None = None

    async def owns_job(self) -> bool:
        """False once another try took this job over: this one must publish nothing."""
        if self.job is None:
            return True
        if self.lost == "job":
            return False
        return await self.job.held()

    def add(self, name: str, renew: Renewal) -> None:
        self._claims[name] = renew

    def drop(self, name: str) -> None:
        self._claims.pop(name, None)

    async def own(self, job: Ownership) -> None:
        """Take the job for this try and keep it while the heartbeat runs."""
        await job.take()
        self.job = job
        self.add("job", job.renew)

    async def renew_now(self) -> None:
        for name, renew in list(self._claims.items()):
            try:
                await renew()
            except ClaimLost:
                self.lost = name
                self._claims.pop(name, None)
                log.error("a claim of this job was taken over while it could not be renewed", claim=name)
            except (RedisError, OSError) as exc:
                log.warning("could not renew a claim; retrying at the next beat", claim=name, error=str(exc))
        self.beats += 1

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.renew_now()

    async def __aenter__(self) -> Heartbeat:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


# KEYS: the job's owner key, arq's in-progress mark. ARGV: this try's token, liveness in ms.
# The owner key names the try that runs the job; a try that finds another's token there was taken over.
_OWN = """
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return 1
"""


class Ownership:
    """Which try runs a job: a fencing token in ``{prefix}owner:<job id>``, with arq's in-progress mark beside it.

    A new try writes its token when it starts (a later try always wins: the earlier one is dead, or was cut off
    from Redis longer than its claims live). Each beat re-asserts both keys — recreating them if they lapsed while
    Redis was away, unless another try took the job meanwhile. Before it writes the DBOM or publishes, a try checks
    :meth:`held`: a try that lost its job publishes nothing, so a decision is recorded and published once.
    """

    def __init__(self, redis: Redis, owner_key: str, job_id: str, token: str, liveness: float) -> None:
        self.redis, self.owner_key, self.mark = redis, owner_key, in_progress_key(job_id)
        self.token, self.ms = token, int(liveness * 1000)

    async def take(self) -> None:
        await self.redis.set(self.owner_key, self.token, px=self.ms)
        await self.redis.set(self.mark, b"1", px=self.ms)  # arq set it to the job timeout

    async def renew(self) -> None:
        if not await self.redis.eval(_OWN, 2, self.owner_key, self.mark, self.token, str(self.ms)):  # type: ignore[misc]
            raise ClaimLost("job")

    async def _owner(self) -> str | None:
        owner = await self.redis.get(self.owner_key)
        return owner.decode() if isinstance(owner, bytes) else owner

    async def held(self) -> bool:
        return (await self._owner()) in (None, self.token)

    async def release(self) -> None:
        if await self._owner() == self.token:
            await self.redis.delete(self.owner_key)


def lock_claim(lock: object, name: str) -> Renewal:
    """A :class:`redis.asyncio.lock.Lock` held by this job: ``reacquire`` resets its TTL while the token is ours."""

    async def renew() -> None:
        try:
            await lock.reacquire()  # type: ignore[attr-defined]
        except LockError as exc:
            raise ClaimLost(name) from exc

    return renew
