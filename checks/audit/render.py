"""Render an :class:`~checks.audit.models.AuditResult` as the Markdown audit report.

Sections: executive summary, score table, one section per criterion (question, level reached, each judge's
opinion, the Chief Justice's ruling and dissent, the evidence cited with ``file:line``), the report's claims
cross-referenced, notices and a remediation plan. Everything that came from the repository or the report is
untrusted and goes through :func:`checks.render.escape_md`; no clock, no temp path, so the bytes are stable.

Once the audit's DBOM is in the ledger, :func:`with_dbom_footer` appends a footer naming it; the DBOM records
the SHA-256 of the report *above* that footer, which :func:`split_dbom_footer` gives back for verification.
"""

from __future__ import annotations

import hashlib

from checks.audit.models import AuditResult, ReportSection
from checks.models import CriterionRuling, Evidence, JudicialOpinion
from checks.render import escape_md
from rubric import Criterion, Rubric

MARKER = "<!-- logomesh:audit -->"
DBOM_MARKER = "<!-- logomesh:dbom -->"
VERDICT_ICON = {"pass": "✅", "neutral": "⚠️", "fail": "❌"}
MAX_CITED = 12
MAX_CLAIMS = 60
MAX_SECTIONS = 30
QUOTE_CHARS = 160
REMEDIATE_BELOW = 4.0


def _where(e: Evidence) -> str:
    if e.location is None:
        return "—"
    if e.facts.get("report"):
        page = f" p. {e.location.line}" if e.location.line else ""
        return f"`{escape_md(e.location.path, 120)}{page}`"
    return f"`{escape_md(str(e.location), 160)}`"


def render_outline(sections: tuple[ReportSection, ...]) -> str:
    if not sections:
        return "The PDF has no outline (no bookmarked sections)."
    shown = [("↳ " * min(s.level, 3)) + escape_md(s.title or "(untitled)", 80)
             + (f" (p. {s.page})" if s.page is not None else "") for s in sections[:MAX_SECTIONS]]
    more = f"; … and {len(sections) - MAX_SECTIONS} more" if len(sections) > MAX_SECTIONS else ""
    return f"The PDF's outline ({len(sections)} section(s)): " + "; ".join(shown) + more + "."


def _level(criterion: Criterion, score: float) -> str:
    if not criterion.levels:
        return ""
    key = str(max(1, min(5, int(score + 0.5))))
    return criterion.levels.get(key, "")


def _judges(opinions: list[JudicialOpinion]) -> list[str]:
    return [f"- **{escape_md(op.judge)}** {op.score}/5{' · KILL' if op.verdict == 'KILL' else ''}: "
            f"{escape_md(op.argument, 600)}" for op in opinions]


def _criterion_section(criterion: Criterion, ruling: CriterionRuling, opinions: list[JudicialOpinion],
                       evidence: dict[str, Evidence], fact: float | None) -> list[str]:
    lines = [f"### {escape_md(criterion.title)} — {ruling.score:.2f}/5", "",
             f"*{escape_md(criterion.question, 600)}*", ""]
    passage = evidence.get(f"report.passage:{criterion.id}")
    if passage is not None and passage.location is not None:
        lines += [f"The report on this (p. {passage.location.line}): “{escape_md(passage.summary, 300)}”", ""]
    level = _level(criterion, ruling.score) if fact is not None else ""
    if fact is None and criterion.levels:
        lines += ["Level reached: not established — the facts did not measure this criterion.", ""]
    if level:
        lines += [f"Level reached: {escape_md(level, 600)}", ""]
    lines.append(f"Facts alone: {'not measured' if fact is None else f'{fact:.2f}/5'}.")
    lines += ["", "Judges:", *_judges(opinions), ""]
    rules = ", ".join(ruling.rules_applied) or "none"
    overruled = ", ".join(ruling.overruled) or "nobody"
    lines.append(f"Chief Justice: {ruling.score:.2f}/5 from {ruling.opinions_considered} opinion(s); "
                 f"rules applied: {escape_md(rules)}; overruled: {escape_md(overruled)}.")
    if ruling.dissent:
        lines += ["", f"> Dissent: {escape_md(ruling.dissent, 1200)}"]
    cited = sorted({i for op in opinions for i in op.cited_evidence})
    shown = [evidence[i] for i in cited if i in evidence]
    shown.sort(key=lambda e: (e.severity == "info", e.id))
    if shown:
        lines += ["", "| Severity | Where | Evidence |", "| --- | --- | --- |"]
        lines += [f"| {e.severity} | {_where(e)} | {escape_md(e.summary)} |" for e in shown[:MAX_CITED]]
        if len(shown) > MAX_CITED:
            lines.append(f"| | | … and {len(shown) - MAX_CITED} more |")
    return [*lines, ""]


def _remediation(result: AuditResult, rubric: Rubric, evidence: dict[str, Evidence]) -> list[str]:
    steps: list[str] = []
    by_id = {r.criterion_id: r for r in result.rulings}
    for criterion in sorted(rubric.criteria, key=lambda c: (by_id[c.id].score, c.id)):
        ruling = by_id[criterion.id]
        if ruling.score >= REMEDIATE_BELOW:
            continue
        target = min(5, max(4, int(ruling.score + 0.5) + 1))
        goal = (criterion.levels or {}).get(str(target), criterion.question)
        problems = sorted({i for op in result.opinions if op.criterion_id == criterion.id for i in op.cited_evidence})
        adverse = [evidence[i] for i in problems if i in evidence and evidence[i].severity != "info"]
        fix = "; ".join(f"{escape_md(e.summary, 200)} ({_where(e)})" for e in adverse[:4]) or "no adverse fact recorded"
        steps.append(f"{len(steps) + 1}. **{escape_md(criterion.title)}** ({ruling.score:.2f}/5 → level {target}): "
                     f"{escape_md(goal, 400)} Address: {fix}.")
    return steps or ["Nothing scores below 4/5; keep the record as it is."]


def render_audit(result: AuditResult, rubric: Rubric) -> str:
    evidence = {e.id: e for e in result.evidence}
    by_id = {r.criterion_id: r for r in result.rulings}
    hallucinations = [c for c in result.claims if c.status == "hallucination"]
    unsafe = [e for e in result.evidence if e.kind == "constraint-violation"]
    lowest = sorted(result.rulings, key=lambda r: (r.score, r.criterion_id))[:3]
    titles = {c.id: c.title for c in rubric.criteria}

    lines = [
        MARKER,
        f"# {VERDICT_ICON[result.verdict]} LogoMesh audit: {escape_md(result.repo)} — "
        f"{result.score:.2f}/5 ({result.verdict})",
        "",
        f"- Repository: `{escape_md(result.repo)}` at `{result.head_sha[:12]}`",
        f"- Rubric: {escape_md(result.rubric.name)} v{escape_md(result.rubric.version)} "
        f"(sha256 {result.rubric.sha256[:12]}), {len(rubric.criteria)} criteria",
    ]
    if result.report is not None:
        r = result.report
        lines.append(f"- Report: `{escape_md(r.name)}` (sha256 {r.sha256[:12]}), {r.pages} page(s), "
                     f"{r.images} image(s)")
    else:
        lines.append("- Report: none supplied")
    lines += ["", "## Executive summary", "",
              f"The court scores this repository **{result.score:.2f}/5** ({result.unit_score:.2f} on [0, 1]), "
              f"verdict **{result.verdict}**, across {len(result.rulings)} criteria heard by "
              f"{len({op.judge for op in result.opinions})} judge(s). "
              f"{len(result.evidence)} fact(s) were collected; {len(unsafe)} unsafe construct(s) in the code; "
              + (f"{len(result.claims)} claim(s) of the report checked, {len(hallucinations)} hallucinated."
                 if result.report is not None else "no report was supplied."),
              "",
              "Weakest: " + "; ".join(f"{escape_md(titles.get(r.criterion_id, r.criterion_id))} "
                                      f"{r.score:.2f}/5" for r in lowest) + ".",
              "", *[f"- {escape_md(reason, 600)}" for reason in result.verdict_reasons]]

    judges = sorted({op.judge for op in result.opinions})
    lines += ["", "## Scores", "",
              "| Criterion | Facts | " + " | ".join(escape_md(j) for j in judges) + " | Chief Justice | Rules |",
              "| --- | ---: | " + " | ".join("---:" for _ in judges) + " | ---: | --- |"]
    for criterion in rubric.criteria:
        ruling = by_id[criterion.id]
        fact = result.fact_scores.get(criterion.id)
        cells = []
        for judge in judges:
            op = next((o for o in result.opinions if o.criterion_id == criterion.id and o.judge == judge), None)
            cells.append("—" if op is None else f"{op.score}{' KILL' if op.verdict == 'KILL' else ''}")
        lines.append(f"| {escape_md(criterion.title)} | {'—' if fact is None else f'{fact:.2f}'} | "
                     + " | ".join(cells) + f" | **{ruling.score:.2f}** | "
                     f"{escape_md(', '.join(ruling.rules_applied) or '—')} |")
    lines += [f"| **Overall** | | {' | '.join('' for _ in judges)} | **{result.score:.2f}** | |", ""]

    lines += ["## Criteria", ""]
    for criterion in rubric.criteria:
        opinions = [op for op in result.opinions if op.criterion_id == criterion.id]
        lines += _criterion_section(criterion, by_id[criterion.id], opinions, evidence,
                                    result.fact_scores.get(criterion.id))

    if result.report is not None:
        lines += ["## Report cross-reference", "", render_outline(result.report.sections), "",
                  "| Status | Claim | Kind | Page | The report says | Finding |",
                  "| --- | --- | --- | ---: | --- | --- |"]
        order = {"hallucination": 0, "unverified": 1, "verified": 2}
        claims = sorted(result.claims, key=lambda c: (order[c.status], c.claim.page, c.claim.kind, c.claim.value))
        for check in claims[:MAX_CLAIMS]:
            kind = f"{check.claim.kind} (absent)" if check.claim.negated else check.claim.kind
            lines.append(f"| {check.status} | `{escape_md(check.claim.value, 120)}` | {kind} | "
                         f"{check.claim.page} | {escape_md(check.claim.quote, QUOTE_CHARS)} | "
                         f"{escape_md(check.detail)} |")
        if len(claims) > MAX_CLAIMS:
            lines.append(f"| | … and {len(claims) - MAX_CLAIMS} more | | | | |")
        if not claims:
            lines.append("| — | no checkable claim found | | | | |")
        lines.append("")

    notable = [e for e in result.evidence if e.severity != "info"]
    lines += [f"## Evidence ({len(notable)} notable of {len(result.evidence)})", "",
              "| Severity | Where | Finding | CWE |", "| --- | --- | --- | --- |"]
    lines += [f"| {e.severity} | {_where(e)} | {escape_md(e.summary)} | {e.cwe or ''} |" for e in notable]
    if not notable:
        lines.append("| — | | nothing adverse on record | |")

    if result.notices:
        lines += ["", "## Notices", "", *[f"- {escape_md(n, 600)}" for n in result.notices]]
    lines += ["", "## Remediation plan", "", *_remediation(result, rubric, evidence), ""]
    lines.append(f"<sub>LogoMesh audit · rubric sha256 {result.rubric.sha256[:12]} · head {result.head_sha[:12]}</sub>")
    return "\n".join(lines) + "\n"


def markdown_sha256(markdown: str) -> str:
    """What an audit's DBOM records of its Markdown report (the report above the footer)."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def with_dbom_footer(markdown: str, record_id: str, url: str | None = None) -> str:
    """The report followed by a footer naming its DBOM (linked when the ledger is served at ``url``)."""
    named = f"[`{record_id}`]({url})" if url else f"`{record_id}`"
    return (f"{markdown}\n{DBOM_MARKER}\n**DBOM** {named}: the signed record of this audit. "
            f"`logomesh dbom verify {record_id} --document FILE` checks this file against it.\n")


def split_dbom_footer(text: str) -> tuple[str, str | None]:
    """``(report, record id)``: the report above the last DBOM footer and the id it names; ``(text, None)``
    when there is no footer."""
    cut = text.rfind(f"\n{DBOM_MARKER}\n")
    if cut < 0:
        return text, None
    footer = text[cut + len(DBOM_MARKER) + 2:]
    start = footer.find("`")
    end = footer.find("`", start + 1)
    return text[:cut], (footer[start + 1:end] if 0 <= start < end else None)
