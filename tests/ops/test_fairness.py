"""Per-installation fairness against real Redis and a real arq worker."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid

import redis.asyncio as aioredis
from arq.jobs import Job
from arq.worker import Worker

from app.queue import Keys
from app.worker import fairness
from app.worker.jobs import worker_options
from app.worker.publish import pr_from_external_id
from tests.app.conftest import REPO, Harness, pr_payload
from tests.app.sqlite_dbom import SqliteDbom

BUSY, QUIET = 4242, 777


async def test_the_cap_holds_per_installation_and_expired_leases_are_reclaimed(
        redis: aioredis.Redis, prefix: str) -> None:
    keys = Keys(prefix)

    async def take(installation: int, job: str, now: float = 1000.0) -> bool:
        return await fairness.acquire(redis, keys, installation, job, cap=2, lease_seconds=60, now=now)

    assert await take(BUSY, "a1") and await take(BUSY, "a2")
    assert not await take(BUSY, "a3")
    assert await take(BUSY, "a1")  # the same job again (a retry) keeps its slot
    assert await take(QUIET, "b1")  # another installation is not affected
    assert await fairness.running(redis, keys, BUSY, now=1000.0) == 2
    await fairness.release(redis, keys, BUSY, "a2")
    assert await take(BUSY, "a3")
    # a worker killed with SIGKILL never releases: its lease ends and the slot comes back
    assert not await take(BUSY, "a4", now=1059.0)
    assert await take(BUSY, "a4", now=1061.0)


async def test_concurrent_takers_never_exceed_the_cap(redis: aioredis.Redis, prefix: str) -> None:
    keys = Keys(prefix)
    results = await asyncio.gather(*(fairness.acquire(redis, keys, BUSY, f"j{i}", cap=3, lease_seconds=60)
                                     for i in range(40)))
    assert sum(results) == 3


async def test_a_busy_installation_cannot_starve_a_quiet_one(harness: Harness) -> None:
    settings = harness.settings.model_copy(update={"installation_concurrency": 1, "concurrency": 3})
    github = harness.github
    for number in (8, 9, 10, 11):
        github.add_pull(REPO, number, head=harness.repo.head, base=harness.repo.base, title=f"Change {number}",
                        body="Customers can enter a discount code worth a percentage of the cart total.")
    reached, release = threading.Event(), threading.Event()

    def hold() -> None:
        reached.set()
        release.wait(120)

    github.on_first_git_request = hold

    async def post(number: int, installation: int) -> str:
        payload = pr_payload("opened.payload.json", head=harness.repo.head, base=harness.repo.base, number=number)
        payload["installation"]["id"] = installation
        delivery = str(uuid.uuid4())
        assert (await harness.post("pull_request", payload, delivery=delivery)).status_code == 202
        return delivery

    async def factory(_settings: object) -> SqliteDbom:
        return harness.dbom

    options = worker_options(settings, dbom_factory=factory)
    options["on_shutdown"] = None
    worker = Worker(**options, handle_signals=False, poll_delay=0.05)
    task = asyncio.create_task(worker.main())

    def state(number: int) -> str | None:
        runs = [r for r in github.check_runs.values() if pr_from_external_id(r["external_id"]) == number]
        return runs[0]["status"] if runs else None

    try:
        first = await post(8, BUSY)
        assert await asyncio.to_thread(reached.wait, 120)  # BUSY's first review holds its only slot
        busy = [await post(n, BUSY) for n in (9, 10)]
        quiet = await post(11, QUIET)
        for _ in range(1200):
            if state(11) == "completed":
                break
            await asyncio.sleep(0.1)
        # the quiet installation was reviewed while the busy one's first review still ran
        assert state(11) == "completed"
        assert not release.is_set() and state(8) == "in_progress"
        assert state(9) is None and state(10) is None  # deferred before touching GitHub
        release.set()
        jobs = [Job(j, harness.redis, _queue_name=settings.queue_name) for j in (first, *busy, quiet)]
        for _ in range(1200):
            if all([await j.result_info() for j in jobs]):
                break
            await asyncio.sleep(0.1)
        infos = [await j.result_info() for j in jobs]
        assert all(i is not None and i.success for i in infos), infos
        # waiting for a slot is not a failed try: no job came closer to max_tries
        assert [i.job_try for i in infos if i is not None] == [1, 1, 1, 1]
        assert all(state(n) == "completed" for n in (8, 9, 10, 11))
        assert await fairness.running(harness.redis, Keys(settings.redis_prefix), BUSY) == 0
    finally:
        release.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await worker.close()
