"""Processes dying under a review: a worker SIGKILLed mid-review, Redis restarted while a job runs and while
webhooks arrive. Every accepted delivery ends reviewed once in effect: one check run per delivery, completed;
one comment per PR."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from arq.worker import Worker

from app.receiver.asgi import create_app
from app.settings import Settings
from app.worker.jobs import worker_options
from app.worker.publish import pr_from_external_id
from tests.app.conftest import REPO, Harness, ServerThread, pr_payload, verdict_title
from tests.hardening.conftest import Tally

pytestmark = pytest.mark.hardening("fault")
ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("app_id", "private_key", "webhook_secret", "github_api_url", "github_web_url", "public_url", "redis_url",
          "redis_prefix", "queue_name", "database_url", "home", "sandbox", "embedding", "red_team", "llm_provider",
          "max_tries", "job_timeout_seconds", "concurrency", "job_liveness_seconds", "installation_concurrency")


def _env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGOMESH_")}
    for name in FIELDS:
        value = getattr(settings, name)
        value = value.get_secret_value() if hasattr(value, "get_secret_value") else value
        env[f"LOGOMESH_{name.upper()}"] = str(value)
    env["PYTHONPATH"] = str(ROOT)
    return env


async def _burst(settings: Settings, dbom: object, poll_delay: float = 0.2) -> Worker:
    async def factory(_settings: Settings) -> object:
        return dbom

    options = worker_options(settings, dbom_factory=factory)  # type: ignore[arg-type]
    options["on_shutdown"] = None
    worker = Worker(**options, burst=True, handle_signals=False, poll_delay=poll_delay)
    try:
        await worker.main()
    finally:
        await worker.close()
    return worker


async def _kill_a_worker_mid_review(h: Harness, tmp_path: Path, payload: dict[str, Any]) -> None:
    """Start a real worker process, post ``payload`` and SIGKILL the worker as it clones (check run in progress)."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.hardening.worker_proc", str(tmp_path / "dbom.db")],
                            cwd=ROOT, env=_env(h.settings), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killed = []

    def kill_mid_review() -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed.append(h.github.check_runs_for(payload["pull_request"]["head"]["sha"])[0]["status"])

    h.github.on_first_git_request = kill_mid_review
    try:
        assert (await h.post("pull_request", payload)).status_code == 202
        for _ in range(300):
            if killed:
                break
            await asyncio.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert killed == ["in_progress"], "the worker was not killed mid-review"


# The job timeout stays long (as in production) and claims live 3 s past their last heartbeat: a dead worker's job,
# lease and lock must pass on within seconds. Before heartbeats they were held for the job timeout (~15 minutes);
# the bound below is far above a review here and far below that.
KILLED_SETTINGS = {"job_timeout_seconds": 900, "job_liveness_seconds": 3}
TAKEOVER_BOUND = 120


async def _killed(h: Harness, tally: Tally, tmp_path: Path, case: str, **settings: Any) -> Harness:
    """The harness with production's job timeout, after a worker was SIGKILLed reviewing PR 7's head."""
    tally(case)
    h.settings = h.settings.model_copy(update={**KILLED_SETTINGS, **settings})
    await _kill_a_worker_mid_review(h, tmp_path, pr_payload("opened.payload.json", head=h.repo.head,
                                                            base=h.repo.base))
    return h


async def test_a_worker_sigkilled_mid_review_is_replaced_and_the_review_lands_once(
        harness: Harness, tally: Tally, tmp_path: Path) -> None:
    h = await _killed(harness, tally, tmp_path, "worker SIGKILLed while cloning (check run in progress)")
    worker = await asyncio.wait_for(_burst(h.settings, h.dbom), TAKEOVER_BOUND)
    assert worker.jobs_complete == 1 and worker.jobs_failed == 0
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed" and verdict_title(runs[0]["output"]["title"])
    assert len(h.github.posted("checks/create")) == 1  # the new worker found the run by external_id
    assert len([c for c in h.github.comments.values() if c["repo"] == REPO]) == 1
    assert len(await h.dbom.records()) == 1


async def test_a_push_after_a_worker_died_is_reviewed_and_the_dead_run_completed(
        harness: Harness, tally: Tally, tmp_path: Path) -> None:
    h = await _killed(harness, tally, tmp_path, "worker SIGKILLed mid-review, then a push to the same PR")
    h.github.pulls[(REPO, 7)]["head"] = h.repo.head2
    pushed = pr_payload("synchronize.payload.json", head=h.repo.head2, base=h.repo.base)
    assert (await h.post("pull_request", pushed)).status_code == 202
    await asyncio.wait_for(_burst(h.settings, h.dbom), TAKEOVER_BOUND)
    new = h.github.check_runs_for(h.repo.head2)
    assert len(new) == 1 and new[0]["status"] == "completed" and verdict_title(new[0]["output"]["title"])
    old = h.github.check_runs_for(h.repo.head)
    assert len(old) == 1 and old[0]["status"] == "completed", old  # never left in progress
    assert old[0]["conclusion"] == "neutral" and old[0]["output"]["title"].startswith("Superseded by")
    assert len(await h.dbom.records()) == 1  # only the current head was decided


async def test_a_dead_workers_slot_does_not_block_another_pr_of_its_installation(
        harness: Harness, tally: Tally, tmp_path: Path) -> None:
    harness.github.add_pull(REPO, 8, head=harness.repo.head2, base=harness.repo.base,
                            title="Parse the percentage safely", body="Use float instead of eval.")
    h = await _killed(harness, tally, tmp_path, "worker SIGKILLed mid-review while another PR of the installation "
                      "waits for a slot", installation_concurrency=1)
    waiting = pr_payload("opened.payload.json", head=h.repo.head2, base=h.repo.base, number=8)
    assert (await h.post("pull_request", waiting)).status_code == 202
    worker = await asyncio.wait_for(_burst(h.settings, h.dbom), TAKEOVER_BOUND)
    assert worker.jobs_failed == 0
    for head in (h.repo.head, h.repo.head2):
        runs = h.github.check_runs_for(head)
        assert len(runs) == 1 and runs[0]["status"] == "completed" and verdict_title(runs[0]["output"]["title"])
    assert len(await h.dbom.records()) == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateRedis:
    """A redis-server of our own (AOF on, fsync always) that a test may stop and start."""

    def __init__(self, root: Path) -> None:
        self.port, self.dir = _free_port(), root
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(self.port),
                                      "--bind", "127.0.0.1", "--dir", str(self.dir), "--appendonly", "yes",
                                      "--appendfsync", "always", "--save", "", "--protected-mode", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()  # SIGTERM: redis fsyncs the AOF and exits
            self.proc.wait(10)
            self.proc = None


INTERNAL = ("Error 111", "ConnectionError", "Connect call failed", "could not review")


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
@pytest.mark.parametrize("outage", [15, 120])
async def test_redis_away_while_a_job_runs_and_webhooks_arrive(harness: Harness, tally: Tally, tmp_path: Path,
                                                               outage: int) -> None:
    """Redis stops mid-review for ``outage`` seconds (longer than a job's claims live, at 120 s) while a webhook
    arrives: the worker keeps running and publishes the review in flight once Redis is back; the receiver spools
    the delivery it cannot enqueue (GitHub would not redeliver a 503) and admits it when Redis returns."""
    h = harness
    tally(f"Redis stopped for {outage} s while a review runs and a webhook arrives")
    redis = PrivateRedis(tmp_path)
    redis.start()
    # a home of its own: the harness's receiver (on the shared Redis) must not drain this receiver's spool
    settings = h.settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{redis.port}/0",
                                             "job_timeout_seconds": 600, "home": tmp_path / "private-home"})
    h.github.add_pull(REPO, 8, head=h.repo.head2, base=h.repo.base, title="Parse the percentage safely",
                      body="Use float instead of eval.")
    during: list[httpx.Response] = []

    def post(url: str, event: str, payload: dict[str, Any], delivery: str) -> httpx.Response:
        body = __import__("json").dumps(payload).encode()
        return httpx.post(f"{url}/webhook", content=body, timeout=10, headers={
            "X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": h.sign(body),
            "Content-Type": "application/json"})

    pr7 = pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)
    pr8 = pr_payload("opened.payload.json", head=h.repo.head2, base=h.repo.base, number=8)
    d7, d8 = f"r7-{uuid.uuid4().hex[:8]}", f"r8-{uuid.uuid4().hex[:8]}"
    try:
        with ServerThread(create_app(settings, env_path=tmp_path / ".env")) as url:
            back = threading.Event()

            def outage_mid_review() -> None:
                try:
                    redis.stop()
                    started = time.monotonic()
                    during.append(post(url, "pull_request", pr8, d8))
                    time.sleep(max(0.0, outage - (time.monotonic() - started)))
                    redis.start()
                finally:
                    back.set()

            # the outage runs beside the review (the clone itself goes on)
            h.github.on_first_git_request = lambda: threading.Thread(target=outage_mid_review, daemon=True).start()
            assert (await asyncio.to_thread(post, url, "pull_request", pr7, d7)).status_code == 202
            first = await _burst(settings, h.dbom)  # raises if the worker died with Redis
            assert first.jobs_failed == 0
            assert await asyncio.to_thread(back.wait, outage + 60), "Redis never came back"
            assert [r.status_code for r in during] == [202] and during[0].json()["status"] == "spooled", during
            for _ in range(100):  # the receiver admits the spooled delivery once Redis answers
                again = await asyncio.to_thread(post, url, "pull_request", pr8, d8)
                if again.status_code == 200:
                    break
                await asyncio.sleep(0.1)
            assert again.json()["status"] == "duplicate", again.text  # admitted from the spool: a replay is one
            second = await _burst(settings, h.dbom)
            assert second.jobs_failed == 0
    finally:
        redis.stop()
    for head, pr in ((h.repo.head, 7), (h.repo.head2, 8)):
        runs = h.github.check_runs_for(head)
        assert len(runs) == 1, (pr, runs)
        assert runs[0]["status"] == "completed" and verdict_title(runs[0]["output"]["title"]), runs[0]["output"]
        shown = runs[0]["output"]["summary"] + (runs[0]["output"].get("text") or "")
        assert not [part for part in (*INTERNAL, f":{redis.port}") if part in shown], shown
        comments = [c for c in h.github.comments.values() if c["repo"] == REPO and c["issue_number"] == pr]
        assert len(comments) == 1, (pr, comments)
    assert len(await h.dbom.records()) == 2  # one DBOM per decision


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
async def test_worker_processes_outlive_a_redis_outage_during_a_burst_of_webhooks(harness: Harness, tally: Tally,
                                                                                   tmp_path: Path) -> None:
    """Two real ``logomesh worker``-style processes, Redis stopped for 15 s while a burst of six PRs is delivered:
    every delivery is spooled, admitted once Redis is back and reviewed once; both workers are still running."""
    h = harness
    tally("Redis stopped for 15 s during a burst of webhooks, two worker processes")
    redis = PrivateRedis(tmp_path)
    redis.start()
    h.settings = h.settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{redis.port}/0",
                                               "home": tmp_path / "private-home", "job_timeout_seconds": 600})
    numbers = range(11, 17)
    for number in numbers:
        h.github.add_pull(REPO, number, head=h.repo.head2, base=h.repo.base, title="Parse the percentage safely",
                          body="Use float instead of eval.")
    workers = [subprocess.Popen([sys.executable, "-m", "tests.hardening.worker_proc", str(tmp_path / "dbom.db")],
                                cwd=ROOT, env=_env(h.settings), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(2)]
    answers: list[httpx.Response] = []
    try:
        with ServerThread(create_app(h.settings, env_path=tmp_path / ".env")) as url:
            await asyncio.sleep(3)  # the workers are up and polling
            redis.stop()
            for number in numbers:
                body = __import__("json").dumps(pr_payload("opened.payload.json", head=h.repo.head2,
                                                           base=h.repo.base, number=number)).encode()
                headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": f"b{number}-{uuid.uuid4().hex[:6]}",
                           "X-Hub-Signature-256": h.sign(body), "Content-Type": "application/json"}
                answers.append(await asyncio.to_thread(httpx.post, f"{url}/webhook", content=body, timeout=10,
                                                       headers=headers))
            await asyncio.sleep(15)
            redis.start()
            for _ in range(600):
                runs = [r for r in h.github.check_runs_for(h.repo.head2) if r["status"] == "completed"]
                if len(runs) >= len(numbers):
                    break
                await asyncio.sleep(0.2)
            assert [w.poll() for w in workers] == [None, None], "a worker process died with Redis"
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait(30)
        redis.stop()
    assert [a.json().get("status") for a in answers] == ["spooled"] * len(numbers)
    by_pr: dict[int | None, list[dict[str, Any]]] = {}
    for run in h.github.check_runs_for(h.repo.head2):
        by_pr.setdefault(pr_from_external_id(run.get("external_id")), []).append(run)
    assert sorted(n for n in by_pr if n is not None) == list(numbers), by_pr.keys()
    for number in numbers:
        (run,) = by_pr[number]  # reviewed once
        assert run["status"] == "completed" and verdict_title(run["output"]["title"]), run["output"]
