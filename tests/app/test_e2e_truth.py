"""End to end with the real sandbox: a signed webhook for a PR whose own test fails ends in a failing check run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import docker
import pytest

from app.receiver.asgi import create_app
from app.settings import Settings
from tests.app.conftest import REDIS_URL, REPO, Harness, ServerThread, ShopRepo, pr_payload
from tests.app.fakegithub import FakeGitHub
from tests.app.sqlite_dbom import SqliteDbom
from tests.sandbox.conftest import docker_engine  # noqa: F401 - the real engine and image, or a skip saying why

pytestmark = pytest.mark.docker
FAILING_PR = 8


@pytest.fixture
async def docker_harness(
        settings: Settings, github: FakeGitHub, repo: ShopRepo, tmp_path: Path,
        docker_engine: docker.DockerClient) -> AsyncIterator[Harness]:  # noqa: F811
    import redis.asyncio as aioredis

    settings = settings.model_copy(update={"sandbox": "docker", "job_timeout_seconds": 600})
    github.add_pull(REPO, FAILING_PR, head=repo.failing, base=repo.base, title="Add percentage discounts",
                    body="apply_discount(total, percent) takes a percentage off the cart total.")
    dbom = await SqliteDbom.open(tmp_path / "dbom.db")
    redis = aioredis.from_url(REDIS_URL)  # type: ignore[no-untyped-call]
    try:
        with ServerThread(create_app(settings, env_path=tmp_path / ".env")) as url:
            yield Harness(settings, url, github, repo, dbom, redis)
    finally:
        keys = [k async for k in redis.scan_iter(match=settings.redis_prefix + "*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        await dbom.close()


async def test_a_pr_whose_test_fails_gets_a_failing_check_run(docker_harness: Harness) -> None:
    harness = docker_harness
    payload = pr_payload("opened.payload.json", head=harness.repo.failing, base=harness.repo.base,
                         number=FAILING_PR)
    answer = await harness.post("pull_request", payload)
    assert answer.status_code == 202, answer.text
    await harness.run_worker()
    runs = harness.github.check_runs_for(harness.repo.failing)
    assert len(runs) == 1
    run = runs[0]
    assert run["status"] == "completed"
    assert run["conclusion"] == "failure", run["output"]["summary"][:2000]
    summary = run["output"]["summary"].replace("\\", "")  # Markdown escapes
    assert "Rule of New Failures" in summary
    assert "tests/test_discount.py::test_discount" in summary
    # what a PR author reads first: the failing test, where it failed and why, in the comment and the check run
    assert run["output"]["title"].startswith("Fail · a test of this change fails")
    failing_notes = [a for a in run["annotations"] if a["path"] == "tests/test_discount.py"]
    assert len(failing_notes) == 1, run["annotations"]
    note = failing_notes[0]
    assert note["annotation_level"] == "failure" and note["title"] == "A new test fails"
    assert "tests/test_discount.py::test_discount" in note["message"] and "assert" in note["message"]
    assert len({(a["path"], a["start_line"]) for a in run["annotations"]}) == len(run["annotations"])
    assert not [a for a in run["annotations"] if ":" in a["title"] and "-" in a["title"].split(":")[-1]]
    comment = next(c for c in harness.github.comments.values() if c["issue_number"] == FAILING_PR)["body"]
    what_to_fix = comment.split("**What to fix**", 1)[1].split("<details>", 1)[0]
    first = what_to_fix.strip().splitlines()[0]
    assert first.startswith("1. **A new test fails**") and "tests/test_discount.py:" in first, first
    assert "assert" in first and "<details>" in comment and "<details open" not in comment
