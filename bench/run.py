"""LogoMesh's operations benchmark: one entry point, one table.

1. webhook ack latency p50/p99 and throughput under a bounded loopback load (signed real payloads, an asyncio
   httpx client), side by side with a bare Starlette endpoint that answers 202 — and the ratio;
2. end-to-end review time per stage of the bundled example PR (examples/make_example.py), offline judges,
   real sandbox and embedding model when available, p50/p95;
3. a burst of PR events (200 by default) against 1 and then 2 ``logomesh worker --burst`` processes: all
   reviewed, none lost, none duplicated, and the throughput ratio;
4. the worker's RSS with the embedding model loaded.

Real Redis (``LOGOMESH_TEST_REDIS_URL``, default DB 15, keys under a random prefix, removed afterwards), real
uvicorn, real git over smart HTTP from the fake GitHub of tests/app (the only fake). Per-section details:
bench/app_webhook.py (single-client latency), bench/sandbox_overhead.py, bench/rationale.py, bench/red_agent.py,
bench/dbom_ledger.py.

    PYTHONPATH=$PWD .venv/bin/python bench/run.py [--webhooks 2000] [--reviews 5] [--burst 200] [--skip ...]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aioredis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.receiver.asgi import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402
from examples.make_example import PR_BODY, PR_TITLE  # noqa: E402
from examples.make_example import build as build_example  # noqa: E402
from tests.app.conftest import ServerThread, generate_app_key, git, pr_payload  # noqa: E402
from tests.app.fakegithub import FakeGitHub  # noqa: E402

REDIS_URL = os.environ.get("LOGOMESH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
SECRET = "bench-secret"
REPO = "octo/shop"
APP_ID = 123
ROWS: list[tuple[str, str, str]] = []


def row(section: str, what: str, value: str) -> None:
    ROWS.append((section, what, value))
    print(f"  {section:<10} {what:<46} {value}", flush=True)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


async def cleanup(prefix: str, job_ids: list[str]) -> None:
    redis = aioredis.from_url(REDIS_URL)  # type: ignore[no-untyped-call]
    keys = [k async for k in redis.scan_iter(match=prefix + "*")]
    for j in job_ids:
        keys += [f"arq:job:{j}", f"arq:result:{j}", f"arq:retry:{j}", f"arq:in-progress:{j}"]
    for i in range(0, len(keys), 500):
        await redis.delete(*keys[i:i + 500])
    await redis.aclose()


# --- 1. webhook ack -------------------------------------------------------------------------------------------

async def load(base: str, bodies: list[tuple[bytes, dict[str, str]]], concurrency: int, budget_s: float
               ) -> tuple[list[float], float, int]:
    latencies: list[float] = []
    errors = 0
    queue: asyncio.Queue[tuple[bytes, dict[str, str]]] = asyncio.Queue()
    for item in bodies:
        queue.put_nowait(item)
    deadline = time.perf_counter() + budget_s
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=10) as client:
        async def user() -> None:
            nonlocal errors
            while not queue.empty() and time.perf_counter() < deadline:
                body, headers = queue.get_nowait()
                started = time.perf_counter()
                answer = await client.post("/webhook", content=body, headers=headers)
                latencies.append((time.perf_counter() - started) * 1000)
                errors += answer.status_code != 202

        started = time.perf_counter()
        await asyncio.gather(*(user() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return latencies, elapsed, errors


def bare_app() -> Starlette:
    async def accept(request: Request) -> Response:
        await request.body()
        return JSONResponse({"status": "queued"}, status_code=202)

    return Starlette(routes=[Route("/webhook", accept, methods=["POST"])])


async def bench_webhooks(n: int, concurrency: int, budget_s: float) -> None:
    print(f"1. webhook ack: {n} signed pull_request deliveries, {concurrency} concurrent, ≤{budget_s:.0f}s each")
    prefix = f"logomesh-bench:{uuid.uuid4().hex[:8]}:"
    home = Path(tempfile.mkdtemp(prefix="logomesh-bench-"))
    settings = Settings(_env_file=None, webhook_secret=SECRET, redis_url=REDIS_URL, redis_prefix=prefix,
                        queue_name=prefix + "queue", public_url="http://bench", home=home)
    payload = pr_payload("opened.payload.json", head="a" * 40, base="b" * 40)
    ids: list[str] = []
    bodies = []
    for i in range(n):
        payload["number"] = payload["pull_request"]["number"] = 1 + i
        body = json.dumps(payload).encode()
        delivery = str(uuid.uuid4())
        ids.append(delivery)
        bodies.append((body, {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery,
                              "X-Hub-Signature-256": sign(body), "Content-Type": "application/json"}))
    results = {}
    try:
        for name, app in (("bare", bare_app()), ("logomesh", create_app(settings, env_path=home / ".env"))):
            with ServerThread(app) as base:
                await load(base, bodies[:20], 4, 10)  # warm-up (the bare app ignores the duplicates)
                if name == "logomesh":
                    await cleanup(prefix, ids)
                results[name] = await load(base, bodies, concurrency, budget_s)
    finally:
        await cleanup(prefix, ids)
    for name in ("bare", "logomesh"):
        lat, elapsed, errors = results[name]
        row("ack", f"{name}: requests / errors", f"{len(lat)} / {errors}")
        row("ack", f"{name}: p50 / p99 ms", f"{pct(lat, 50):.2f} / {pct(lat, 99):.2f}")
        row("ack", f"{name}: throughput req/s", f"{len(lat) / elapsed:.0f}")
    (bl, be, _), (ll, le, _) = results["bare"], results["logomesh"]
    row("ack", "ratio logomesh/bare p50 latency", f"{pct(ll, 50) / pct(bl, 50):.2f}x")
    row("ack", "ratio bare/logomesh throughput", f"{(len(bl) / be) / (len(ll) / le):.2f}x")


# --- shared: the example repo behind the fake GitHub -------------------------------------------------------

def example_github(root: Path, public_pem: str) -> tuple[FakeGitHub, str, str]:
    work = build_example(root / "work")
    base, head = git(work, "rev-parse", "main"), git(work, "rev-parse", "feature/discounts")
    bare = root / "repos" / "octo" / "shop.git"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    return FakeGitHub(app_id=APP_ID, public_key_pem=public_pem, repos_root=root / "repos"), base, head


def pr_event(number: int, installation: int, head: str, base: str) -> tuple[bytes, dict[str, str], str]:
    payload = pr_payload("opened.payload.json", head=head, base=base, number=number)
    payload["installation"]["id"] = installation
    body = json.dumps(payload).encode()
    delivery = str(uuid.uuid4())
    return body, {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery,
                  "X-Hub-Signature-256": sign(body), "Content-Type": "application/json"}, delivery


# --- 2. per-stage review time ------------------------------------------------------------------------------

async def bench_stages(reviews: int) -> None:
    from arq.worker import Worker
    from prometheus_client import REGISTRY

    from app.metrics import STAGES
    from app.worker.jobs import worker_options

    print(f"2. review stages: the example PR reviewed {reviews} times (offline judges)")
    root = Path(tempfile.mkdtemp(prefix="logomesh-bench-"))
    private, public = generate_app_key()
    github, base, head = example_github(root, public)
    prefix = f"logomesh-bench:{uuid.uuid4().hex[:8]}:"
    ids: list[str] = []
    per_stage: dict[str, list[float]] = {s: [] for s in STAGES}
    with ServerThread(github.app()) as gh_url:
        github.add_pull(REPO, 1, head=head, base=base, title=PR_TITLE, body=PR_BODY)
        settings = Settings(_env_file=None, app_id=APP_ID, private_key=private, webhook_secret=SECRET,
                            github_api_url=gh_url, github_web_url=gh_url, public_url="http://bench",
                            redis_url=REDIS_URL, redis_prefix=prefix, queue_name=prefix + "queue", home=root / "home",
                            llm_provider="offline", concurrency=1, metrics_port=0)
        try:
            with ServerThread(create_app(settings, env_path=root / ".env")) as url:
                async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                    for i in range(reviews + 1):  # the first review warms the model, image and caches
                        body, headers, delivery = pr_event(1, 1, head, base)
                        ids.append(delivery)
                        assert (await client.post("/webhook", content=body, headers=headers)).status_code == 202
                        before = {s: REGISTRY.get_sample_value("logomesh_job_stage_seconds_sum", {"stage": s}) or 0
                                  for s in STAGES}
                        counts = {s: REGISTRY.get_sample_value("logomesh_job_stage_seconds_count", {"stage": s}) or 0
                                  for s in STAGES}
                        worker = Worker(**worker_options(settings), burst=True, handle_signals=False, poll_delay=0.05)
                        try:
                            await worker.main()
                        finally:
                            await worker.close()
                        if i == 0:
                            continue
                        for s in STAGES:
                            if (REGISTRY.get_sample_value("logomesh_job_stage_seconds_count", {"stage": s}) or 0) \
                                    > counts[s]:
                                per_stage[s].append((REGISTRY.get_sample_value(
                                    "logomesh_job_stage_seconds_sum", {"stage": s}) or 0) - before[s])
        finally:
            await cleanup(prefix, ids)
    runs = github.check_runs_for(head)
    row("stages", "check runs completed", f"{sum(r['status'] == 'completed' for r in runs)} of {len(runs)}")
    if runs:
        row("stages", "verdict (title)", runs[-1]["output"]["title"][:40])
    for s in STAGES:
        values = per_stage[s]
        if values:
            row("stages", f"{s} p50 / p95 s", f"{pct(values, 50):.3f} / {pct(values, 95):.3f}")
        else:
            row("stages", f"{s}", "not run")


# --- 3. burst against 1 vs 2 workers ------------------------------------------------------------------------

async def burst(n: int, workers: int, root: Path, github: FakeGitHub, gh_url: str, private: str, head: str,
                base: str) -> dict[str, Any]:
    prefix = f"logomesh-bench:{uuid.uuid4().hex[:8]}:"
    home = root / f"home-{workers}"
    settings = Settings(_env_file=None, app_id=APP_ID, private_key=private, webhook_secret=SECRET,
                        github_api_url=gh_url, github_web_url=gh_url, public_url="http://bench",
                        redis_url=REDIS_URL, redis_prefix=prefix, queue_name=prefix + "queue", home=home)
    first = 1000 * workers
    for i in range(n):
        github.add_pull(REPO, first + i, head=head, base=base, title=PR_TITLE, body=PR_BODY)
    ids: list[str] = []
    # the ledger (and its signing key) exists before two processes race to create it
    from app.ledger import open_ledger

    ledger = await open_ledger(settings)
    await ledger.close()
    try:
        with ServerThread(create_app(settings, env_path=root / ".env")) as url:
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                for i in range(n):
                    body, headers, delivery = pr_event(first + i, 1 + i % 10, head, base)
                    ids.append(delivery)
                    assert (await client.post("/webhook", content=body, headers=headers)).status_code == 202
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LOGOMESH_APP_ID": str(APP_ID), "LOGOMESH_PRIVATE_KEY": private,
               "LOGOMESH_PUBLIC_URL": "http://bench", "LOGOMESH_GITHUB_API_URL": gh_url,
               "LOGOMESH_GITHUB_WEB_URL": gh_url, "LOGOMESH_REDIS_URL": REDIS_URL, "LOGOMESH_REDIS_PREFIX": prefix,
               "LOGOMESH_QUEUE_NAME": prefix + "queue", "LOGOMESH_HOME": str(home), "LOGOMESH_SANDBOX": "off",
               "LOGOMESH_EMBEDDING": "off", "LOGOMESH_RED_TEAM": "off", "LOGOMESH_METRICS_PORT": "0",
               "LOGOMESH_CONCURRENCY": "2"}
        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-m", "app.cli.main", "worker", "--burst"], env=env, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(workers)]
        codes = [await asyncio.to_thread(p.wait, 1800) for p in procs]
        elapsed = time.perf_counter() - started
        redis = aioredis.from_url(REDIS_URL)  # type: ignore[no-untyped-call]
        from arq.jobs import Job

        infos = [await Job(j, redis, _queue_name=prefix + "queue").result_info() for j in ids]
        await redis.aclose()
    finally:
        await cleanup(prefix, ids)
    numbers = range(first, first + n)
    from app.worker.publish import pr_from_external_id

    runs: dict[int, list[dict[str, Any]]] = {}
    for r in github.check_runs.values():
        runs.setdefault(pr_from_external_id(r["external_id"]) or -1, []).append(r)
    comments: dict[int, int] = {}
    for c in github.comments.values():
        comments[c["issue_number"]] = comments.get(c["issue_number"], 0) + 1
    return {
        "exit codes": codes, "elapsed": elapsed,
        "reviewed": sum(1 for i in infos if i is not None and i.success and str(i.result).split(" ")[0]
                        in {"pass", "neutral", "fail"}),
        "lost": sum(1 for i in infos if i is None),
        "duplicated check runs": sum(1 for k in numbers if len(runs.get(k, [])) > 1),
        "duplicated comments": sum(1 for k in numbers if comments.get(k, 0) > 1),
        "completed": sum(1 for k in numbers if [r["status"] for r in runs.get(k, [])] == ["completed"]),
    }


async def bench_burst(n: int) -> None:
    print(f"3. burst: {n} pull_request events (10 installations) against 1, then 2 worker processes")
    root = Path(tempfile.mkdtemp(prefix="logomesh-bench-"))
    private, public = generate_app_key()
    github, base, head = example_github(root, public)
    results = {}
    with ServerThread(github.app()) as gh_url:
        for workers in (1, 2):
            results[workers] = await burst(n, workers, root, github, gh_url, private, head, base)
            r = results[workers]
            row("burst", f"{workers} worker(s): reviewed / lost of {n}", f"{r['reviewed']} / {r['lost']}")
            row("burst", f"{workers} worker(s): duplicated runs / comments",
                f"{r['duplicated check runs']} / {r['duplicated comments']}")
            row("burst", f"{workers} worker(s): check runs completed once", f"{r['completed']}")
            row("burst", f"{workers} worker(s): wall s / reviews per s",
                f"{r['elapsed']:.1f} / {n / r['elapsed']:.2f}")
    row("burst", "throughput ratio 2 workers / 1 worker", f"{results[1]['elapsed'] / results[2]['elapsed']:.2f}x")


# --- 4. worker RSS --------------------------------------------------------------------------------------------

RSS_PROBE = """
import asyncio, sys
from app.settings import Settings
from app.worker.startup import start_up
import app.worker.jobs  # noqa: F401 - everything a worker imports
def rss():
    fields = dict(l.split(':', 1) for l in open('/proc/self/status'))
    return int(fields['VmRSS'].split()[0]) // 1024, int(fields['VmHWM'].split()[0]) // 1024
before = rss()
if sys.argv[1] == 'on':
    asyncio.run(start_up(Settings(_env_file=None, sandbox='off', embedding='on')))
    from app.review.embeddings import SentenceEmbedder
    asyncio.run(SentenceEmbedder.load(None).embed(['a discount code for the cart'] * 64))
print(*before, *rss())
"""


def bench_rss() -> None:
    print("4. worker RSS (MiB)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for mode in ("off", "on"):
        out = subprocess.run([sys.executable, "-c", RSS_PROBE, mode], capture_output=True, text=True, env=env,
                             cwd=ROOT, check=True).stdout.strip().splitlines()[-1].split()
        _, _, rss, peak = (int(v) for v in out)
        label = "model loaded + 64 texts embedded" if mode == "on" else "worker imports, no model"
        row("rss", f"{label}: RSS / peak", f"{rss} / {peak}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webhooks", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--budget", type=float, default=30.0, help="seconds at most per webhook load run")
    parser.add_argument("--reviews", type=int, default=5)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--skip", nargs="*", default=[], choices=["ack", "stages", "burst", "rss"])
    args = parser.parse_args()
    import logging

    import structlog

    # the receiver's and the worker's info lines would drown the table
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.basicConfig(level=logging.WARNING)
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
          f"Python {platform.python_version()}, {platform.platform()}")
    if "ack" not in args.skip:
        await bench_webhooks(args.webhooks, args.concurrency, args.budget)
    if "stages" not in args.skip:
        await bench_stages(args.reviews)
    if "burst" not in args.skip:
        await bench_burst(args.burst)
    if "rss" not in args.skip:
        bench_rss()
    print()
    print(f"| {'section':<8} | {'measure':<46} | value |")
    print(f"|{'-' * 10}|{'-' * 48}|-------|")
    for section, what, value in ROWS:
        print(f"| {section:<8} | {what:<46} | {value} |")


if __name__ == "__main__":
    asyncio.run(main())
