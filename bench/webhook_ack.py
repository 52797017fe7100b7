"""The receiver's acknowledgement side by side with a bare Starlette endpoint that reads the body and answers 202.

Both servers run as their own uvicorn processes, each answering ``GET /cpu`` with its own CPU time in seconds
(``time.process_time``: nanoseconds, where ``/proc``'s clock ticks of 10 ms would blur a 0.5 ms request); the
receiver logs as ``logomesh serve`` does (``app.logs.configure``: a JSON line per delivery, on stdout, here
/dev/null). The same signed ``pull_request`` deliveries (each with a fresh delivery id) are sent at 1, 8 and 32
concurrent clients.
Printed: p50/p99 latency and server CPU per request for each, and the ratios. Real Redis (``LOGOMESH_TEST_REDIS_URL``,
default DB 15); only keys under a random prefix are written, and removed.

    PYTHONPATH=$PWD .venv/bin/python bench/webhook_ack.py [REQUESTS_PER_LEVEL]
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.app.conftest import pr_payload

SERVER = r"""
import os, sys, time, uvicorn
from pathlib import Path
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
if sys.argv[1] == "bare":
    async def hook(request: Request):
        await request.body()
        return JSONResponse({"status": "queued"}, status_code=202)
    app = Starlette(routes=[Route("/webhook", hook, methods=["POST"])])
else:
    from app.logs import configure
    from app.settings import Settings
    from app.receiver.asgi import create_app
    settings = Settings(_env_file=None, webhook_secret="bench", redis_url=os.environ["URL"],
                        redis_prefix=os.environ["PREFIX"], queue_name=os.environ["PREFIX"] + "queue",
                        public_url="http://bench", home=Path("/tmp/logomesh-bench"))
    configure(settings)  # JSON lines on stdout, secrets scrubbed: what `logomesh serve` runs
    app = create_app(settings)
async def cpu(request: Request):
    return PlainTextResponse(repr(time.process_time()))
app.router.routes.append(Route("/cpu", cpu, methods=["GET"]))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="error", access_log=False)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _cpu_seconds(url: str) -> float:
    async with httpx.AsyncClient() as client:
        return float((await client.get(url.replace("/webhook", "/cpu"))).text)


async def _wait(url: str) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(200):
            try:
                await client.post(url, content=b"{}")
                return
            except httpx.HTTPError:
                await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} never answered")


async def _load(url: str, body: bytes, signature: str, clients: int, total: int) -> list[float]:
    times: list[float] = []
    per_client = total // clients

    async def one_client(client: httpx.AsyncClient) -> None:
        for _ in range(per_client):
            started = time.perf_counter()
            answer = await client.post(url, content=body, headers={
                "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": signature, "Content-Type": "application/json"})
            times.append(time.perf_counter() - started)
            assert answer.status_code == 202, answer.text

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        await asyncio.gather(*(one_client(client) for _ in range(clients)))
    return times


async def main(total: int) -> None:
    url = os.environ.get("LOGOMESH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    prefix = f"logomesh-bench:{uuid.uuid4().hex[:8]}:"
    body = json.dumps(pr_payload("opened.payload.json", head="a" * 40, base="b" * 40)).encode()
    signature = "sha256=" + hmac.new(b"bench", body, hashlib.sha256).hexdigest()
    env = {**os.environ, "URL": url, "PREFIX": prefix, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    servers = {}
    for name in ("bare", "logomesh"):
        port = _free_port()
        proc = subprocess.Popen([sys.executable, "-c", SERVER, name, str(port)], env=env,
                                stdout=subprocess.DEVNULL)  # the receiver logs a line per delivery, as in production
        servers[name] = (proc, f"http://127.0.0.1:{port}/webhook")
    try:
        for _, target in servers.values():
            await _wait(target)
        print(f"{total} signed pull_request deliveries per level, body {len(body)} bytes")
        print(f"{'clients':>7} | {'server':<8} | {'p50 ms':>7} | {'p99 ms':>7} | {'CPU ms/req':>10}")
        for clients in (1, 8, 32):
            row: dict[str, tuple[float, float, float]] = {}
            for name in ("bare", "logomesh", "bare", "logomesh"):  # interleaved, the second round counts
                _, target = servers[name]
                await _load(target, body, signature, clients, max(clients, total // 10))  # warm
                cpu = await _cpu_seconds(target)
                times = sorted(await _load(target, body, signature, clients, total))
                spent = await _cpu_seconds(target) - cpu
                row[name] = (statistics.median(times) * 1000, times[int(len(times) * 0.99) - 1] * 1000,
                             spent / len(times) * 1000)
            for name, (p50, p99, cpu_ms) in row.items():
                print(f"{clients:>7} | {name:<8} | {p50:>7.2f} | {p99:>7.2f} | {cpu_ms:>10.3f}")
            (b50, b99, bcpu), (l50, l99, lcpu) = row["bare"], row["logomesh"]
            print(f"{clients:>7} | ratio    | {l50 / b50:>6.2f}x | {l99 / b99:>6.2f}x | {lcpu / bcpu:>9.2f}x"
                  f"   goals: p50 <= 1.3x, CPU <= 2x")
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(10)
        redis = aioredis.from_url(url)  # type: ignore[no-untyped-call]
        keys = [k async for k in redis.scan_iter(match=prefix + "*")]
        queued = await redis.zrange(prefix + "queue", 0, -1)
        keys += [b"arq:job:" + q for q in queued]
        for chunk in range(0, len(keys), 1000):
            await redis.delete(*keys[chunk:chunk + 1000])
        await redis.aclose()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 400))
