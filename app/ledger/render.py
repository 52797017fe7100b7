"""Pure renderers of a DBOM for the web: the JSON document and the full, readable HTML report.

The App's ``GET /dbom/{id}`` and ``GET /dbom/{id}.html`` call these with a record and its proof; nothing here
does I/O. The PR comment is short and links here, so the page is the whole review: verdict, scores, the judges'
opinions, the Chief Justice's rulings, the evidence by severity, the tests, then the record, its signature and
how to verify it.

Everything that came from a pull request (paths, test names, messages, the judges' arguments quoting them) is
untrusted: it is escaped, capped in length, and never becomes a link, except a file's path in a link to that file
at the head commit on GitHub, where each path component is URL-quoted and the repository name is validated.
Long lists are capped at :data:`MAX_LIST_ROWS` rows; the JSON record holds the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape
from typing import Any

from app.receiver.pages import page_html
from checks.dbom import AuditDbomBody, DbomBody, DbomRecord
from checks.fixes import what_to_fix
from checks.links import GITHUB_WEB, GitHubLinks, cwe_url
from checks.models import SEVERITY_ORDER, Evaluation

MAX_LIST_ROWS = 60
MAX_CELL = 1000
_WHERE = re.compile(r"^(.+):(\d{1,9})$")
# bidirectional overrides and isolates can make text read differently from what it says (Trojan Source)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f]")
SEVERITIES = ("critical", "high", "medium", "low", "info")

CIS_LEGEND = (
    "CIS raw is the rubric-weighted mean of four components in [0, 1]: R, rationale (does the code do what the "
    "PR says it is for), A, architecture (the repository's constraints), T, testing (the tests as run in the "
    "sandbox) and L, logic (the judges' review, held close to the facts). CIS = CIS raw × (1 − red penalty) × "
    "intent penalty. Not measured: nothing to measure, the rubric's stand-in value counts instead."
)
AUDIT_LEGEND = (
    "Each criterion is the Chief Justice's ruling from 1 to 5, made from the judges' opinions and the facts; "
    "the audit score is their mean, the unit score the same on [0, 1]."
)


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


# --- small pieces -----------------------------------------------------------------------------------------


def _t(value: object, limit: int = MAX_CELL) -> str:
    """Untrusted text as inert HTML: bidi controls removed, length capped, escaped."""
    text = _BIDI.sub("", "" if value is None else str(value))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return escape(text)


def _a(href: str, text_html: str) -> str:
    return f"<a href=\"{escape(href)}\">{text_html}</a>"


def _row(label: str, value: object) -> str:
    shown = "—" if value is None or value == "" else str(value)
    return f"<tr><th>{escape(label)}</th><td><code>{_t(shown, 4000)}</code></td></tr>"


def _kv(rows: list[str]) -> str:
    return "<table class=\"kv\">" + "".join(rows) + "</table>"


def _table(head: tuple[str, ...], rows: list[str], total: int | None = None) -> str:
    more = ""
    if total is not None and total > len(rows):
        more = (f"<tr><td colspan=\"{len(head)}\" class=\"muted\">… and {total - len(rows)} more in the JSON "
                "record</td></tr>")
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table><tr>{cells}</tr>{''.join(rows)}{more}</table>"


def _dicts(value: object) -> list[dict[str, Any]]:
    """The dict items of a list from the raw result (which may be an older or partial record)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strs(value: object) -> list[str]:
    return [str(v) for v in value if v is not None] if isinstance(value, list) else []


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: object, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _where(links: GitHubLinks, path: object, line: object, end_line: object = None) -> str:
    if not isinstance(path, str) or not path:
        return ""
    first = _int(line)
    last = _int(end_line)
    shown = path if first is None else f"{path}:{first}" + (f"-{last}" if last and last != first else "")
    code = f"<code>{_t(shown, 300)}</code>"
    href = links.blob(path, first)
    return _a(href, code) if href else code


def _where_text(links: GitHubLinks, where: object) -> str:
    """A ``path:line`` string (as the sandbox reports a failure's place)."""
    if not isinstance(where, str) or not where:
        return ""
    found = _WHERE.match(where)
    if found:
        return _where(links, found.group(1), int(found.group(2)))
    return _where(links, where, None)


def _cwe(value: object) -> str:
    if not isinstance(value, str) or not value:
        return ""
    url = cwe_url(value)
    return _a(url, f"CWE-{url.rsplit('/', 1)[1].removesuffix('.html')}") if url else _t(value, 40)


def _severity_rank(item: Mapping[str, Any]) -> int:
    return -SEVERITY_ORDER.get(str(item.get("severity", "")), -1)


# --- the sections -----------------------------------------------------------------------------------------


def _links_line(links: GitHubLinks, repo: str, pr_number: int | None, head: str) -> str:
    parts = []
    if links.repo_url:
        parts.append("Repository " + _a(links.repo_url, f"<code>{_t(repo)}</code>"))
    else:
        parts.append(f"Repository <code>{_t(repo, 200)}</code>")
    if pr_number is not None:
        pull = links.pull()
        text = f"#{int(pr_number)}"
        parts.append("Pull request " + (_a(pull, text) if pull else text))
    commit = links.commit()
    short = f"<code>{_t(head[:12], 12)}</code>"
    parts.append("Head commit " + (_a(commit, short) if commit else short))
    return f"<p class=\"links\">{' '.join(f'<span>{p}</span>' for p in parts)}</p>"


def _reasons(raw: Mapping[str, Any]) -> str:
    reasons = _strs(raw.get("verdict_reasons"))
    out = ""
    if reasons:
        items = "".join(f"<li>{_t(r)}</li>" for r in reasons[:MAX_LIST_ROWS])
        out += f"<h2 id=\"why\">Why</h2><ul>{items}</ul>"
    notices = _strs(raw.get("notices"))
    if notices:
        items = "".join(f"<li>{_t(n)}</li>" for n in notices[:MAX_LIST_ROWS])
        out += f"<h2 id=\"notices\">Notices</h2><ul>{items}</ul>"
    return out


def _review_scores(body: DbomBody, raw: Mapping[str, Any]) -> str:
    comp = body.components
    measured = _obj(raw.get("measured"))
    red = _obj(raw.get("red_analysis"))

    def state(key: str) -> str:
        if key not in measured:
            return ""
        return "measured" if measured.get(key) else "<b>not measured</b>"

    def row(label: str, score: str, note: str = "") -> str:
        return f"<tr><td>{escape(label)}</td><td class=\"num\">{score}</td><td>{note}</td></tr>"

    worst = red.get("max_severity")
    rows = [
        row("R — rationale", f"{comp.rationale:.2f}", state("rationale")),
        row("A — architecture", f"{comp.architecture:.2f}", state("architecture")),
        row("T — testing", f"{comp.testing:.2f}", state("testing")),
        row("L — logic (judges, bounded)", f"{comp.logic:.2f}"),
        row("CIS raw", f"{comp.cis_raw:.4f}"),
        row("Red penalty", f"−{comp.red_penalty * 100:.0f} %", f"worst finding: {_t(worst, 20)}" if worst else ""),
        row("Intent penalty", f"×{comp.intent_penalty:.2f}"),
        f"<tr><th>CIS</th><th class=\"num\">{body.cis_score:.4f}</th>"
        f"<th class=\"{escape(body.verdict)}\">{escape(body.verdict)}</th></tr>",
    ]
    return (f"<h2 id=\"scores\">Scores</h2>{_table(('Component', 'Score', ''), rows)}"
            f"<p class=\"legend\">{escape(CIS_LEGEND)}</p>")


def _audit_scores(body: AuditDbomBody) -> str:
    rows = [
        _row("audit score (1–5)", f"{body.score:.2f}"),
        _row("unit score", f"{body.unit_score:.4f}"),
        *[_row(criterion, f"{score:.2f}") for criterion, score in sorted(body.criteria.items())],
        _row("report claims", f"{body.claims.verified} verified, {body.claims.hallucination} hallucinated, "
                              f"{body.claims.unverified} unverified"),
    ]
    return f"<h2 id=\"scores\">Scores</h2>{_kv(rows)}<p class=\"legend\">{escape(AUDIT_LEGEND)}</p>"


def _judges(raw: Mapping[str, Any]) -> str:
    opinions = _dicts(raw.get("opinions"))
    if not opinions:
        return "<h2 id=\"judges\">Judges' opinions</h2><p class=\"muted\">No opinions on record.</p>"
    rows = []
    for op in opinions[:MAX_LIST_ROWS]:
        score = _int(op.get("score"))
        veto = "<span class=\"veto\">veto</span>" if op.get("verdict") == "KILL" else ""
        rows.append(f"<tr><td>{_t(op.get('criterion_id'), 100)}</td><td>{_t(op.get('judge'), 100)}</td>"
                    f"<td class=\"num\">{'—' if score is None else score}/5</td><td>{veto}</td>"
                    f"<td class=\"wrap\">{_t(op.get('argument'))}</td></tr>")
    table = _table(("Criterion", "Judge", "Score", "Veto", "Argument"), rows, len(opinions))
    return f"<h2 id=\"judges\">Judges' opinions</h2>{table}"


def _rulings(raw: Mapping[str, Any]) -> str:
    rulings = _dicts(raw.get("rulings"))
    out = "<h2 id=\"rulings\">Chief Justice's rulings</h2>"
    if not rulings:
        return out + "<p class=\"muted\">No rulings on record.</p>"
    rows = []
    for ruling in rulings[:MAX_LIST_ROWS]:
        rules = ", ".join(_strs(ruling.get("rules_applied"))) or "—"
        overruled = ", ".join(_strs(ruling.get("overruled"))) or "—"
        dissent = ruling.get("dissent")
        rows.append(f"<tr><td>{_t(ruling.get('criterion_id'), 100)}</td>"
                    f"<td class=\"num\">{_num(ruling.get('score'), '.2f')}/5</td><td>{_t(rules)}</td>"
                    f"<td>{_t(overruled)}</td><td class=\"wrap\">{_t(dissent) if dissent else ''}</td></tr>")
    out += _table(("Criterion", "Ruling", "Rules applied", "Overruled judges", "Dissent"), rows, len(rulings))
    dissent = _strs(raw.get("dissent"))
    if dissent:
        out += "<p><b>Dissent</b></p><ul>" + "".join(f"<li>{_t(d)}</li>" for d in dissent[:MAX_LIST_ROWS]) + "</ul>"
    return out


def _evidence(raw: Mapping[str, Any], links: GitHubLinks) -> str:
    evidence = sorted(_dicts(raw.get("evidence")), key=_severity_rank)
    counts = {s: sum(1 for e in evidence if e.get("severity") == s) for s in SEVERITIES}
    tally = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    out = f"<h2 id=\"evidence\">Evidence</h2><p class=\"muted\">{len(evidence)} facts, most severe first"
    out += f" ({escape(tally)})</p>" if tally else ".</p>"
    if not evidence:
        return out
    rows = []
    for ev in evidence[:MAX_LIST_ROWS]:
        severity = str(ev.get("severity", ""))
        location = _obj(ev.get("location"))
        where = _where(links, location.get("path"), location.get("line"), location.get("end_line"))
        rows.append(f"<tr><td class=\"sev-{escape(severity) if severity in SEVERITIES else 'x'}\">"
                    f"{_t(severity, 20)}</td><td>{where}</td><td class=\"wrap\">{_t(ev.get('summary'))}</td>"
                    f"<td>{_cwe(ev.get('cwe'))}</td><td>{_t(ev.get('detective'), 100)}</td></tr>")
    return out + _table(("Severity", "Where", "Finding", "CWE", "Detective"), rows, len(evidence))


def _tests(raw: Mapping[str, Any], links: GitHubLinks) -> str:
    tests = raw.get("tests") if isinstance(raw.get("tests"), dict) else None
    diff = raw.get("differential") if isinstance(raw.get("differential"), dict) else None
    if tests is None and diff is None:
        return ""
    out = "<h2 id=\"tests\">Tests</h2>"
    if tests is not None:
        counts = ", ".join(f"{_num(tests.get(k), 'd')} {k}" for k in ("passed", "failed", "errored", "skipped"))
        reason = f" — {_t(tests.get('reason'))}" if tests.get("reason") else ""
        out += f"<p>Sandbox run: <b>{_t(tests.get('status'), 40)}</b>, {counts}{reason}</p>"
        failing = [t for t in _dicts(tests.get("collection_errors")) + _dicts(tests.get("tests"))
                   if t.get("outcome") in ("failed", "error")]
        if failing:
            rows = [f"<tr><td class=\"wrap\"><code>{_t(t.get('name'), 300)}</code></td>"
                    f"<td>{_t(t.get('outcome'), 20)}</td><td>{_where_text(links, t.get('location'))}</td>"
                    f"<td class=\"wrap\">{_t(t.get('message'))}</td></tr>" for t in failing[:MAX_LIST_ROWS]]
            out += "<p><b>Failing tests</b></p>"
            out += _table(("Test", "Outcome", "Where", "Message"), rows, len(failing))
    if diff is not None:
        moved = [(label, change) for key, label in (("regressed", "regressed"), ("new_failing", "new, failing"),
                                                    ("tampered", "tampered"))
                 for change in _dicts(diff.get(key))]
        summary = ", ".join(f"{len(_strs(diff.get(k)))} {k.replace('_', ' ')}"
                            for k in ("fixed", "new_passing", "removed", "pre_existing"))
        out += (f"<p>Base against head: <b>{_t(diff.get('status'), 40)}</b>, "
                f"{_num(diff.get('unchanged_passing'), 'd')} unchanged passing, {summary}</p>")
        if moved:
            rows = [f"<tr><td>{escape(label)}</td><td class=\"wrap\"><code>{_t(c.get('name'), 300)}</code></td>"
                    f"<td>{_t(c.get('base') or 'absent', 20)} → {_t(c.get('head'), 20)}</td>"
                    f"<td>{_where_text(links, c.get('location'))}</td><td class=\"wrap\">{_t(c.get('message'))}</td>"
                    "</tr>" for label, c in moved[:MAX_LIST_ROWS]]
            out += "<p><b>Outcomes the change moved</b></p>"
            out += _table(("Change", "Test", "Base → head", "Where", "Message"), rows, len(moved))
    return out


def _claims(raw: Mapping[str, Any], links: GitHubLinks) -> str:
    checks = _dicts(raw.get("claims"))
    if not checks:
        return ""
    rows = []
    for check in checks[:MAX_LIST_ROWS]:
        claim = _obj(check.get("claim"))
        location = _obj(check.get("location"))
        page = _int(claim.get("page"))
        rows.append(f"<tr><td>{_t(check.get('status'), 20)}</td><td>{_t(claim.get('kind'), 20)}</td>"
                    f"<td class=\"wrap\"><code>{_t(claim.get('value'), 300)}</code></td>"
                    f"<td class=\"num\">{'' if page is None else page}</td>"
                    f"<td class=\"wrap\">{_t(check.get('detail'))}</td>"
                    f"<td>{_where(links, location.get('path'), location.get('line'))}</td></tr>")
    return ("<h2 id=\"claims\">The report's claims</h2>"
            + _table(("Status", "Kind", "Claim", "Page", "Detail", "Where"), rows, len(checks)))


def _review_inputs(body: DbomBody) -> list[str]:
    ent = body.entanglement
    return [
        _row("repository", ent.repo), _row("pull request", ent.pr_number), _row("base", ent.base_sha),
        _row("head", ent.head_sha), _row("diff SHA-256", ent.diff_sha256),
        _row("PR text SHA-256", ent.pr_text_sha256), _row(".logomesh.yml SHA-256", ent.config_sha256),
        _row("rubric", f"{ent.rubric_version} ({ent.rubric_sha256})"),
        _row("sandbox image", ent.sandbox_image), _row("sandbox image digest", ent.sandbox_image_digest),
        *[_row(f"model: {k}", v) for k, v in sorted(ent.model_ids.items())],
        *[_row(f"judge prompt: {k}", v) for k, v in sorted(ent.judge_prompt_hashes.items())],
        *[_row(f"tool: {k}", v) for k, v in sorted(ent.tool_versions.items())],
    ]


def _audit_inputs(body: AuditDbomBody) -> list[str]:
    ent = body.entanglement
    return [
        _row("repository", body.repo), _row("head", body.head_sha), _row("tree SHA-256", ent.tree_sha256),
        _row("report (PDF) SHA-256", body.report_sha256), _row("Markdown report SHA-256", ent.markdown_sha256),
        _row("rubric", f"{body.rubric_version} ({body.rubric_sha256})"),
        *[_row(f"model: {k}", v) for k, v in sorted(ent.model_ids.items())],
        *[_row(f"tool: {k}", v) for k, v in sorted(ent.tool_versions.items())],
    ]


def _integrity(record: DbomRecord, proof: Mapping[str, Any] | None, audit: bool) -> list[str]:
    rows = [
        _row("record id", record.id), _row("log", record.log_id), _row("leaf index", record.leaf_index),
        _row("leaf hash", record.leaf_hash),
        _row("audit result SHA-256" if audit else "evaluation SHA-256 H(Δ)", record.evaluation_sha256),
        _row("signed by key", record.key_id), _row("signature (Ed25519)", record.signature),
        _row("recorded at", record.created_at.isoformat()),
    ]
    if proof is None:
        rows.append(_row("inclusion proof", "not yet in a signed tree head: reload later"))
        return rows
    head = proof.get("tree_head") or {}
    return [
        *rows, _row("tree size", head.get("tree_size")), _row("root hash", head.get("root_hash")),
        _row("tree head signature", head.get("signature")),
        _row("inclusion proof", " ".join(str(h) for h in proof.get("inclusion_proof", [])) or "(none needed)"),
    ]


def _verify(record: DbomRecord, audit: bool) -> str:
    rid = escape(record.id)
    raw_name = "audit result" if audit else "evaluation"
    return (
        "<h2 id=\"verify\">How to verify this record</h2><ol>"
        f"<li>Download the record as JSON: {_a(record.id, f'<code>/dbom/{rid}</code>')} (the signed body, the raw "
        f"{raw_name} and the inclusion proof), and the public keys: "
        f"{_a('../.well-known/logomesh/keys', '<code>/.well-known/logomesh/keys</code>')}.</li>"
        f"<li>Offline: the SHA-256 of the RFC 8785 canonical JSON of <code>evaluation</code> must equal "
        "<code>dbom.evaluation_sha256</code>; the Ed25519 signature must verify, with the key named by "
        f"<code>signature.key_id</code>, over <code>'{escape(record.body.schema_)}'</code>, a NUL byte and the "
        "canonical JSON of <code>dbom</code>; the RFC 9162 inclusion proof must lead from "
        "<code>leaf_hash</code> to the root of the signed tree head.</li>"
        f"<li>Where the ledger lives, one command checks all of it: <code>logomesh dbom verify {rid}</code> "
        "(<code>--all</code> checks every record and the logs' consistency).</li></ol>"
    )


def _fixes(raw: Mapping[str, Any], links: GitHubLinks) -> str:
    """What to fix, as the PR comment leads with it (``checks/fixes.py``); nothing when the record is not a
    readable Evaluation (e.g. written by another version)."""
    try:
        evaluation = Evaluation.model_validate(raw)
    except ValueError:
        return ""
    fixes = what_to_fix(evaluation)
    if not fixes:
        return ""
    items = []
    for fix in fixes:
        where = _where(links, fix.location.path, fix.location.line) if fix.location is not None else ""
        subject = f"<code>{_t(fix.subject, 200)}</code>: " if fix.subject else ""
        detail = f"<br>{subject}{_t(fix.detail, 600)}" if fix.detail and fix.detail != fix.title else ""
        hint = f"<br><em>{_t(fix.hint, 300)}</em>" if fix.hint else ""
        items.append(f"<li><strong>{_t(fix.title, 200)}</strong>{' · ' + where if where else ''}{detail}{hint}</li>")
    title = "What to fix" if evaluation.verdict != "pass" else "Worth a look"
    return f"<h2 id=\"fix\">{title}</h2><ol>{''.join(items)}</ol>"


def render_dbom_html(record: DbomRecord, proof: Mapping[str, Any] | None, *,
                     web_url: str = GITHUB_WEB) -> str:
    """The full report for people following the PR comment's link: a self-contained page, no scripts, no
    external resources. ``web_url`` is GitHub's web address (github.com or a GHES host) for the links."""
    body = record.body
    raw = record.raw_result
    verdict = body.verdict
    if isinstance(body, AuditDbomBody):
        links = GitHubLinks.build(web_url, body.repo, body.head_sha, None)
        heading = f"Repository audit: {escape(verdict.upper())} — score {body.score:.2f}/5"
        head = _links_line(links, body.repo, None, body.head_sha)
        scores, inputs, audit = _audit_scores(body), _audit_inputs(body), True
        extra = _claims(raw, links)
    else:
        ent = body.entanglement
        links = GitHubLinks.build(web_url, ent.repo, ent.head_sha, ent.pr_number)
        heading = f"{escape(verdict.upper())} — CIS {body.cis_score:.4f}"
        head = _links_line(links, ent.repo, ent.pr_number, ent.head_sha)
        scores, inputs, audit = _review_scores(body, raw), _review_inputs(body), False
        extra = _tests(raw, links)
    rubric = _obj(raw.get("rubric"))
    rubric_line = f" · rubric {_t(rubric.get('name'), 80)} v{_t(rubric.get('version'), 40)}" if rubric else ""
    content = (
        f"<h1 class=\"{escape(verdict)}\">{heading}</h1>{head}"
        f"<p class=\"muted\">Decision Bill of Materials <code>{escape(record.id)}</code> · recorded "
        f"{escape(record.created_at.isoformat())}{rubric_line}</p>"
        + ("" if audit else _fixes(raw, links)) + _reasons(raw) + scores + _judges(raw) + _rulings(raw)
        + _evidence(raw, links) + extra
        + f"<h2 id=\"inputs\">Inputs (entangled)</h2>{_kv(inputs)}"
        + f"<h2 id=\"integrity\">Record, signature and proof</h2>{_kv(_integrity(record, proof, audit))}"
        + _verify(record, audit)
    )
    kind = "audit DBOM" if audit else "DBOM"
    title = f"{verdict.upper()} — LogoMesh {kind} {record.id}"
    return page_html(title, content, section=f"Decision Bill of Materials{' — repository audit' if audit else ''}")

