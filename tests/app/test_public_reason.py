"""What a PR author reads when LogoMesh itself fails: a human reason, never the operator's addresses, host names,
paths or stack traces (those stay in the logs, under the delivery id the check run names)."""

from __future__ import annotations

from typing import Any

import pytest

from app.worker import jobs
from app.worker.publish import public_reason
from tests.app.conftest import Harness, pr_payload

INTERNAL = ("127.0.0.1", "10.0.0.5", "6390", "2375", "redis:6379", "/opt/logomesh", "[::1]", "Traceback")


@pytest.mark.parametrize(("raw", "kept"), [
    ("ConnectionError: Error 111 connecting to 127.0.0.1:6390. Connection refused.", "Connection refused"),
    ("redis:6379 refused the connection", "refused the connection"),
    ("postgres.internal:5432 is down", "is down"),
    ("Error connecting to [::1]:5432", "Error connecting to"),
    ("could not open /opt/logomesh/envs/3f2a/bin/python", "could not open"),
    ("boom\nTraceback (most recent call last):\n  File \"/srv/app.py\", line 3", "boom"),
])
def test_internal_detail_is_replaced_by_words(raw: str, kept: str) -> None:
    shown = public_reason(raw)
    assert kept in shown
    assert not any(part in shown for part in INTERNAL), shown


@pytest.mark.parametrize("text", [
    "A GitHub call failed: 404 Not Found (GET /repos/octo/shop/pulls/7)",
    "The review did not finish within 900s.",
    "see https://github.com/octo/shop/pull/7 and `calc/ops.py:12`",
    "Python 3.11 at line 12:34",
])
def test_what_the_author_needs_is_kept(text: str) -> None:
    assert public_reason(text) == text


class _Unreachable:
    async def append(self, *args: Any, **kwargs: Any) -> str:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")

    async def close(self) -> None:
        return None


async def test_a_crash_shows_no_internal_address_and_names_the_delivery(harness: Harness,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    h = harness

    async def crashed(*args: Any, **kwargs: Any) -> Any:
        raise OSError("cannot reach the engine at tcp://10.0.0.5:2375 from /opt/logomesh/envs/x")

    monkeypatch.setattr(jobs, "run_court", crashed)
    delivery = "d-crash-1"
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base),
                 delivery=delivery)
    await h.run_worker()
    (run,) = h.github.check_runs_for(h.repo.head)
    text = run["output"]["title"] + run["output"]["summary"] + (run["output"].get("text") or "")
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "OSError" in text and delivery in text
    assert not any(part in text for part in INTERNAL), text


async def test_an_unwritable_ledger_shows_no_internal_address(harness: Harness) -> None:
    h = harness
    h.settings = h.settings.model_copy(update={"ledger_outage_seconds": 3})  # ride the outage out briefly
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    await h.run_worker(dbom=_Unreachable())
    (run,) = h.github.check_runs_for(h.repo.head)
    text = run["output"]["title"] + run["output"]["summary"] + (run["output"].get("text") or "")
    assert run["status"] == "completed" and "audit record" in text
    assert not any(part in text for part in INTERNAL), text
