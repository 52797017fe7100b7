"""Pure renderers of a DBOM for the web: the JSON document and a readable, escaped HTML page.

The App's ``GET /dbom/{id}`` and ``GET /dbom/{id}.html`` call these with a record and its proof; nothing here
does I/O. Everything that came from a pull request is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from checks.dbom import AuditDbomBody, DbomBody, DbomRecord

MAX_LIST_ROWS = 60


def render_dbom_json(record: DbomRecord, proof: Mapping[str, Any] | None) -> dict[str, Any]:
    """The record as served at ``/dbom/{id}``: body, signature, raw evaluation (or audit) and inclusion proof."""
    return {
        "id": record.id,
        "log_id": record.log_id,
        "leaf_index": record.leaf_index,
        "leaf_hash": record.leaf_hash,
        "created_at": record.created_at.isoformat(),
        "dbom": record.body.to_json(),
        "signature": {"alg": "Ed25519", "key_id": record.key_id, "value": record.signature,
                      "signed": f"'{record.body.schema_}' NUL || RFC 8785 canonical JSON of dbom"},
        "evaluation_sha256": record.evaluation_sha256,
        "evaluation": record.raw_result,
        "proof": dict(proof) if proof is not None else None,
    }


def _row(label: str, value: object) -> str:
    shown = "—" if value is None or value == "" else str(value)
    return f"<tr><th>{escape(label)}</th><td><code>{escape(shown)}</code></td></tr>"


def _table(rows: list[str]) -> str:
    return "<table>" + "".join(rows) + "</table>"


def _review_sections(body: DbomBody) -> tuple[list[str], list[str]]:
    ent = body.entanglement
    comp = body.components
    scores = [
        _row("CIS (final)", f"{body.cis_score:.4f}"),
        _row("R — rationale", f"{comp.rationale:.4f}"),
        _row("A — architecture", f"{comp.architecture:.4f}"),
        _row("T — testing", f"{comp.testing:.4f}"),
        _row("L — logic", f"{comp.logic:.4f}"),
        _row("CIS (raw)", f"{comp.cis_raw:.4f}"),
        _row("red penalty", comp.red_penalty),
        _row("intent penalty", comp.intent_penalty),
    ]
    inputs = [
        _row("repository", ent.repo), _row("pull request", ent.pr_number), _row("base", ent.base_sha),
        _row("head", ent.head_sha), _row("diff SHA-256", ent.diff_sha256),
        _row("PR text SHA-256", ent.pr_text_sha256), _row(".logomesh.yml SHA-256", ent.config_sha256),
        _row("rubric", f"{ent.rubric_version} ({ent.rubric_sha256})"),
        _row("sandbox image", ent.sandbox_image), _row("sandbox image digest", ent.sandbox_image_digest),
        *[_row(f"model: {k}", v) for k, v in sorted(ent.model_ids.items())],
        *[_row(f"judge prompt: {k}", v) for k, v in sorted(ent.judge_prompt_hashes.items())],
        *[_row(f"tool: {k}", v) for k, v in sorted(ent.tool_versions.items())],
    ]
    return scores, inputs


def _audit_sections(body: AuditDbomBody) -> tuple[list[str], list[str]]:
    ent = body.entanglement
    scores = [
        _row("audit score (1–5)", f"{body.score:.2f}"),
        _row("unit score", f"{body.unit_score:.4f}"),
        *[_row(criterion, f"{score:.2f}") for criterion, score in sorted(body.criteria.items())],
        _row("report claims", f"{body.claims.verified} verified, {body.claims.hallucination} hallucinated, "
                              f"{body.claims.unverified} unverified"),
    ]
    inputs = [
        _row("repository", body.repo), _row("head", body.head_sha), _row("tree SHA-256", ent.tree_sha256),
        _row("report (PDF) SHA-256", body.report_sha256), _row("Markdown report SHA-256", ent.markdown_sha256),
        _row("rubric", f"{body.rubric_version} ({body.rubric_sha256})"),
        *[_row(f"model: {k}", v) for k, v in sorted(ent.model_ids.items())],
        *[_row(f"tool: {k}", v) for k, v in sorted(ent.tool_versions.items())],
    ]
    return scores, inputs


def render_dbom_html(record: DbomRecord, proof: Mapping[str, Any] | None) -> str:
    """A self-contained page (no scripts, no external resources) for people following the PR comment's link."""
    body = record.body
    raw = record.raw_result
    verdict = body.verdict
    audit = isinstance(body, AuditDbomBody)
    scores, inputs = _audit_sections(body) if isinstance(body, AuditDbomBody) else _review_sections(body)
    integrity = [
        _row("record id", record.id), _row("log", record.log_id), _row("leaf index", record.leaf_index),
        _row("leaf hash", record.leaf_hash),
        _row("audit result SHA-256" if audit else "evaluation SHA-256 H(Δ)", record.evaluation_sha256),
        _row("signed by key", record.key_id), _row("signature (Ed25519)", record.signature),
        _row("recorded at", record.created_at.isoformat()),
    ]
    if proof is not None:
        head = proof.get("tree_head") or {}
        integrity += [
            _row("tree size", head.get("tree_size")), _row("root hash", head.get("root_hash")),
            _row("tree head signature", head.get("signature")),
            _row("inclusion proof", " ".join(str(h) for h in proof.get("inclusion_proof", [])) or "(none needed)"),
        ]
    reasons = "".join(f"<li>{escape(str(r))}</li>" for r in list(raw.get("verdict_reasons", []))[:MAX_LIST_ROWS])
    evidence = raw.get("evidence", [])
    ev_rows = "".join(
        f"<tr><td>{escape(str(e.get('severity', '')))}</td><td>{escape(str(e.get('detective', '')))}</td>"
        f"<td>{escape(str(e.get('summary', '')))}</td></tr>"
        for e in list(evidence)[:MAX_LIST_ROWS] if isinstance(e, dict)
    )
    raw_json = json.dumps(raw, indent=2, sort_keys=True, ensure_ascii=False)
    title = f"LogoMesh {'audit ' if audit else ''}DBOM {record.id}"
    raw_name = "audit result" if audit else "evaluation"
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{escape(title)}</title><style>"
        "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}"
        "table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}th,td{text-align:left;padding:.25rem .5rem;"
        "border-bottom:1px solid #ddd;vertical-align:top}th{width:16rem;font-weight:600}"
        "code,pre{font-size:.85rem;word-break:break-all;white-space:pre-wrap}"
        ".pass{color:#1a7f37}.neutral{color:#9a6700}.fail{color:#cf222e}</style></head><body>"
        f"<h1>Decision Bill of Materials{' — repository audit' if audit else ''}</h1>"
        f"<p><code>{escape(record.id)}</code></p>"
        f"<h2>Verdict: <span class=\"{escape(verdict)}\">{escape(verdict.upper())}</span></h2>"
        f"<ul>{reasons}</ul><h2>Scores</h2>{_table(scores)}"
        f"<h2>Inputs (entangled)</h2>{_table(inputs)}"
        f"<h2>Integrity</h2>{_table(integrity)}"
        f"<p>Verify: recompute RFC 8785 canonical JSON of the {raw_name} (its SHA-256 is H(Δ)) and of the DBOM body, "
        "check the Ed25519 signature with the key listed at <code>/.well-known/logomesh/keys</code>, and check "
        "the RFC 9162 inclusion proof against the signed tree head — or run "
        f"<code>logomesh dbom verify {escape(record.id)}</code> against the ledger.</p>"
        f"<h2>Evidence</h2><table><tr><th>severity</th><th>detective</th><th>summary</th></tr>{ev_rows}</table>"
        f"<details><summary>Raw {raw_name} (raw_result)</summary><pre>{escape(raw_json)}</pre></details>"
        "</body></html>"
    )
