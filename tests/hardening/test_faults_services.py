"""The court's adapters failing under the App: the Docker engine unreachable, Anthropic down or overloaded."""

from __future__ import annotations

import json
import socket
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from tests.app.conftest import REPO, Harness, pr_payload, score_cells, verdict_title
from tests.hardening.conftest import Tally
from tests.judges.fake_anthropic import FakeAnthropic, FakeAnthropicServer, Step

pytestmark = pytest.mark.hardening("fault")


def _last_evaluation(tmp_path: Path) -> dict[str, Any]:
    with sqlite3.connect(tmp_path / "dbom.db") as db:
        evaluation: dict[str, Any] = json.loads(
            db.execute("SELECT evaluation FROM dbom ORDER BY seq DESC LIMIT 1").fetchone()[0])
        return evaluation


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_docker_unreachable_means_t_not_measured_and_a_neutral_verdict(
        harness: Harness, tally: Tally, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = harness
    tally("Docker daemon unreachable (DOCKER_HOST at a dead socket)")
    monkeypatch.setenv("DOCKER_HOST", f"unix:///tmp/logomesh-no-docker-{uuid.uuid4().hex}.sock")
    h.settings = h.settings.model_copy(update={"sandbox": "auto"})
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    run = h.github.check_runs_for(h.repo.head)[0]
    evaluation = _last_evaluation(tmp_path)
    assert run["status"] == "completed"
    assert evaluation["measured"]["testing"] is False
    assert score_cells(run["output"]["summary"])["T tests"] == "not measured"
    assert "Tests not measured" in run["output"]["summary"].split("**Evidence**")[1]
    assert run["conclusion"] == "neutral" and evaluation["verdict"] == "neutral", evaluation["verdict_reasons"]


@pytest.mark.parametrize("outage", ["connection refused", "529 overloaded", "slow past the timeout"])
async def test_anthropic_down_falls_back_to_the_offline_judges_and_says_so(
        harness: Harness, tally: Tally, tmp_path: Path, outage: str) -> None:
    h = harness
    tally(f"Anthropic {outage}")
    fake = FakeAnthropic()
    server = FakeAnthropicServer(fake)
    server.start()
    try:
        if outage == "529 overloaded":
            fake.script("*", *[Step(kind="error", status=529, error_type="overloaded_error", retry_after="0")] * 40)
        elif outage == "slow past the timeout":
            fake.script("*", *[Step(kind="slow", delay=3.0)] * 40)
        base_url = f"http://127.0.0.1:{_dead_port()}" if outage == "connection refused" else server.base_url
        h.settings = h.settings.model_copy(update={
            "llm_provider": "anthropic", "llm_base_url": base_url, "llm_api_key": SecretStr(fake.api_key),
            "llm_max_retries": 1, "llm_timeout_seconds": 1.0})
        await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
        await h.run_worker()
    finally:
        server.stop()
    assert outage == "connection refused" or fake.requests, "the fault never reached the client"
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["status"] == "completed" and verdict_title(run["output"]["title"]), run["output"]
    evaluation = _last_evaluation(tmp_path)
    recorded = json.dumps(evaluation).lower()
    assert "offline" in recorded, evaluation["notices"]
    comment = next(c["body"] for c in h.github.comments.values() if c["repo"] == REPO)
    assert "offline" in comment.lower()
