"""SIGTERM: the receiver finishes the request in flight; the worker finishes its job or re-queues it.

Real processes (``logomesh serve`` / ``logomesh worker``) are signalled; the review is held mid-clone by the
fake GitHub's git endpoint, so the signal lands while the job is running.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx
from arq.jobs import Job, JobStatus

from app.settings import Settings
from tests.app.conftest import PR, SECRET, Harness, pr_payload
from tests.ops.conftest import ROOT

HOLD_SECONDS = 120  # upper bound only: the gate is released as soon as the test has sent its signal


def _env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "LOGOMESH_APP_ID": str(settings.app_id), "LOGOMESH_PRIVATE_KEY": settings.private_key_pem(),
           "LOGOMESH_WEBHOOK_SECRET": SECRET, "LOGOMESH_PUBLIC_URL": settings.public_url or "",
           "LOGOMESH_GITHUB_API_URL": settings.github_api_url, "LOGOMESH_GITHUB_WEB_URL": settings.github_web_url,
           "LOGOMESH_REDIS_URL": settings.redis_url, "LOGOMESH_REDIS_PREFIX": settings.redis_prefix,
           "LOGOMESH_QUEUE_NAME": settings.queue_name, "LOGOMESH_HOME": str(settings.home),
           "LOGOMESH_DATABASE_URL": settings.database_url, "LOGOMESH_SANDBOX": "off", "LOGOMESH_EMBEDDING": "off",
           "LOGOMESH_RED_TEAM": "off", "LOGOMESH_METRICS_PORT": "0", "LOGOMESH_MAX_TRIES": "3",
           "LOGOMESH_JOB_TIMEOUT_SECONDS": "120"}
    env.update(extra)
    return env


def _spawn_worker(settings: Settings, log: Path, **extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "app.cli.main", "worker"], env=_env(settings, **extra), cwd=ROOT,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)


class Gate:
    """Holds the first git request (the clone, after the check run started) until released."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> None:
        self.reached.set()
        self.release.wait(HOLD_SECONDS)


async def _queue_review(harness: Harness) -> str:
    delivery = str(uuid.uuid4())
    payload = pr_payload("opened.payload.json", head=harness.repo.head, base=harness.repo.base)
    assert (await harness.post("pull_request", payload, delivery=delivery)).status_code == 202
    return delivery


async def _stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return await asyncio.to_thread(proc.wait, 60)


async def test_sigterm_mid_job_requeues_it_and_the_next_worker_completes_it_once(
        harness: Harness, tmp_path: Path) -> None:
    gate = Gate()
    harness.github.on_first_git_request = gate
    delivery = await _queue_review(harness)
    log = tmp_path / "worker.log"
    proc = _spawn_worker(harness.settings, log, LOGOMESH_DRAIN_SECONDS="0")
    try:
        assert await asyncio.to_thread(gate.reached.wait, HOLD_SECONDS), log.read_text()[-3000:]
        code = await _stop(proc)
    finally:
        gate.release.set()
        if proc.poll() is None:
            proc.kill()
    assert code == 0, log.read_text()[-3000:]
    assert "cancelled, will be run again" in log.read_text()
    job = Job(delivery, harness.redis, _queue_name=harness.settings.queue_name)
    assert await job.status() == JobStatus.queued  # not lost
    runs = harness.github.check_runs_for(harness.repo.head)
    assert [r["status"] for r in runs] == ["in_progress"]

    await harness.run_worker()

    info = await job.result_info()
    assert info is not None and info.success and info.job_try == 2
    runs = harness.github.check_runs_for(harness.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed"  # the same run, found again and completed
    comments = [c for c in harness.github.comments.values() if c["issue_number"] == PR]
    assert len(comments) == 1


async def test_sigterm_with_a_drain_window_lets_the_running_job_finish(harness: Harness, tmp_path: Path) -> None:
    gate = Gate()
    harness.github.on_first_git_request = gate
    delivery = await _queue_review(harness)
    log = tmp_path / "worker.log"
    proc = _spawn_worker(harness.settings, log, LOGOMESH_DRAIN_SECONDS="120")
    try:
        assert await asyncio.to_thread(gate.reached.wait, HOLD_SECONDS), log.read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        gate.release.set()  # the job goes on after the signal
        code = await asyncio.to_thread(proc.wait, 120)
    finally:
        gate.release.set()
        if proc.poll() is None:
            proc.kill()
    assert code == 0, log.read_text()[-3000:]
    job = Job(delivery, harness.redis, _queue_name=harness.settings.queue_name)
    info = await job.result_info()
    assert info is not None and info.success and info.job_try == 1, log.read_text()[-3000:]
    runs = harness.github.check_runs_for(harness.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connect(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=2)
    except OSError:
        return None


async def test_sigterm_lets_the_receiver_answer_the_request_in_flight(harness: Harness, tmp_path: Path) -> None:
    port = _free_port()
    env = _env(harness.settings, LOGOMESH_HOST="127.0.0.1", LOGOMESH_PORT=str(port))
    proc = subprocess.Popen([sys.executable, "-m", "app.cli.main", "serve"], env=env, cwd=ROOT,
                            stdout=(tmp_path / "serve.log").open("wb"), stderr=subprocess.STDOUT)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=2) as client:
            for _ in range(300):
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError((tmp_path / "serve.log").read_text()[-3000:])
        payload = pr_payload("opened.payload.json", head=harness.repo.head, base=harness.repo.base)
        body = json.dumps(payload).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        delivery = str(uuid.uuid4())
        harness.job_ids.append(delivery)
        head = (f"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nX-GitHub-Event: pull_request\r\nX-GitHub-Delivery: {delivery}\r\n"
                f"X-Hub-Signature-256: {signature}\r\nConnection: close\r\n\r\n").encode()
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(head + body[:100])  # the request is in flight: headers read, body still coming
        await asyncio.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        # shutdown has begun once the listener is closed to new connections
        for _ in range(300):
            probe = await asyncio.to_thread(_connect, port)
            if probe is None:
                break
            probe.close()
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the receiver kept accepting connections after SIGTERM")
        assert proc.poll() is None  # still draining the request in flight
        sock.sendall(body[100:])
        answer = b""
        while chunk := await asyncio.to_thread(sock.recv, 65536):
            answer += chunk
        sock.close()
        assert answer.startswith(b"HTTP/1.1 202"), answer[:300]
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["status"] == "queued"
        # uvicorn re-raises the signal once drained, so a supervisor sees "terminated by SIGTERM"
        assert await asyncio.to_thread(proc.wait, 30) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert await harness.redis.exists(f"arq:job:{delivery}")
