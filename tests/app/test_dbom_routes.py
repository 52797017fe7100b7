"""The worker's DBOM (and an audit's) through the real ledger and the public /dbom routes."""

from __future__ import annotations

import httpx
from arq.worker import Worker

from app.audit.run import audit_repository
from app.ledger import open_ledger
from app.ledger.local import audit_entanglement
from app.worker.jobs import default_dbom_writer, worker_options
from tests.app.conftest import Harness, pr_payload


async def test_worker_writes_the_ledger_and_the_dbom_link_resolves(harness: Harness) -> None:
    h = harness
    await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base))
    worker = Worker(**worker_options(h.settings, dbom_factory=default_dbom_writer), burst=True,
                    handle_signals=False, poll_delay=0.05)
    try:
        await worker.main()
    finally:
        await worker.close()
    run = h.github.check_runs_for(h.repo.head)[0]
    assert run["details_url"].startswith("https://logomesh.test/dbom/")
    assert run["details_url"].endswith(".html")  # the page a person reads; the JSON is beside it
    record_id = run["details_url"].rsplit("/", 1)[1].removesuffix(".html")
    comment = next(c for c in h.github.comments.values() if c["issue_number"] == 7)
    assert run["details_url"] in comment["body"]
    async with httpx.AsyncClient(base_url=h.url) as client:
        record = await client.get(f"/dbom/{record_id}")
        assert record.status_code == 200, record.text
        assert record.json()["id"] == record_id
        page = await client.get(f"/dbom/{record_id}.html")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        keys = await client.get("/.well-known/logomesh/keys")
        assert keys.status_code == 200 and keys.json()["keys"]
        assert (await client.get("/dbom/ffffffffffffffffffff")).status_code == 404
        assert (await client.get("/dbom/..%2f..")).status_code == 404
        assert (await client.get("/readyz")).status_code == 200

    # an audit recorded in the same ledger is served by the same routes, as its report's footer links it
    outcome = await audit_repository(str(h.repo.work), settings=h.settings)
    ledger = await open_ledger(h.settings)
    try:
        audit = await ledger.append_audit(outcome.result, installation_id=None, entanglement=audit_entanglement(
            outcome.tree_sha256, outcome.markdown, outcome.model_ids))
    finally:
        await ledger.close()
    async with httpx.AsyncClient(base_url=h.url) as client:
        served = (await client.get(f"/dbom/{audit.id}")).json()
        assert served["dbom"]["schema"] == "logomesh.audit-dbom/v1" and served["evaluation"]["repo"] == "work"
        page = await client.get(f"/dbom/{audit.id}.html")
        assert page.status_code == 200 and "repository audit" in page.text
