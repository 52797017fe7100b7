"""The receiver's acknowledgement, end to end in process (real Redis): what it costs in round trips, what it
enqueues, what it logs, and which bodies it refuses."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog.testing
from arq.jobs import Job, JobStatus
from starlette.applications import Starlette

from app.queue import JOB_NAME, Keys
from app.receiver.asgi import create_app
from app.receiver.routing import ReviewRequest
from app.settings import Settings
from tests.app.conftest import INSTALLATION, PR, REPO, SECRET, pr_payload

HEAD = "c" * 40


class Receiver:
    def __init__(self, app: Starlette, client: httpx.AsyncClient) -> None:
        self.app, self.client = app, client
        self.commands: list[str] = []
        self.delivered: list[str] = []

    async def post(self, body: bytes, *, delivery: str | None = None, event: str = "pull_request") -> httpx.Response:
        delivery = delivery or f"ack-{uuid.uuid4()}"
        self.delivered.append(delivery)
        return await self.client.post("/webhook", content=body, headers={
            "X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
            "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()})


@pytest.fixture
async def receiver(settings: Settings, tmp_path: Path) -> AsyncIterator[Receiver]:
    app = create_app(settings, env_path=tmp_path / ".env")
    async with app.router.lifespan_context(app):
        redis = app.state.redis
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
            r = Receiver(app, client)
            real = redis.execute_command

            async def counting(*args: Any, **kwargs: Any) -> Any:
                r.commands.append(str(args[0]).upper())
                return await real(*args, **kwargs)

            redis.execute_command = counting
            try:
                yield r
            finally:
                redis.execute_command = real
                keys = [k async for k in redis.scan_iter(match=settings.redis_prefix + "*")]
                keys += [f"arq:job:{d}" for d in r.delivered]
                if keys:
                    await redis.delete(*keys)


def _body(**pr_fields: Any) -> bytes:
    return json.dumps(pr_payload("opened.payload.json", head=HEAD, base="b" * 40, **pr_fields)).encode()


async def test_a_review_is_acknowledged_in_one_round_trip_with_an_arq_job_and_one_log_line(
        receiver: Receiver, settings: Settings) -> None:
    body = _body()
    assert (await receiver.post(body)).status_code == 202  # the server learns the script (at most once)
    receiver.commands.clear()
    delivery = f"ack-{uuid.uuid4()}"
    with structlog.testing.capture_logs() as logs:
        answer = await receiver.post(body, delivery=delivery)
    assert answer.status_code == 202 and answer.json() == {"status": "queued", "job_id": delivery}
    assert receiver.commands == ["EVALSHA"]

    redis = receiver.app.state.redis
    job = Job(delivery, redis, _queue_name=settings.queue_name)
    assert await job.status() == JobStatus.queued
    info = await job.info()
    expected = ReviewRequest("review", delivery, INSTALLATION, REPO, PR, HEAD, "pull_request.opened")
    assert info is not None and info.function == JOB_NAME and info.args == (expected.to_dict(),)
    assert await redis.get(Keys(settings.redis_prefix).latest(REPO, PR)) == HEAD.encode()

    queued = [e for e in logs if e["event"] == "queued"]
    assert len(queued) == 1 and len(logs) == 1, logs
    assert {k: queued[0][k] for k in ("delivery_id", "github_event", "action", "installation_id", "repo", "pr",
                                      "head_sha", "kind", "job_id")} == {
        "delivery_id": delivery, "github_event": "pull_request", "action": "opened", "installation_id": INSTALLATION,
        "repo": REPO, "pr": PR, "head_sha": HEAD, "kind": "review", "job_id": delivery}
    assert isinstance(queued[0]["ms"], float)

    receiver.commands.clear()
    replay = await receiver.post(body, delivery=delivery)
    assert replay.status_code == 200 and replay.json()["status"] == "duplicate"
    assert receiver.commands == ["EVALSHA"]
    assert await redis.zcard(settings.queue_name) == 2


async def test_bodies_that_are_not_strict_json_are_refused_with_a_reason_and_touch_nothing(
        receiver: Receiver, settings: Settings) -> None:
    cases = {
        "nested deeper than any payload (once a 500)": b'{"action": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "NaN": b'{"action": "opened", "number": NaN}',
        "not UTF-8 inside a value no route reads": b'{"action": "opened", "x": "\xff"}',
        "a byte order mark": b'\xef\xbb\xbf{"action": "opened"}',
        "trailing data": _body() + b" {}",
        "a trailing comma": b'{"action": "opened",}',
    }
    for name, body in cases.items():
        answer = await receiver.post(body)
        assert answer.status_code == 400 and "not JSON" in answer.json()["error"], (name, answer.text)
    assert receiver.commands == []
    assert [k async for k in receiver.app.state.redis.scan_iter(match=settings.redis_prefix + "*")] == []


def test_a_review_request_travels_as_a_plain_copy_of_its_fields() -> None:
    request = ReviewRequest("rerun", "d-1", 1, "o/r", None, "a" * 40, "check_run.rerequested", requester="ada",
                            comment_id=9, with_llm=True, external_id="x")
    data = request.to_dict()
    assert data == asdict(request) and ReviewRequest.from_dict(data) == request
    data["repo"] = "changed"
    assert request.repo == "o/r"
