"""The cases the App must get right, end to end through real uvicorn, Redis, arq and git."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import structlog
import structlog.testing

from app.queue import Keys
from checks.render import MARKER
from tests.app.conftest import (
    BASE_FILES,
    INSTALLATION,
    PR,
    REPO,
    Harness,
    fixture_payload,
    git,
    pr_payload,
    verdict_title,
)


def _recheck_payload(login: str, comment_id: int = 99001) -> dict[str, Any]:
    payload = fixture_payload("issue_comment", "pull-request-issue-comment.json")
    payload["installation"] = {"id": INSTALLATION}
    payload["repository"]["full_name"] = REPO
    payload["issue"]["number"] = PR
    payload["comment"]["body"] = "Thanks!\n/recheck\n"
    payload["comment"]["id"] = comment_id
    payload["comment"]["user"]["login"] = login
    payload["comment"]["author_association"] = "OWNER"  # GitHub's field must not be trusted for access
    return payload


def _check_run_payload(name: str, head: str) -> dict[str, Any]:
    payload = fixture_payload("check_run", name)
    payload["installation"] = {"id": INSTALLATION}
    payload["repository"]["full_name"] = REPO
    payload["check_run"]["head_sha"] = head
    return payload


async def test_synchronize_supersedes_an_in_flight_review(harness: Harness) -> None:
    h = harness
    opened = pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)
    synchronize = pr_payload("synchronize.payload.json", head=h.repo.head2, base=h.repo.base)
    body = json.dumps(synchronize).encode()

    def push_while_cloning() -> None:
        # GitHub delivers the synchronize while the first review is cloning.
        h.github.add_pull(REPO, PR, head=h.repo.head2, base=h.repo.base, title="Add percentage discount codes",
                          body="Customers can enter a percentage discount code.")
        answer = httpx.post(f"{h.url}/webhook", content=body, headers={
            "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "sync-delivery-1",
            "X-Hub-Signature-256": h.sign(body), "Content-Type": "application/json"})
        assert answer.status_code == 202

    h.job_ids.append("sync-delivery-1")
    h.github.on_first_git_request = push_while_cloning
    assert (await h.post("pull_request", opened)).status_code == 202
    await h.run_worker()

    old = h.github.check_runs_for(h.repo.head)
    new = h.github.check_runs_for(h.repo.head2)
    assert len(old) == 1 and len(new) == 1
    assert old[0]["status"] == "completed" and old[0]["conclusion"] == "neutral"
    assert old[0]["output"]["title"] == f"Superseded by {h.repo.head2[:12]}"
    assert f"superseded by {h.repo.head2}" in old[0]["output"]["summary"]
    assert new[0]["status"] == "completed" and new[0]["conclusion"] in {"success", "neutral", "failure"}
    assert verdict_title(new[0]["output"]["title"])
    comments = h.comments()
    assert len(comments) == 1 and h.repo.head2[:12] in comments[0]["body"]
    records = await h.dbom.records()
    assert len(records) == 1  # the superseded review wrote no DBOM
    base_config = BASE_FILES[".logomesh.yml"].encode()
    assert records[0]["entanglement"]["config_sha256"] == hashlib.sha256(base_config).hexdigest()


async def test_recheck_by_a_reader_is_refused_and_by_a_writer_runs(harness: Harness) -> None:
    h = harness
    h.github.permissions[(REPO, "reader")] = "read"
    h.github.permissions[(REPO, "writer")] = "write"
    assert (await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head,
                                                    base=h.repo.base))).status_code == 202
    await h.run_worker()
    assert len(h.github.check_runs_for(h.repo.head)) == 1

    assert (await h.post("issue_comment", _recheck_payload("reader", 501))).status_code == 202
    with structlog.testing.capture_logs() as logs:
        await h.run_worker()
    refusals = [e for e in logs if e["event"].startswith("/recheck refused")]
    assert len(refusals) == 1 and refusals[0]["requester"] == "reader" and refusals[0]["pr"] == PR
    assert [r["content"] for r in h.github.reactions if r["comment_id"] == 501] == ["confused"]
    assert len(h.github.check_runs_for(h.repo.head)) == 1
    replies = [c for c in h.comments() if MARKER not in c["body"]]  # the refusal says why, to the person
    assert len(replies) == 1 and replies[0]["body"].startswith("@reader `/recheck` was not run: only people "
                                                              "with write access")
    assert (await h.post("issue_comment", _recheck_payload("reader", 503))).status_code == 202
    await h.run_worker()
    assert len([c for c in h.comments() if MARKER not in c["body"]]) == 1  # said once a day, never spammed

    assert (await h.post("issue_comment", _recheck_payload("writer", 502))).status_code == 202
    await h.run_worker()
    assert [r["content"] for r in h.github.reactions if r["comment_id"] == 502] == ["rocket"]
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 2 and all(r["status"] == "completed" for r in runs)
    comments = [c for c in h.comments() if MARKER in c["body"]]
    assert len(comments) == 1 and comments[0]["edits"] == 1  # edited in place, never reposted
    perms = h.github.posted("repos/get-collaborator-permission-level")
    assert [c.path_params["username"] for c in perms] == ["reader", "reader", "writer"]


async def test_check_run_rerequested_with_empty_pull_requests_finds_the_pr(harness: Harness) -> None:
    h = harness
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    payload = _check_run_payload("rerequested.payload.json", h.repo.head)
    assert payload["check_run"]["pull_requests"] == []
    assert (await h.post("check_run", payload)).status_code == 202
    await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 2 and all(r["status"] == "completed" for r in runs)

    unknown = _check_run_payload("rerequested.payload.json", "f" * 40)
    assert (await h.post("check_run", unknown)).status_code == 202
    await h.run_worker()
    assert h.github.check_runs_for("f" * 40) == []


async def test_requested_action_reruns(harness: Harness) -> None:
    h = harness
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    payload = _check_run_payload("requested_action.payload.json", h.repo.head)
    payload["requested_action"]["identifier"] = "rerun-llm"
    payload["check_run"]["external_id"] = h.github.check_runs_for(h.repo.head)[0]["external_id"]
    payload["check_run"]["pull_requests"] = []
    assert (await h.post("check_run", payload)).status_code == 202
    await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 2 and all(r["status"] == "completed" for r in runs)


async def test_replayed_delivery_is_dropped(harness: Harness) -> None:
    h = harness
    payload = pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)
    with structlog.testing.capture_logs() as logs:
        first = await h.post("pull_request", payload, delivery="replayed-1")
    queued = next(e for e in logs if e["event"] == "queued")
    assert queued["github_event"] == "pull_request" and queued["delivery_id"] == "replayed-1"  # not overwritten
    again = await h.post("pull_request", payload, delivery="replayed-1")
    assert first.status_code == 202 and again.status_code == 200 and again.json()["status"] == "duplicate"
    ttl = await h.redis.ttl(Keys(h.settings.redis_prefix).delivery("replayed-1"))
    assert ttl >= timedelta(days=30).total_seconds() - 60
    worker = await h.run_worker()
    assert len(h.github.check_runs_for(h.repo.head)) == 1
    assert worker.jobs_complete == 1 and worker.jobs_failed == 0
    assert worker.health_check_key == Keys(h.settings.redis_prefix).health()


async def test_signatures_bodies_and_headers_are_checked(harness: Harness) -> None:
    h = harness
    payload = pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)
    body = json.dumps(payload).encode()
    assert (await h.post("pull_request", body, signature="")).status_code == 401
    assert (await h.post("pull_request", body, signature=h.sign(body, "wrong"))).status_code == 401
    assert (await h.post("pull_request", body, signature=h.sign(body + b" "))).status_code == 401
    malformed = b'{"action": "opened", '
    assert (await h.post("pull_request", malformed)).status_code == 400
    assert (await h.post("pull_request", b"[1, 2]")).status_code == 400
    assert (await h.post("pull_request", body, headers={"X-GitHub-Event": ""})).status_code == 400
    assert (await h.post("pull_request", body, headers={"X-GitHub-Delivery": "bad id!"})).status_code == 400
    huge = b'{"pad": "' + b"x" * (300 * 1024) + b'"}'
    assert (await h.post("pull_request", huge)).status_code == 413
    # the receiver signs nothing itself: the exact bytes must verify, pretty-printed or not
    pretty = json.dumps(payload, indent=2).encode()
    assert (await h.post("pull_request", pretty)).status_code == 202


async def test_routing_of_real_payloads(harness: Harness) -> None:
    h = harness
    for name in ("payload.json", "with-app_id.payload.json", "with-organization.payload.json"):
        answer = await h.post("ping", fixture_payload("ping", name))
        assert answer.status_code == 200 and answer.json()["status"] == "pong"
    cases = [
        ("installation", fixture_payload("installation", "created.payload.json"), "recorded"),
        ("installation", fixture_payload("installation", "deleted.payload.json"), "recorded"),
        ("installation_repositories", fixture_payload("installation_repositories", "added.payload.json"), "recorded"),
        ("pull_request", fixture_payload("pull_request", "ready_for_review.payload.json"), "ignored"),
        ("pull_request", fixture_payload("pull_request", "closed.payload.json"), "ignored"),
        ("issue_comment", fixture_payload("issue_comment", "created.payload.json"), "ignored"),
        ("issue_comment", fixture_payload("issue_comment", "pull-request-issue-comment.json"), "ignored"),
        ("check_suite", fixture_payload("check_suite", "requested.payload.json"), "ignored"),
        ("pull_request", pr_payload("pull_request_edited_base.json", head=h.repo.head, base=h.repo.base), "ignored"),
        ("pull_request", pr_payload("pull_request_edited_base.json", head=h.repo.head, base=h.repo.base,
                                    draft=False), "queued"),
        ("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base, draft=True),
         "ignored"),
        ("pull_request", pr_payload("pull_request_edited_title.json", head=h.repo.head, base=h.repo.base,
                                    draft=False), "queued"),
        ("pull_request", pr_payload("opened.with-null-body.json", head=h.repo.head, base=h.repo.base), "queued"),
        ("check_suite", {**fixture_payload("check_suite", "rerequested.payload.json"),
                         "installation": {"id": INSTALLATION}}, "queued"),
        ("star", {"action": "created"}, "ignored"),
    ]
    for event, payload, expected in cases:
        answer = await h.post(event, payload)
        assert answer.status_code == 202, (event, answer.text)
        assert answer.json()["status"] == expected, (event, payload.get("action"), answer.json())
    note = await h.redis.hgetall(Keys(h.settings.redis_prefix).installation(957387))  # type: ignore[misc]
    assert note[b"account"] == b"Codertocat"


async def test_a_repo_whose_clone_fails_gets_a_completed_check_run_saying_so(harness: Harness) -> None:
    h = harness
    missing = "octo/vanished"
    h.github.add_pull(missing, PR, head=h.repo.head, base=h.repo.base, title="t", body="b")
    payload = pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)
    payload["repository"]["full_name"] = missing
    assert (await h.post("pull_request", payload)).status_code == 202
    await h.run_worker()
    runs = [r for r in h.github.check_runs.values() if r["repo"] == missing]
    assert len(runs) == 1
    assert runs[0]["status"] == "completed" and runs[0]["conclusion"] == "neutral"
    assert "could not be cloned" in runs[0]["output"]["summary"]
    assert not [c for c in h.github.comments.values() if c["repo"] == missing]


async def test_github_errors_are_retried_and_a_run_never_stays_in_progress(harness: Harness) -> None:
    h = harness
    # a secondary rate limit twice (githubkit retries once honouring retry-after, then arq defers the job),
    # then a 500 on the completion: the job is retried and finds its check run again by external_id
    h.github.fail("checks/create", 403, times=2, retry_after=1)
    h.github.fail("checks/update", 500, times=2)
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed"
    assert verdict_title(runs[0]["output"]["title"])
    assert len(h.comments()) == 1
    statuses = [(c.op_id, c.status) for c in h.github.calls if c.status >= 400]
    assert statuses.count(("checks/create", 403)) == 2 and statuses.count(("checks/update", 500)) == 2
    assert len(h.github.posted("checks/create")) == 1  # the retried job found its run by external_id


async def test_a_persistent_github_failure_still_completes_the_run(harness: Harness) -> None:
    h = harness
    h.github.fail("checks/list-for-ref", 404, times=1)  # before the review: the run cannot even be found
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    assert h.github.check_runs_for(h.repo.head) == [] and h.comments() == []


async def test_a_failing_comment_leaves_the_verdict_on_the_check_run(harness: Harness) -> None:
    h = harness
    h.github.fail("issues/list-comments", 404, times=1)
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed" and verdict_title(runs[0]["output"]["title"])
    assert h.comments() == []


async def test_health_and_readiness(harness: Harness) -> None:
    async with httpx.AsyncClient(base_url=harness.url) as client:
        assert (await client.get("/healthz")).status_code == 200
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["status"] == "ready"


async def test_a_review_waits_for_the_per_pr_lock_with_its_run_in_progress(harness: Harness) -> None:
    import asyncio

    from redis.asyncio.lock import Lock

    from app.github import GitHubApp
    from app.receiver.routing import ReviewRequest
    from app.worker.jobs import review_pull_request
    from app.worker.publish import Publisher

    h = harness
    lock = Lock(h.redis, Keys(h.settings.redis_prefix).lock(REPO, PR), timeout=60)
    assert await lock.acquire(blocking=False)
    github = GitHubApp(h.settings)
    ctx = {"settings": h.settings, "github": github, "redis": h.redis, "job_try": 1, "job_id": "lock-test",
           "publisher": Publisher(github, h.settings.check_name), "dbom": h.dbom}
    request = ReviewRequest("review", "lock-test", INSTALLATION, REPO, PR, h.repo.head, "test")
    job = asyncio.ensure_future(review_pull_request(ctx, request.to_dict()))
    for _ in range(100):  # the run is shown in progress while the job waits for the other review
        await asyncio.sleep(0.1)
        if h.github.check_runs_for(h.repo.head):
            break
    assert [r["status"] for r in h.github.check_runs_for(h.repo.head)] == ["in_progress"] and not job.done()
    await lock.release()
    assert (await asyncio.wait_for(job, 120)).split()[0] in {"pass", "neutral", "fail"}
    assert h.github.check_runs_for(h.repo.head)[0]["status"] == "completed"
    assert int(await h.redis.get("arq:retry:lock-test") or 0) == 0  # waiting spent no try


async def test_an_invalid_base_config_completes_the_run_with_the_reason(harness: Harness, tmp_path: Path) -> None:
    h = harness
    work = tmp_path / "badconf"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / ".logomesh.yml").write_text("version: 1\nthresholds: {pass: 7}\n")
    (work / "a.py").write_text("x = 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    base = git(work, "rev-parse", "HEAD")
    (work / "a.py").write_text("x = 2\n")
    git(work, "commit", "-q", "-am", "head")
    head = git(work, "rev-parse", "HEAD")
    bare = h.repo.bare.parent / "badconf.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    h.github.add_pull("octo/badconf", PR, head=head, base=base, title="t", body="b")
    payload = pr_payload("opened.payload.json", head=head, base=base)
    payload["repository"]["full_name"] = "octo/badconf"
    await h.post("pull_request", payload)
    await h.run_worker()
    run = h.github.check_runs_for(head)[0]
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "invalid field 'thresholds.pass'" in run["output"]["summary"]
    assert "Fix the configuration on the base branch" in run["output"]["summary"]


async def test_a_review_past_its_deadline_completes_the_run(harness: Harness) -> None:
    import time

    h = harness
    h.settings = h.settings.model_copy(update={"job_timeout_seconds": 10})
    h.github.on_first_git_request = lambda: time.sleep(9)  # a git server that stalls past the deadline (8 s)
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker()
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "did not finish within 10s" in run["output"]["summary"]
