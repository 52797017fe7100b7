"""The audit's DBOM: its own body kind (``logomesh.audit-dbom/v1``) in the same signed, chained logs as reviews.

A real audit (the fixture repository and its PDF through ``app.audit.run``) is appended to a real SQLite file and a
real PostgreSQL schema, verified, tampered with, exported and rendered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.audit.run import AuditOutcome, audit_repository
from app.ledger import Ledger, render_dbom_html, render_dbom_json
from app.ledger.export import dsse_envelope, open_dsse
from app.ledger.keys import load_public_pem
from app.ledger.local import audit_entanglement
from app.ledger.verify import check_document
from app.settings import load_settings
from checks.audit.render import split_dbom_footer, with_dbom_footer
from checks.dbom import (
    AUDIT_PREDICATE_TYPE,
    AuditDbomBody,
    AuditEntanglement,
    DbomBody,
    DbomError,
    build_audit_body,
    build_body,
    parse_body,
    record_signing_payload,
)
from tests.audit.fixtures import build_repo, build_report
from tests.dbom.factory import entanglement, evaluation
from tests.dbom.test_dbom_ledger import sql

GOLDEN_PAYLOAD: dict[str, Any] = {
    "repo": "courtroom", "head_sha": "c" * 40,
    "rubric": {"name": "logomesh-auditor", "version": "1.0.0", "sha256": "e" * 64},
    "report": {"name": "report.pdf", "sha256": "f" * 64, "pages": 2, "images": 1},
    "score": 4.0, "unit_score": 0.75, "verdict": "pass",
    "rulings": [{"criterion_id": "git_forensics", "score": 4.5},
                {"criterion_id": "safe_tool_engineering", "score": 3.5}],
    "claims": [{"status": "verified"}, {"status": "hallucination"}, {"status": "verified"}],
}
GOLDEN_BODY = (
    '{"claims":{"hallucination":1,"unverified":0,"verified":2},"criteria":{"git_forensics":4.5,"safe_tool_engineer'
    'ing":3.5},"entanglement":{"markdown_sha256":"8888888888888888888888888888888888888888888888888888888888888888'
    '","model_ids":{},"tool_versions":{},"tree_sha256":"777777777777777777777777777777777777777777777777777777777777'
    '7777"},"evaluation_sha256":"e64b2861f086b95b5550b97ecbdedbd73ed0b847182fd4f1b85a8f72ce3d3168","head_sha":"ccc'
    'ccccccccccccccccccccccccccccccccccccc","installation_id":null,"repo":"courtroom","report_sha256":"ffffffffffff'
    'ffffffffffffffffffffffffffffffffffffffffffffffffffff","rubric_sha256":"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'
    'eeeeeeeeeeeeeeeeeeeeeeeee","rubric_version":"1.0.0","schema":"logomesh.audit-dbom/v1","score":4,"unit_score":0'
    '.75,"verdict":"pass"}'
)


def test_golden_audit_body_bytes_and_hash() -> None:
    ent = AuditEntanglement(tree_sha256="7" * 64, markdown_sha256="8" * 64)
    body = build_audit_body(GOLDEN_PAYLOAD, installation_id=None, entanglement=ent)
    assert body.canonical().decode() == GOLDEN_BODY
    # both hashes checked with `sha256sum` outside Python
    assert body.evaluation_sha256 == "e64b2861f086b95b5550b97ecbdedbd73ed0b847182fd4f1b85a8f72ce3d3168"
    assert body.leaf_hash().hex() == "ed4547e0acc60d6c8542ea4b47a2ffa37931af81070fa68dee8a9db75a78fbdf"


def test_the_two_kinds_parse_apart_and_sign_under_their_own_domain_tag() -> None:
    ent = AuditEntanglement(tree_sha256="7" * 64)
    audit = build_audit_body(GOLDEN_PAYLOAD, installation_id=3, entanglement=ent)
    ev = evaluation(1)
    review = build_body(ev.model_dump(mode="json"), installation_id=3, entanglement=entanglement(ev))
    assert isinstance(parse_body(json.loads(audit.canonical())), AuditDbomBody)
    assert isinstance(parse_body(json.loads(review.canonical())), DbomBody)
    assert record_signing_payload(audit).startswith(b"logomesh.audit-dbom/v1\x00")
    assert record_signing_payload(review).startswith(b"logomesh.dbom/v1\x00")
    with pytest.raises(DbomError):
        parse_body({**json.loads(audit.canonical()), "schema": "logomesh.other/v1"})
    with pytest.raises(DbomError, match="not an audit payload"):
        build_audit_body({"repo": "x"}, installation_id=None, entanglement=ent)


def test_the_footer_names_the_record_and_the_report_above_it_is_what_was_hashed() -> None:
    text = with_dbom_footer("# report\n\nbody\n", "abc123", "https://logomesh.example/dbom/abc123.html")
    report, named = split_dbom_footer(text)
    assert report == "# report\n\nbody\n" and named == "abc123"
    assert "[`abc123`](https://logomesh.example/dbom/abc123.html)" in text
    assert split_dbom_footer("# no footer\n") == ("# no footer\n", None)


@pytest.fixture
async def audited(tmp_path: Path) -> AuditOutcome:
    repo = build_repo(tmp_path / "courtroom")
    report = build_report(tmp_path / "report.pdf")
    return await audit_repository(str(repo), settings=load_settings(home=tmp_path / "h"), report_path=report)


async def test_a_real_audit_is_appended_verified_and_idempotent(ledger: Ledger, audited: AuditOutcome) -> None:
    ent = audit_entanglement(audited.tree_sha256, audited.markdown, audited.model_ids)
    for n in range(2):  # a review before and after: one log holds both kinds
        ev = evaluation(n)
        await ledger.append(ev, installation_id=None, entanglement=entanglement(ev))
    record = await ledger.append_audit(audited.result, installation_id=None, entanglement=ent)
    again = await ledger.append_audit(audited.result, installation_id=None, entanglement=ent)
    assert again.id == record.id and record.leaf_index == 2
    body = record.body
    assert isinstance(body, AuditDbomBody)
    result = audited.result
    assert body.verdict == result.verdict and body.score == result.score and body.unit_score == result.unit_score
    assert body.criteria == {r.criterion_id: r.score for r in result.rulings} and len(body.criteria) == 10
    assert body.claims.hallucination == sum(c.status == "hallucination" for c in result.claims) > 0
    assert result.report is not None
    assert body.head_sha == result.head_sha and body.report_sha256 == result.report.sha256
    assert body.entanglement.model_ids == {"judges": "offline"}
    assert len(body.entanglement.tree_sha256) == 64
    ev = evaluation(2)
    await ledger.append(ev, installation_id=None, entanglement=entanglement(ev))

    report = await ledger.verify()
    assert report.ok, [str(p) for p in report.problems]
    assert report.records_checked == 4
    one = await ledger.verify(record.id)
    assert one.ok and one.records_checked == 1
    fetched = await ledger.get(record.id)
    assert fetched is not None and fetched.body == body and fetched.cis_score == result.unit_score
    assert fetched.raw_result == result.model_dump(mode="json")


@pytest.mark.parametrize("edit", ["ruling", "verdict-column", "claims"])
async def test_tampering_with_an_audit_record_is_caught(ledger: Ledger, audited: AuditOutcome, edit: str) -> None:
    ent = audit_entanglement(audited.tree_sha256, audited.markdown, audited.model_ids)
    record = await ledger.append_audit(audited.result, installation_id=None, entanglement=ent)
    raw = dict(record.raw_result)
    if edit == "ruling":
        raw["rulings"] = [{**r, "score": 5.0} for r in raw["rulings"]]
        await sql(ledger, "UPDATE dbom_records SET raw_result = :raw WHERE id = :id", raw=json.dumps(raw),
                  id=record.id)
    elif edit == "verdict-column":
        await sql(ledger, "UPDATE dbom_records SET verdict = 'fail', cis_score = 0.1 WHERE id = :id", id=record.id)
    else:  # the hallucinations quietly turned into verified claims, and the hash column recomputed to match
        from checks.dbom import evaluation_sha256

        raw["claims"] = [{**c, "status": "verified"} for c in raw["claims"]]
        await sql(ledger, "UPDATE dbom_records SET raw_result = :raw, evaluation_sha256 = :h WHERE id = :id",
                  raw=json.dumps(raw), h=evaluation_sha256(raw), id=record.id)
    report = await ledger.verify()
    assert not report.ok
    assert {p.check for p in report.problems} >= {"record"}
    assert all(p.record_id in (record.id, None) for p in report.problems)


async def test_export_render_and_document_check(ledger: Ledger, audited: AuditOutcome) -> None:
    ent = audit_entanglement(audited.tree_sha256, audited.markdown, audited.model_ids)
    record = await ledger.append_audit(audited.result, installation_id=None, entanglement=ent)

    statement = open_dsse(dsse_envelope(record, ledger.keyring.active),
                          {k["key_id"]: load_public_pem(k["public_key"]) for k in ledger.public_keys()})
    assert statement["predicateType"] == AUDIT_PREDICATE_TYPE
    assert statement["subject"] == [{"name": f"courtroom@{audited.result.head_sha}",
                                     "digest": {"gitCommit": audited.result.head_sha}}]
    assert statement["predicate"]["audit"]["verdict"] == audited.result.verdict

    proof = await ledger.proof(record.id)
    served = render_dbom_json(record, proof)
    assert served["signature"]["signed"].startswith("'logomesh.audit-dbom/v1' NUL")
    page = render_dbom_html(record, proof)
    assert "repository audit" in page and "safe_tool_engineering" in page and "hallucinated" in page
    assert "<script" not in page

    document = with_dbom_footer(audited.markdown, record.id)
    assert check_document(record, document) == []
    edited = document.replace("| pass", "| PASS", 1) if "| pass" in document else document.replace("#", "##", 1)
    assert [p.check for p in check_document(record, edited)] == ["document"]
    other = with_dbom_footer(audited.markdown, "0" * 32)
    assert "names DBOM 000" in check_document(record, other)[0].message
    assert "no DBOM footer" in check_document(record, audited.markdown)[0].message
    ev = evaluation(5)
    review = await ledger.append(ev, installation_id=None, entanglement=entanglement(ev))
    assert "not an audit" in check_document(review, document)[0].message


async def test_a_directory_audit_is_subject_to_its_tree_hash(ledger: Ledger, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "main.py").write_text("def main() -> int:\n    return 0\n")
    outcome = await audit_repository(str(plain), settings=load_settings(home=tmp_path / "h"))
    ent = audit_entanglement(outcome.tree_sha256, outcome.markdown, outcome.model_ids)
    record = await ledger.append_audit(outcome.result, installation_id=None, entanglement=ent)
    statement = open_dsse(dsse_envelope(record, ledger.keyring.active),
                          {k["key_id"]: load_public_pem(k["public_key"]) for k in ledger.public_keys()})
    assert statement["subject"][0]["digest"] == {"sha256": outcome.tree_sha256}
    (plain / "main.py").write_text("def main() -> int:\n    return 1\n")
    changed = await audit_repository(str(plain), settings=load_settings(home=tmp_path / "h"))
    assert changed.tree_sha256 != outcome.tree_sha256
    assert (await ledger.verify()).ok
