"""A job's claims live only while its heartbeat does (app/worker/liveness.py), against real Redis; and a job that
waits for another review of its PR is deferred, never failed."""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio as aioredis
from redis.asyncio.lock import Lock

from app.queue import Keys
from app.worker import fairness
from app.worker.liveness import Heartbeat, Ownership, in_progress_key, lock_claim
from tests.app.conftest import REPO, Harness, pr_payload, verdict_title

LIVENESS = 0.6


async def test_the_heartbeat_keeps_claims_alive_and_a_dead_one_lapses_in_seconds(
        redis: aioredis.Redis, prefix: str) -> None:
    job = f"job-{uuid.uuid4().hex[:8]}"
    mark = in_progress_key(job)
    await redis.set(mark, b"1", px=900_000)  # arq sets its mark to the job timeout
    lock = Lock(redis, f"{prefix}lock:{REPO}#7", timeout=LIVENESS)
    assert await lock.acquire(blocking=False, token=job.encode())
    try:
        async with Heartbeat(LIVENESS) as heartbeat:
            await heartbeat.own(Ownership(redis, f"{prefix}owner:{job}", job, "try-1", LIVENESS))
            heartbeat.add("lock", lock_claim(lock, "lock"))
            assert 0 < await redis.pttl(mark) <= LIVENESS * 1000
            await asyncio.sleep(LIVENESS * 3)  # three lifetimes: only renewals keep them
            assert await redis.exists(mark) and await redis.get(lock.name) == job.encode()
            other = Lock(redis, lock.name, timeout=LIVENESS)
            assert not await other.acquire(blocking=False, token=b"someone-else")
            assert heartbeat.beats >= 4 and heartbeat.lost is None
        # the worker "dies": nothing renews, and both claims lapse within one lifetime
        await asyncio.sleep(LIVENESS * 1.5)
        assert not await redis.exists(mark) and not await redis.exists(f"{prefix}owner:{job}")
        assert await other.acquire(blocking=False, token=b"someone-else")
    finally:
        await redis.delete(mark, lock.name)


async def test_a_try_cut_off_from_redis_keeps_its_job_unless_another_try_took_it(
        redis: aioredis.Redis, prefix: str) -> None:
    """Claims lapse while Redis is away; the try that still runs takes them back, unless a later try took the job:
    then it learns it lost the job and must publish nothing (one decision, one DBOM)."""
    job = f"job-{uuid.uuid4().hex[:8]}"
    owner_key, mark = f"{prefix}owner:{job}", in_progress_key(job)
    try:
        async with Heartbeat(60) as first:  # beats only when asked: the test plays the outage
            await first.own(Ownership(redis, owner_key, job, "try-1", LIVENESS))
            await redis.delete(owner_key, mark)  # both lapsed during an outage; nobody else started the job
            await first.renew_now()
            assert first.lost is None and await first.owns_job()
            assert await redis.get(owner_key) == b"try-1" and await redis.exists(mark)  # arq sees it running
            await redis.delete(owner_key, mark)  # lapsed again, and this time arq handed the job to a new try
            async with Heartbeat(60) as second:
                await second.own(Ownership(redis, owner_key, job, "try-2", LIVENESS))
                await first.renew_now()
                assert first.lost == "job" and not await first.owns_job()
                assert await second.owns_job() and await redis.get(owner_key) == b"try-2"
    finally:
        await redis.delete(owner_key, mark)


async def test_a_claim_taken_over_is_reported_and_a_redis_error_is_not_fatal(
        redis: aioredis.Redis, prefix: str) -> None:
    lock = Lock(redis, f"{prefix}lock:{REPO}#8", timeout=LIVENESS)
    assert await lock.acquire(blocking=False, token=b"mine")
    failures = 0

    async def flaky() -> None:
        nonlocal failures
        failures += 1
        raise ConnectionError("Redis went away")

    try:
        async with Heartbeat(LIVENESS) as heartbeat:
            heartbeat.add("flaky", flaky)
            heartbeat.add("lock", lock_claim(lock, "lock"))
            await redis.set(lock.name, b"theirs", px=10_000)  # the lock lapsed and another review took it
            await heartbeat.renew_now()
            assert heartbeat.lost == "lock"
            await asyncio.sleep(LIVENESS)
        assert failures >= 2  # a beat that fails is tried again at the next one; the heartbeat kept running
        assert await redis.get(lock.name) == b"theirs"  # never renewed for the new holder
    finally:
        await redis.delete(lock.name)


async def test_a_lease_renews_while_held_and_reports_its_loss(redis: aioredis.Redis, prefix: str) -> None:
    keys = Keys(prefix)
    assert await fairness.acquire(redis, keys, 99, "j1", cap=1, lease_seconds=LIVENESS)
    assert await fairness.renew(redis, keys, 99, "j1", lease_seconds=60)
    await asyncio.sleep(LIVENESS * 1.5)
    assert not await fairness.acquire(redis, keys, 99, "j2", cap=1, lease_seconds=LIVENESS)  # renewed: still held
    await fairness.release(redis, keys, 99, "j1")
    assert not await fairness.renew(redis, keys, 99, "j1", lease_seconds=60)  # no longer ours: the job is told


async def test_a_job_waiting_for_the_prs_lock_is_deferred_not_failed(harness: Harness) -> None:
    """A live review holds the PR's lock longer than the waiting job may wait: the waiting job is run again later
    (an ``arq.Retry``), which is neither a failed try nor "LogoMesh failed" on the check run."""
    h = harness
    h.settings = h.settings.model_copy(update={"job_timeout_seconds": 10, "max_tries": 2})
    keys = Keys(h.settings.redis_prefix)
    holder = Lock(h.redis, keys.lock(REPO, 7), timeout=2)
    assert await holder.acquire(blocking=False, token=b"a-live-review")

    async def live_review() -> None:
        async with Heartbeat(2) as heartbeat:
            heartbeat.add("lock", lock_claim(holder, "lock"))
            await asyncio.sleep(12)  # longer than the waiting job's deadline (8 s of a 10 s job timeout)
        await holder.release()

    holding = asyncio.ensure_future(live_review())
    try:
        assert (await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head,
                                                        base=h.repo.base))).status_code == 202
        worker = await asyncio.wait_for(h.run_worker(), 120)
    finally:
        await holding
    assert worker.jobs_failed == 0, "waiting for the lock was counted as a failure"
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed", runs
    assert verdict_title(runs[0]["output"]["title"]), runs[0]["output"]  # the verdict, not "could not review"
