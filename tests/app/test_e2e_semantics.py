"""The App under GitHub's real semantics, end to end (signed webhook → uvicorn → Redis/arq → worker → fake GitHub):
races between pushes and running reviews, late events, another app's marker, GitHub and git failing for a while,
a pull request closed mid-review."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from app.queue import Keys
from checks.render import MARKER
from tests.app.conftest import PR, REPO, Harness, pr_payload, verdict_title


def _post_sync(h: Harness, payload: dict[str, Any], delivery: str) -> None:
    """A webhook GitHub sends from its own thread (here: while the git server is busy with the first clone)."""
    body = json.dumps(payload).encode()
    answer = httpx.post(f"{h.url}/webhook", content=body, headers={
        "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": h.sign(body),
        "Content-Type": "application/json"})
    assert answer.status_code == 202
    h.job_ids.append(delivery)


async def test_a_push_during_a_long_review_cancels_it_and_the_new_head_shows_in_progress_at_once(
        harness: Harness) -> None:
    h = harness
    h.settings = h.settings.model_copy(update={"concurrency": 2})
    release = threading.Event()
    pushed: list[float] = []

    def push_then_stall() -> None:
        # the first review is cloning; the author pushes; the first review would take 60 s more
        h.github.add_pull(REPO, PR, head=h.repo.head2, base=h.repo.base, title="Add percentage discount codes",
                          body="Customers can enter a percentage discount code.")
        pushed.append(time.monotonic())
        _post_sync(h, pr_payload("synchronize.payload.json", head=h.repo.head2, base=h.repo.base), "push-2")
        release.wait(60)

    h.github.on_first_git_request = push_then_stall
    try:
        await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
        await h.run_worker()
        finished = time.monotonic()
    finally:
        release.set()
    old = h.github.check_runs_for(h.repo.head)
    new = h.github.check_runs_for(h.repo.head2)
    assert len(old) == 1 and old[0]["conclusion"] == "neutral"
    assert old[0]["output"]["title"] == f"Superseded by {h.repo.head2[:12]}"
    assert len(new) == 1 and new[0]["status"] == "completed" and verdict_title(new[0]["output"]["title"])
    assert new[0]["history"][0]["status"] == "in_progress"
    # the new head's run existed long before the old review could have ended on its own (60 s of stalled clone),
    # and the whole exchange ended without waiting the old review out
    assert h.github.created_at[new[0]["id"]] - pushed[0] < 30 and finished - pushed[0] < 50
    assert len(h.comments()) == 1 and h.repo.head2[:12] in h.comments()[0]["body"]
    assert len(await h.dbom.records()) == 1


async def test_a_late_event_never_moves_the_review_back_to_an_older_head(harness: Harness) -> None:
    h = harness
    h.github.add_pull(REPO, PR, head=h.repo.head2, base=h.repo.base, title="Add percentage discount codes",
                      body="Customers can enter a percentage discount code.")
    await h.post("pull_request", pr_payload("synchronize.payload.json", head=h.repo.head2, base=h.repo.base))
    # delivered after the synchronize, but written before it: an edit and a push that still carry the old head
    edited = pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)
    edited["action"] = "edited"
    edited["changes"] = {"title": {"from": "Old title"}}
    await h.post("pull_request", edited)
    await h.post("pull_request", pr_payload("synchronize.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    assert h.github.check_runs_for(h.repo.head) == []  # the old head was never reviewed again
    runs = h.github.check_runs_for(h.repo.head2)
    assert len(runs) == 2 and all(verdict_title(r["output"]["title"]) for r in runs)  # push and edit
    assert not any("Superseded" in r["output"]["title"] for r in runs)
    comments = h.comments()
    assert len(comments) == 1 and h.repo.head2[:12] in comments[0]["body"]


@pytest.mark.parametrize("author", [{"login": "mallory", "type": "User"},
                                    {"login": "other-app[bot]", "type": "Bot"}], ids=["a person", "another app"])
async def test_a_comment_with_our_marker_by_anyone_else_is_left_alone(harness: Harness, author: dict[str, str]) -> None:
    h = harness
    h.github.comments[1] = {"id": 1, "repo": REPO, "issue_number": PR, "body": f"copied: {MARKER}",
                            "user": author, "edits": 0}
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    assert h.github.comments[1]["edits"] == 0 and h.github.comments[1]["body"] == f"copied: {MARKER}"
    assert len(h.comments()) == 2
    ours = [c for c in h.comments() if c["user"]["login"] == "logomesh[bot]"]
    assert len(ours) == 1 and MARKER in ours[0]["body"]
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["status"] == "completed" and verdict_title(run["output"]["title"])


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.github
    import app.worker.jobs

    monkeypatch.setattr(app.worker.jobs, "OUTAGE_BASE_SECONDS", 0.2)
    monkeypatch.setattr(app.github, "_retry_after", lambda response: 0.0)


@pytest.mark.usefixtures("quick_backoff")
async def test_a_github_outage_after_the_decision_retries_the_publication_not_the_review(harness: Harness) -> None:
    h = harness
    # more failures than max_tries (3): the retries of an outage are bounded by time, not by tries
    h.github.fail("issues/create-comment", 502, times=4)
    h.github.fail("checks/update", 502, times=3)
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    run = h.github.check_runs_for(h.repo.head)
    assert len(run) == 1 and run[0]["status"] == "completed" and verdict_title(run[0]["output"]["title"])
    assert len(h.comments()) == 1
    assert len(await h.dbom.records()) == 1  # one decision, one record
    fetches = [r for r in h.github.git_requests if r["path"].endswith("git-upload-pack")]
    assert len(fetches) == 1  # reviewed (cloned) once
    assert not await h.redis.keys(Keys(h.settings.redis_prefix).publication("*"))


@pytest.mark.usefixtures("quick_backoff")
async def test_an_outage_longer_than_the_budget_ends_with_a_completed_run(harness: Harness) -> None:
    h = harness
    h.settings = h.settings.model_copy(update={"github_outage_seconds": 2})
    h.github.fail("issues/create-comment", 500, times=1000)
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    run = h.github.check_runs_for(h.repo.head)[0]
    # the verdict reached the check run before the comment failed: it is not turned neutral afterwards
    assert run["status"] == "completed" and verdict_title(run["output"]["title"])
    assert [c["status"] for c in run["history"]].count("completed") == 1
    assert len(await h.dbom.records()) == 1 and h.comments() == []


async def test_a_git_server_error_during_the_clone_is_retried(harness: Harness) -> None:
    h = harness
    h.github.git_failures = 2
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["status"] == "completed" and verdict_title(run["output"]["title"])
    assert [r.get("status") for r in h.github.git_requests[:2]] == [500, 500]


async def test_a_pull_request_closed_during_the_review_gets_no_verdict_and_no_comment(harness: Harness) -> None:
    h = harness

    def close() -> None:
        h.github.pulls[(REPO, PR)]["state"] = "closed"

    h.github.on_first_git_request = close
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert run["output"]["title"] == "The pull request was closed"
    assert h.comments() == [] and await h.dbom.records() == []


async def test_the_llm_button_is_offered_only_with_an_llm(harness: Harness) -> None:
    h = harness
    h.settings = h.settings.model_copy(update={"llm_api_key": SecretStr("sk-ant-test")})
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    run = h.github.check_runs_for(h.repo.head)[0]
    assert [a["identifier"] for a in run["actions"]] == ["rerun-llm"]


async def test_a_worker_is_ready_only_when_its_start_up_is_done(harness: Harness) -> None:
    import socket

    from app import metrics
    from app.worker.jobs import worker_options

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    port = metrics.serve_worker_metrics(port, "127.0.0.1") or port  # one endpoint per process
    metrics.WORKER_READY.clear()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        assert (await client.get("/healthz")).status_code == 200
        starting = await client.get("/readyz")
        assert starting.status_code == 503 and "loading the model" in starting.text
        options = worker_options(harness.settings.model_copy(update={"metrics_port": 0}))
        ctx: dict[str, Any] = {}
        await options["on_startup"](ctx)
        assert (await client.get("/readyz")).status_code == 200
        assert "logomesh_jobs" in (await client.get("/metrics")).text
        await ctx["dbom"].close()
