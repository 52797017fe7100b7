"""The DBOM ledger (real PostgreSQL) unavailable during a review: the decision is kept and its recording retried
through the outage (never the review, never counted as a failed try), and no verdict is ever published without its
audit record; readiness says when the ledger cannot be written."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import asyncpg
import pytest
from arq.worker import Worker

from app.ledger import Entanglement, open_ledger
from app.ledger.errors import LedgerUnavailable
from app.worker.jobs import worker_options
from checks.models import Evaluation
from tests.app.conftest import REPO, Harness, pr_payload, verdict_title
from tests.hardening.conftest import Tally

pytestmark = pytest.mark.hardening("fault")
PG_URL = os.environ.get("LOGOMESH_TEST_DATABASE_URL",
                        "postgresql+asyncpg://logomesh:logomesh@127.0.0.1:5432/logomesh")


class GatedLedger:
    """The real ledger; its schema is renamed away (an outage) and restored after ``outages`` failed appends, or
    once ``until`` (monotonic) has passed."""

    def __init__(self, ledger: Any, schema: str, outages: int, until: float = float("inf"),
                 git_requests: list[Any] | None = None) -> None:
        self.ledger, self.schema, self.outages, self.until, self.failures = ledger, schema, outages, until, 0
        self.git_requests = git_requests if git_requests is not None else []
        self.clones_at_first_failure: int | None = None

    async def append(self, evaluation: Evaluation, *, installation_id: int,
                     entanglement: Mapping[str, Any]) -> str:
        try:
            record = await self.ledger.append(evaluation, installation_id=installation_id,
                                              entanglement=Entanglement.from_evaluation(evaluation, **entanglement))
        except Exception:
            self.failures += 1
            if self.clones_at_first_failure is None:
                self.clones_at_first_failure = len(self.git_requests)
            if self.failures >= self.outages or time.monotonic() >= self.until:
                await _sql(f'ALTER SCHEMA "{self.schema}_off" RENAME TO "{self.schema}"')
            raise
        return str(record.id)

    async def close(self) -> None:
        await self.ledger.close()


async def _sql(statement: str) -> None:
    conn = await asyncpg.connect("postgresql://" + PG_URL.split("://", 1)[1])
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture
async def pg_schema() -> AsyncIterator[str]:
    schema = f"hard_{uuid.uuid4().hex[:10]}"
    await _sql(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema
    finally:
        await _sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await _sql(f'DROP SCHEMA IF EXISTS "{schema}_off" CASCADE')


async def _gate(h: Harness, schema: str, outages: int, seconds: float = float("inf")) -> GatedLedger:
    settings = h.settings.model_copy(update={"database_url": PG_URL})
    ledger = await open_ledger(settings, schema_name=schema)
    await _sql(f'ALTER SCHEMA "{schema}" RENAME TO "{schema}_off"')  # the database goes away mid-flight
    return GatedLedger(ledger, schema, outages, time.monotonic() + seconds, h.github.git_requests)


def _verdicts_published(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in run["history"] if b.get("conclusion") in ("success", "failure")
            or verdict_title(str((b.get("output") or {}).get("title", "")))]


async def test_a_ledger_outage_is_retried_and_the_verdict_waits_for_its_dbom(harness: Harness, tally: Tally,
                                                                           pg_schema: str) -> None:
    h = harness
    tally("PostgreSQL ledger unavailable when the DBOM is written (recovers before the retry)")
    gate = await _gate(h, pg_schema, outages=1)
    try:
        await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
        worker = await h.run_worker(gate)
        assert gate.failures == 1 and worker.jobs_retried == 1
        assert len(h.github.git_requests) == gate.clones_at_first_failure  # the retry recorded; it did not review
    finally:
        await gate.close()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and runs[0]["status"] == "completed"
    assert len(_verdicts_published(runs[0])) == 1  # published once, after the DBOM existed
    assert runs[0]["details_url"].startswith("https://logomesh.test/dbom/")
    comments = [c for c in h.github.comments.values() if c["repo"] == REPO]
    assert len(comments) == 1 and runs[0]["details_url"] in comments[0]["body"]


async def test_an_outage_longer_than_the_tries_is_ridden_out_and_the_review_runs_once(
        harness: Harness, tally: Tally, pg_schema: str) -> None:
    h = harness
    tally("PostgreSQL ledger unavailable for longer than max_tries retries would last")
    h.settings = h.settings.model_copy(update={"ledger_outage_seconds": 120})
    gate = await _gate(h, pg_schema, outages=10_000, seconds=12)
    try:
        await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
        worker = await h.run_worker(gate)
    finally:
        await gate.close()
    assert gate.failures > h.settings.max_tries, gate.failures  # the waits are not failed tries
    assert worker.jobs_failed == 0
    assert len(h.github.git_requests) == gate.clones_at_first_failure  # one review, however long the outage
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["status"] == "completed" and len(_verdicts_published(run)) == 1
    assert run["details_url"].startswith("https://logomesh.test/dbom/")


async def test_a_lasting_ledger_outage_publishes_no_verdict(harness: Harness, tally: Tally, pg_schema: str) -> None:
    h = harness
    tally("PostgreSQL ledger unavailable past the outage budget")
    h.settings = h.settings.model_copy(update={"ledger_outage_seconds": 5})
    gate = await _gate(h, pg_schema, outages=10_000)
    try:
        await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
        await h.run_worker(gate)
    finally:
        await gate.close()
    assert gate.failures >= 2 and len(h.github.git_requests) == gate.clones_at_first_failure
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["status"] == "completed" and run["conclusion"] == "neutral"
    assert "could not be written" in run["output"]["summary"] and _verdicts_published(run) == []
    assert [c for c in h.github.comments.values() if c["repo"] == REPO] == []


async def test_readiness_says_when_the_ledger_accepts_no_writes(harness: Harness) -> None:
    """A database that answers but takes no writes (a standby, default_transaction_read_only) is not ready."""
    name = f"ro_{uuid.uuid4().hex[:10]}"
    await _sql(f'CREATE DATABASE "{name}"')
    try:
        url = PG_URL.rsplit("/", 1)[0] + "/" + name
        settings = harness.settings.model_copy(update={"database_url": url})
        ledger = await open_ledger(settings)
        try:
            await ledger.ping()  # writable: ready
            await _sql(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
            await ledger.engine.dispose()  # the setting applies to new sessions
            with pytest.raises(LedgerUnavailable, match="no writes"):
                await ledger.ping()
        finally:
            await ledger.close()
    finally:
        await _sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_a_bad_database_url_keeps_the_job_queued_until_a_worker_can_write(harness: Harness,
                                                                              tally: Tally) -> None:
    h = harness
    tally("LOGOMESH_DATABASE_URL pointing at a dead server")
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    bad = h.settings.model_copy(update={"database_url": "postgresql+asyncpg://logomesh:logomesh@127.0.0.1:1/x"})
    worker = Worker(**worker_options(bad), burst=True, handle_signals=False, poll_delay=0.05)
    try:
        with pytest.raises(Exception, match=r"127\.0\.0\.1|connect|refused|unavailable"):
            await worker.main()
    finally:
        await worker.close()
    assert h.github.check_runs_for(h.repo.head) == []  # nothing started, nothing lost
    await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 1 and verdict_title(runs[0]["output"]["title"])
