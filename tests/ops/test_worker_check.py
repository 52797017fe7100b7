"""``logomesh worker --check``: arq's health check against real Redis, as the compose and k8s probes call it."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from arq.worker import Worker

from app.queue import Keys
from app.settings import Settings
from app.worker.jobs import worker_options
from tests.ops.conftest import REDIS_URL, cli


def _env(prefix: str, redis_url: str = REDIS_URL) -> dict[str, str]:
    return {"LOGOMESH_REDIS_URL": redis_url, "LOGOMESH_REDIS_PREFIX": prefix,
            "LOGOMESH_QUEUE_NAME": prefix + "queue"}


async def test_check_fails_without_a_worker_and_passes_while_one_runs(prefix: str, redis: aioredis.Redis) -> None:
    down = await asyncio.to_thread(cli, "worker", "--check", env=_env(prefix))
    assert down.returncode == 1, down.stderr

    settings = Settings(_env_file=None, redis_url=REDIS_URL, redis_prefix=prefix,
                        queue_name=prefix + "queue", sandbox="off", embedding="off")
    options = worker_options(settings)
    options["on_startup"] = options["on_shutdown"] = None
    worker = Worker(**options, handle_signals=False, poll_delay=0.05)
    task = asyncio.create_task(worker.main())
    try:
        for _ in range(200):
            if await redis.exists(Keys(prefix).health()):
                break
            await asyncio.sleep(0.05)
        up = await asyncio.to_thread(cli, "worker", "--check", env=_env(prefix))
        assert up.returncode == 0, up.stderr
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await worker.close()
    # a stopped worker removes its key: the probe fails again at once, not after the key's TTL
    gone = await asyncio.to_thread(cli, "worker", "--check", env=_env(prefix))
    assert gone.returncode == 1


def test_check_exits_1_when_redis_does_not_answer(prefix: str) -> None:
    result = cli("worker", "--check", env=_env(prefix, "redis://127.0.0.1:1/0"))
    assert result.returncode == 1
    assert "Redis does not answer" in result.stderr


def test_check_does_not_need_the_app_key(prefix: str) -> None:
    # no LOGOMESH_APP_ID / PRIVATE_KEY: the probe must still answer (here 1: no worker), never 2
    result = cli("worker", "--check", env=_env(prefix))
    assert result.returncode == 1
