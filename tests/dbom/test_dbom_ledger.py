"""The ledger on a real SQLite file and a real PostgreSQL schema: appends, proofs, verification, tampering,
concurrent writers in separate OS processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest
from sqlalchemy import text

from app.ledger import Ledger, RecordNotFound, open_ledger, render_dbom_html, render_dbom_json
from app.ledger.keys import load_public_pem, verify_signature
from checks.dbom import (
    DbomRecord,
    b64decode,
    evaluation_payload,
    tree_head_payload,
    verify_consistency,
    verify_inclusion,
)
from checks.models import Evaluation
from tests.dbom.conftest import Backend
from tests.dbom.factory import entanglement, evaluation

ROOT = Path(__file__).resolve().parents[2]


async def fill(ledger: Ledger, count: int, installation_id: int | None = None, start: int = 0) -> list[Any]:
    records = []
    for n in range(start, start + count):
        ev = evaluation(n)
        records.append(await ledger.append(ev, installation_id=installation_id, entanglement=entanglement(ev)))
    return records


async def sql(ledger: Ledger, statement: str, **params: Any) -> list[Any]:
    async with ledger.engine.begin() as conn:
        result = await conn.execute(text(statement), params)
        return list(result.mappings()) if result.returns_rows else []


def public_keys(ledger: Ledger) -> dict[str, Any]:
    return {k["key_id"]: load_public_pem(k["public_key"]) for k in ledger.public_keys()}


async def test_append_get_and_an_independently_checked_proof(ledger: Ledger) -> None:
    records = await fill(ledger, 6)
    assert [r.leaf_index for r in records] == list(range(6))
    assert len({r.id for r in records}) == 6
    got = await ledger.get(records[3].id)
    assert got == records[3]
    assert got is not None
    assert got.raw_result == evaluation_payload(evaluation(3))
    assert await ledger.get("0" * 32) is None

    proof = await ledger.proof(records[3].id)
    head = proof["tree_head"]
    assert head["tree_size"] == 6
    keys = public_keys(ledger)
    # the record: leaf hash recomputed from the body, signature by the listed key
    leaf = records[3].body.leaf_hash()
    assert leaf.hex() == proof["leaf_hash"]
    root = bytes.fromhex(head["root_hash"])
    assert verify_inclusion(3, 6, leaf, [bytes.fromhex(h) for h in proof["inclusion_proof"]], root)
    assert verify_signature(keys[head["key_id"]], b64decode(head["signature"]),
                            tree_head_payload("local", 6, root, head["timestamp"]))
    assert not verify_signature(keys[head["key_id"]], b64decode(head["signature"]),
                                tree_head_payload("local", 5, root, head["timestamp"]))

    consistency = await ledger.consistency("local", 2, 6)
    assert verify_consistency(2, 6, bytes.fromhex(consistency["first"]["root_hash"]), root,
                              [bytes.fromhex(h) for h in consistency["consistency_proof"]])

    report = await ledger.verify()
    assert report.ok, report.problems
    assert (report.records_checked, report.tree_heads_checked) == (6, 6)
    assert (await ledger.verify(records[0].id)).ok
    with pytest.raises(RecordNotFound):
        await ledger.verify("f" * 32)
    await ledger.ping()


async def test_append_is_idempotent_and_logs_are_per_installation(ledger: Ledger) -> None:
    first = await fill(ledger, 2, installation_id=1)
    again = await fill(ledger, 2, installation_id=1)
    assert again == first
    other = await fill(ledger, 2, installation_id=2)
    assert [r.leaf_index for r in other] == [0, 1]
    assert {r.log_id for r in other} == {"installation-2"}
    assert other[0].id != first[0].id  # the installation is part of what is signed
    assert await ledger.count() == 4
    assert (await ledger.verify()).ok


async def test_the_same_decision_is_one_record_and_a_different_one_is_another(ledger: Ledger) -> None:
    ev = evaluation(3)
    first = await ledger.append(ev, installation_id=7, entanglement=entanglement(ev))
    # a redelivered job: the same evaluation (same H(Δ)) with the same entangled inputs, signed again
    again = await ledger.append(Evaluation.model_validate_json(ev.model_dump_json()), installation_id=7,
                                entanglement=entanglement(ev))
    assert again == first
    assert await ledger.count() == 1
    heads = await sql(ledger, "SELECT tree_size FROM dbom_tree_heads WHERE log_id = 'installation-7'")
    assert [h["tree_size"] for h in heads] == [1]  # no tree head for an append that added nothing

    # a different decision on the same inputs, and the same decision on different inputs, are new records
    ruled = ev.model_copy(update={"verdict_reasons": (*ev.verdict_reasons, "ruled again")})
    other_rubric = entanglement(ev).model_copy(update={"rubric_version": "99"})
    second = await ledger.append(ruled, installation_id=7, entanglement=entanglement(ruled))
    third = await ledger.append(ev, installation_id=7, entanglement=other_rubric)
    assert second.evaluation_sha256 != first.evaluation_sha256
    assert third.evaluation_sha256 == first.evaluation_sha256
    assert len({first.id, second.id, third.id}) == 3
    assert [second.leaf_index, third.leaf_index] == [1, 2]
    assert await ledger.append(ev, installation_id=7, entanglement=entanglement(ev)) == first
    assert await ledger.count() == 3
    assert (await ledger.verify()).ok


async def test_rendered_pages_escape_pr_content(ledger: Ledger) -> None:
    ev = evaluation(1)
    hostile = ev.model_copy(update={"verdict_reasons": ("<script>alert(1)</script>",)})
    record = await ledger.append(hostile, installation_id=None, entanglement=entanglement(hostile))
    proof = await ledger.proof(record.id)
    page = render_dbom_html(record, proof)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert record.id in page and proof["tree_head"]["root_hash"] in page
    doc = render_dbom_json(record, proof)
    assert doc["dbom"]["evaluation_sha256"] == record.evaluation_sha256
    assert json.loads(json.dumps(doc))["proof"]["leaf_index"] == record.leaf_index


async def test_rotation_keeps_old_records_verifiable(backend: Backend, ledger: Ledger) -> None:
    await fill(ledger, 2)
    old = ledger.keyring.active.key_id
    new = await ledger.rotate_key()
    await fill(ledger, 2, start=2)
    assert {k["key_id"] for k in ledger.public_keys()} == {old, new}
    assert (await ledger.verify()).ok
    reopened = await open_ledger(backend.settings(), schema_name=backend.schema)
    try:
        assert reopened.keyring.active.key_id == new
        assert (await reopened.verify()).ok
    finally:
        await reopened.close()


# --- tampering ------------------------------------------------------------------------------------------------


async def _edit_raw(ledger: Ledger, rid: str, change: Callable[[dict[str, Any]], object]) -> None:
    row = (await sql(ledger, "SELECT raw_result FROM dbom_records WHERE id = :id", id=rid))[0]
    raw = json.loads(row["raw_result"])
    change(raw)
    await sql(ledger, "UPDATE dbom_records SET raw_result = :raw WHERE id = :id", raw=json.dumps(raw), id=rid)


async def tamper_raw_result(ledger: Ledger, records: list[DbomRecord]) -> None:
    await _edit_raw(ledger, records[2].id, lambda raw: raw.update(verdict_reasons=["all good, trust me"]))


async def tamper_raw_score(ledger: Ledger, records: list[DbomRecord]) -> None:
    await _edit_raw(ledger, records[2].id, lambda raw: raw.update(cis_score=0.99))


async def tamper_score_column(ledger: Ledger, records: list[DbomRecord]) -> None:
    await sql(ledger, "UPDATE dbom_records SET cis_score = 0.99, verdict = 'pass' WHERE id = :id", id=records[2].id)


async def tamper_body_score(ledger: Ledger, records: list[DbomRecord]) -> None:
    row = (await sql(ledger, "SELECT body FROM dbom_records WHERE id = :id", id=records[2].id))[0]
    body = json.loads(row["body"])
    body["cis_score"] = 0.99
    await sql(ledger, "UPDATE dbom_records SET body = :b WHERE id = :id", b=json.dumps(body), id=records[2].id)


async def tamper_delete_middle(ledger: Ledger, records: list[DbomRecord]) -> None:
    await sql(ledger, "DELETE FROM dbom_records WHERE id = :id", id=records[2].id)


async def tamper_delete_middle_and_reindex(ledger: Ledger, records: list[DbomRecord]) -> None:
    await sql(ledger, "DELETE FROM dbom_records WHERE id = :id", id=records[2].id)
    for i in range(3, len(records)):
        await sql(ledger, "UPDATE dbom_records SET leaf_index = :new WHERE id = :id", new=i - 1, id=records[i].id)


async def tamper_reorder(ledger: Ledger, records: list[DbomRecord]) -> None:
    a, b = records[1], records[3]
    await sql(ledger, "UPDATE dbom_records SET leaf_index = -1 WHERE id = :id", id=a.id)
    await sql(ledger, "UPDATE dbom_records SET leaf_index = 1 WHERE id = :id", id=b.id)
    await sql(ledger, "UPDATE dbom_records SET leaf_index = 3 WHERE id = :id", id=a.id)


async def tamper_swap_signature(ledger: Ledger, records: list[DbomRecord]) -> None:
    await sql(ledger, "UPDATE dbom_records SET signature = :s WHERE id = :id", s=records[0].signature,
              id=records[2].id)


async def tamper_delete_last(ledger: Ledger, records: list[DbomRecord]) -> None:
    await sql(ledger, "DELETE FROM dbom_records WHERE id = :id", id=records[-1].id)


async def tamper_rewrite_history(ledger: Ledger, records: list[DbomRecord]) -> None:
    # replace a record wholesale by a validly signed one for another evaluation, at the same position
    forged = evaluation(77)
    other = await ledger.append(forged, installation_id=5, entanglement=entanglement(forged))
    await sql(ledger, "DELETE FROM dbom_records WHERE id = :id", id=records[2].id)
    await sql(ledger, "UPDATE dbom_records SET log_id = 'local', leaf_index = 2, installation_id = NULL "
                      "WHERE id = :id", id=other.id)


TAMPERING = {  # how, what verify must report, which record then fails on its own (`verify ID`)
    "raw_result": (tamper_raw_result, {"record"}, 2),
    "raw score": (tamper_raw_score, {"record"}, 2),
    "score column": (tamper_score_column, {"record"}, 2),
    "signed body": (tamper_body_score, {"record", "signature"}, 2),
    "delete middle": (tamper_delete_middle, {"sequence", "consistency"}, 0),
    "delete middle, renumber": (tamper_delete_middle_and_reindex, {"consistency"}, 0),
    "reorder rows": (tamper_reorder, {"consistency", "inclusion"}, 1),
    "swap signature": (tamper_swap_signature, {"signature"}, 2),
    "delete last": (tamper_delete_last, {"consistency"}, 0),
    "rewrite history": (tamper_rewrite_history, {"consistency"}, 0),
}


@pytest.mark.parametrize("case", list(TAMPERING))
async def test_tampering_is_caught(ledger: Ledger, case: str) -> None:
    tamper, expected, single = TAMPERING[case]
    records = await fill(ledger, 5)
    assert (await ledger.verify()).ok
    await tamper(ledger, records)
    report = await ledger.verify()
    assert not report.ok
    found = {p.check for p in report.problems}
    assert expected <= found, report.problems
    # so does `verify ID`: for a damaged record, or for any record of a log that no longer matches its heads
    assert not (await ledger.verify(records[single].id)).ok


# --- concurrency ----------------------------------------------------------------------------------------------


def append_together(backend: Backend, starts: list[int], per_process: int) -> list[str]:
    """Run one ``append_worker`` per START (its first evaluation's number: equal starts append the same
    decisions), release them at the same moment, return their outputs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen([sys.executable, "-m", "tests.dbom.append_worker", str(backend.home), backend.url,
                          backend.schema or "-", str(start), str(per_process)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=ROOT)
        for start in starts
    ]
    try:
        for w in workers:
            assert w.stdout is not None
            line = w.stdout.readline()
            assert line.strip() == "ready", w.stderr.read() if w.stderr else ""
        for w in workers:  # release them together
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.flush()
        outputs = [w.communicate(timeout=300) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
    for w, (_out, err) in zip(workers, outputs, strict=True):
        assert w.returncode == 0, err
    return [out for out, _err in outputs]


@pytest.mark.slow
async def test_concurrent_appends_from_several_processes(backend: Backend) -> None:
    processes, per_process = 4, 5
    outputs = append_together(backend, [100 * (p + 1) for p in range(processes)], per_process)
    lines = [line.split() for out in outputs for line in out.splitlines()]
    indices = sorted(int(i) for i, _id in lines)
    assert indices == list(range(processes * per_process))
    assert len({rid for _i, rid in lines}) == processes * per_process

    ledger = await open_ledger(backend.settings(), schema_name=backend.schema)
    try:
        report = await ledger.verify()
        assert report.ok, report.problems
        assert report.records_checked == report.tree_heads_checked == processes * per_process
        heads = await sql(ledger, "SELECT tree_size FROM dbom_tree_heads WHERE log_id = 'installation-99' "
                                  "ORDER BY tree_size")
        assert [h["tree_size"] for h in heads] == list(range(1, processes * per_process + 1))
        assert len(ledger.public_keys()) == 1  # they raced to create the key; one won, all used it
    finally:
        await ledger.close()


@pytest.mark.slow
async def test_the_same_decision_from_several_workers_at_once_is_one_record(backend: Backend) -> None:
    """At-least-once delivery across workers: each process appends the same decisions, released together."""
    processes, per_process = 4, 3
    outputs = append_together(backend, [500] * processes, per_process)
    answers = [out.splitlines() for out in outputs]
    assert all(a == answers[0] for a in answers), answers  # every worker got the same record for each decision
    assert sorted(int(line.split()[0]) for line in answers[0]) == list(range(per_process))

    ledger = await open_ledger(backend.settings(), schema_name=backend.schema)
    try:
        assert await ledger.count() == per_process
        report = await ledger.verify()
        assert report.ok, report.problems
        assert report.records_checked == report.tree_heads_checked == per_process
    finally:
        await ledger.close()


# --- migrations -----------------------------------------------------------------------------------------------


async def test_migrations_create_exactly_the_declared_schema(backend: Backend, ledger: Ledger) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from app.ledger import schema

    async with ledger.engine.connect() as conn:
        diff = await conn.run_sync(lambda c: compare_metadata(
            MigrationContext.configure(c, opts={"version_table": "logomesh_ledger_version"}), schema.metadata))
    assert diff == []
    # opening again (a second worker, a restart) finds the schema at head and changes nothing
    again = await open_ledger(backend.settings(), schema_name=backend.schema)
    await again.close()
    version = await sql(ledger, "SELECT version_num FROM logomesh_ledger_version")
    assert [v["version_num"] for v in version] == ["0001"]


async def test_a_ledger_at_the_newest_migration_opens_without_alembic(
        backend: Backend, ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    from alembic import command
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from app.ledger import ledger as ledger_module

    config = Config()
    config.set_main_option("script_location", str(ledger_module.MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == ledger_module.HEAD_REVISION

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("alembic ran on a ledger already at the newest migration")

    monkeypatch.setattr(command, "upgrade", refuse)
    again = await open_ledger(backend.settings(), schema_name=backend.schema)
    await again.close()
    # a ledger behind the newest migration (here: its version row gone) is still brought up to date by alembic
    await sql(ledger, "DELETE FROM logomesh_ledger_version")
    with pytest.raises(AssertionError, match="alembic ran"):
        await open_ledger(backend.settings(), schema_name=backend.schema)


async def test_an_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    from app.ledger import LedgerUnavailable
    from app.settings import load_settings

    settings = load_settings(home=tmp_path, database_url="postgresql+asyncpg://u:pw@127.0.0.1:1/x")
    with pytest.raises(LedgerUnavailable) as caught:
        await open_ledger(settings)
    assert "127.0.0.1:1" in str(caught.value) and "pw" not in str(caught.value)
