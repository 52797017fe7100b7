"""GitHub failing under a running review: 5xx, secondary and primary rate limits are backed off and survived;
past the retry budget the check run still completes, saying what failed."""

from __future__ import annotations

import pytest
import structlog.testing

from tests.app.conftest import PR, REPO, Harness, pr_payload, verdict_title
from tests.hardening.conftest import Tally
from tests.hardening.injector import Injector

pytestmark = pytest.mark.hardening("fault")
RUNS = r"^/repos/octo/shop/check-runs$"
COMMENTS = rf"^/repos/octo/shop/issues/{PR}/comments$"
PULL = rf"^/repos/octo/shop/pulls/{PR}$"


def _injector(h: Harness) -> Injector:
    """The :class:`Injector` tests/hardening/conftest.py put in front of the fake GitHub."""
    injector: Injector = h.github.inject  # type: ignore[attr-defined]
    return injector


def _first_success_after(h: Harness, method: str, pattern: str, fired_at: float) -> float:
    import re

    later = [t for t, m, p in _injector(h).passed if m == method and re.search(pattern, p) and t > fired_at]
    assert later, f"{method} {pattern} never succeeded after its failure"
    return later[0] - fired_at


async def test_5xx_and_rate_limits_are_backed_off_then_the_review_lands_once(harness: Harness,
                                                                             tally: Tally) -> None:
    h = harness
    inject = _injector(h)
    for name in ("GitHub 500 on creating the check run", "GitHub 502 on creating the check run",
                 "secondary rate limit (403 + retry-after: 2) on posting the comment, twice",
                 "primary rate limit (403, x-ratelimit-remaining: 0, reset in 3 s) on reading the PR"):
        tally(name)
    inject.fail("POST", RUNS, 500)
    inject.fail("POST", RUNS, 502)
    inject.fail("POST", COMMENTS, 403, times=2, headers={"retry-after": "2"})
    inject.primary_rate_limit("GET", PULL, reset_in=3)
    assert (await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head,
                                                    base=h.repo.base))).status_code == 202
    with structlog.testing.capture_logs() as logs:
        await h.run_worker()
    assert len(inject.fired) == 5, inject.fired
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed" and verdict_title(runs[0]["output"]["title"])
    comments = [c for c in h.github.comments.values() if c["repo"] == REPO]
    assert len(comments) == 1 and comments[0]["edits"] == 0
    assert len(await h.dbom.records()) >= 1
    # backoff honoured: nothing retried a rate-limited call before GitHub said it may
    secondary = [t for t, m, p, s in inject.fired if s == 403 and m == "POST"]
    assert _first_success_after(h, "POST", COMMENTS, secondary[-1]) >= 1.9
    primary = next(t for t, m, p, s in inject.fired if m == "GET")
    assert _first_success_after(h, "GET", PULL, primary) >= 1.0  # reset is whole seconds: ≥ 2 s minus rounding
    assert any(e["event"] == "GitHub is unavailable; retrying" for e in logs)


@pytest.fixture
def short_outage(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.github
    import app.worker.jobs

    monkeypatch.setattr(app.worker.jobs, "OUTAGE_BASE_SECONDS", 0.2)
    monkeypatch.setattr(app.github, "_retry_after", lambda response: 0.0)
    # the budget is time: room for more retries than max_tries even when each try is slow
    harness.settings = harness.settings.model_copy(update={"github_outage_seconds": 6})


@pytest.mark.usefixtures("short_outage")
async def test_past_the_outage_budget_the_check_run_completes_with_the_reason(harness: Harness,
                                                                             tally: Tally) -> None:
    h = harness
    tally("GitHub 502 on every read of the PR once the review started (outage budget exhausted)")
    # the run exists, the clone starts; from then on GitHub answers nothing but 502 for the PR
    h.github.on_first_git_request = lambda: _injector(h).fail("GET", PULL, 502, times=1000)
    assert (await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head,
                                                    base=h.repo.base))).status_code == 202
    worker = await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed" and runs[0]["conclusion"] == "neutral"
    assert "GitHub kept failing" in runs[0]["output"]["summary"] and "502" in runs[0]["output"]["summary"]
    # bounded by time, not by tries: more retries than max_tries, and the job ends without failing
    assert worker.jobs_retried >= h.settings.max_tries and worker.jobs_failed == 0
    assert [c for c in h.github.comments.values() if c["repo"] == REPO] == []


@pytest.mark.usefixtures("short_outage")
async def test_past_the_outage_budget_a_verdict_on_the_check_run_stays(harness: Harness, tally: Tally) -> None:
    h = harness
    tally("GitHub 502 on every comment request after the verdict reached the check run")
    _injector(h).fail("GET", COMMENTS, 502, times=1000)
    assert (await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head,
                                                    base=h.repo.base))).status_code == 202
    await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed" and verdict_title(runs[0]["output"]["title"])
    assert [c for c in h.github.comments.values() if c["repo"] == REPO] == []
    assert len(await h.dbom.records()) == 1
