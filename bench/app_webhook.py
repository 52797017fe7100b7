"""How fast the receiver answers a signed ``pull_request`` webhook (verify, dedupe, route, enqueue).

Real uvicorn and real Redis (``LOGOMESH_TEST_REDIS_URL``, default DB 15; only keys under a random prefix are
touched and removed). Prints p50/p95 in milliseconds and the ratio to GitHub's 10 s webhook timeout.

    PYTHONPATH=$PWD .venv/bin/python bench/app_webhook.py [N]
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import httpx
import redis.asyncio as aioredis

from app.receiver.asgi import create_app
from app.settings import Settings
from tests.app.conftest import ServerThread, pr_payload

GITHUB_TIMEOUT_MS = 10_000


async def main(n: int) -> None:
    url = os.environ.get("LOGOMESH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    prefix = f"logomesh-bench:{uuid.uuid4().hex[:8]}:"
    settings = Settings(_env_file=None, webhook_secret="bench", redis_url=url, redis_prefix=prefix,
                        queue_name=prefix + "queue", public_url="http://bench", home=Path("/tmp/logomesh-bench"))
    body = json.dumps(pr_payload("opened.payload.json", head="a" * 40, base="b" * 40)).encode()
    signature = "sha256=" + hmac.new(b"bench", body, hashlib.sha256).hexdigest()
    times: list[float] = []
    ids: list[str] = []
    with ServerThread(create_app(settings)) as base:
        async with httpx.AsyncClient(base_url=base) as client:
            for _ in range(n):
                delivery = str(uuid.uuid4())
                ids.append(delivery)
                started = time.perf_counter()
                answer = await client.post("/webhook", content=body, headers={
                    "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery,
                    "X-Hub-Signature-256": signature, "Content-Type": "application/json"})
                times.append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 202, answer.text
    redis = aioredis.from_url(url)  # type: ignore[no-untyped-call]
    keys = [k async for k in redis.scan_iter(match=prefix + "*")] + [f"arq:job:{i}" for i in ids]
    await redis.delete(*keys)
    await redis.aclose()
    times.sort()
    p50, p95 = statistics.median(times), times[int(len(times) * 0.95) - 1]
    print(f"webhooks: {n}, body {len(body)} bytes")
    print(f"answer p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    print(f"p95 is {GITHUB_TIMEOUT_MS / p95:.0f}x under GitHub's 10 s delivery timeout")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
