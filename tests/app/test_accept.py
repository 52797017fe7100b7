"""A delivery is accepted in one round trip to Redis, and the job it enqueues is arq's own (real Redis)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from arq import create_pool
from arq.connections import ArqRedis
from arq.jobs import Job, JobStatus

from app.queue import JOB_NAME, Keys, accept_delivery, redis_settings
from app.receiver.routing import ReviewRequest
from app.settings import Settings
from tests.app.conftest import REDIS_URL


@pytest.fixture
async def pool(settings: Settings) -> AsyncIterator[ArqRedis]:
    redis = await create_pool(redis_settings(settings.model_copy(update={"redis_url": REDIS_URL})))
    yield redis
    keys = [k async for k in redis.scan_iter(match=settings.redis_prefix + "*")]
    keys += [k async for k in redis.scan_iter(match="arq:job:accept-*")]
    if keys:
        await redis.delete(*keys)
    await redis.aclose()


def _request(delivery: str, kind: str = "review") -> ReviewRequest:
    return ReviewRequest(kind, delivery, 4242, "octo/shop", 7, "a" * 40, "opened")  # type: ignore[arg-type]


async def test_one_round_trip_dedupes_announces_and_enqueues_an_arq_job(pool: ArqRedis, settings: Settings,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = pool.execute_command

    async def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(args[0]))
        return await real(*args, **kwargs)  # type: ignore[no-untyped-call]

    await pool.script_flush()  # a server that has not seen the script yet: its text crosses the wire once
    monkeypatch.setattr(pool, "execute_command", counting)
    ttl = timedelta(days=30)
    first = f"accept-{uuid.uuid4()}"
    assert await accept_delivery(pool, settings, "pull_request", _request(first), ttl) == "queued"
    assert [c.upper() for c in calls] == ["EVALSHA", "SCRIPT LOAD", "EVALSHA"], calls
    calls.clear()
    delivery = f"accept-{uuid.uuid4()}"
    assert await accept_delivery(pool, settings, "pull_request", _request(delivery), ttl) == "queued"
    assert len(calls) == 1 and calls[0].upper() == "EVALSHA", calls
    assert await accept_delivery(pool, settings, "pull_request", _request(delivery), ttl) == "duplicate"
    monkeypatch.setattr(pool, "execute_command", real)

    keys = Keys(settings.redis_prefix)
    assert await pool.get(keys.latest("octo/shop", 7)) == b"a" * 40
    assert await pool.get(keys.sha("octo/shop", "a" * 40)) == b"7"
    assert 29 * 86400 < await pool.ttl(keys.delivery(delivery)) <= 30 * 86400
    job = Job(delivery, pool, _queue_name=settings.queue_name)
    assert await job.status() == JobStatus.queued
    info = await job.info()
    assert info is not None and info.function == JOB_NAME and info.args == (_request(delivery).to_dict(),)
    assert 0 < await pool.pttl(f"arq:job:{delivery}") <= 86_400_000


async def test_a_recheck_announces_its_sha_but_not_a_new_latest_head(pool: ArqRedis, settings: Settings) -> None:
    delivery = f"accept-{uuid.uuid4()}"
    keys = Keys(settings.redis_prefix)
    assert await accept_delivery(pool, settings, "issue_comment", _request(delivery, "recheck"),
                                 timedelta(days=30)) == "queued"
    assert await pool.get(keys.latest("octo/shop", 7)) is None
    assert await pool.get(keys.sha("octo/shop", "a" * 40)) == b"7"


async def test_a_job_arq_already_holds_is_not_enqueued_twice(pool: ArqRedis, settings: Settings) -> None:
    delivery = f"accept-{uuid.uuid4()}"
    await pool.enqueue_job(JOB_NAME, {}, _job_id=delivery, _queue_name=settings.queue_name)
    await pool.delete(Keys(settings.redis_prefix).delivery(delivery))
    assert await accept_delivery(pool, settings, "pull_request", _request(delivery),
                                 timedelta(days=30)) == "already queued"
