"""Render an Evaluation for people: the Markdown report (PR comment, check run summary) and a short text.

Everything that came from the PR (paths, titles, test names, judges' arguments quoting them) is untrusted:
it is escaped so it can never open a link, embed an image, ping someone with ``@`` or inject HTML/tables.
"""

from __future__ import annotations

import re

from checks.models import Evaluation, Evidence

MARKER = "<!-- logomesh:review -->"
MAX_EVIDENCE_ROWS = 40
MAX_CELL = 300

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")
_SCHEME = re.compile(r"(?i)\b(https?|ftp|file|javascript|data|mailto):")
VERDICT_ICON = {"pass": "✅", "neutral": "⚠️", "fail": "❌"}


def escape_md(text: str, limit: int = MAX_CELL) -> str:
    """Inert Markdown: one line, specials escaped, mentions broken, length capped."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = text.replace("@", "@\u200b")
    text = _SCHEME.sub(lambda m: m.group(1) + "\u200b:", text)
    return text


def _component_rows(e: Evaluation) -> list[str]:
    def state(key: str) -> str:
        return "measured" if e.measured.get(key) else "**not measured**"

    return [
        "| Component | Score | |",
        "| --- | ---: | --- |",
        f"| R — rationale | {e.rationale_score:.2f} | {state('rationale')} |",
        f"| A — architecture | {e.architecture_score:.2f} | {state('architecture')} |",
        f"| T — testing | {e.testing_score:.2f} | {state('testing')} |",
        f"| L — logic (judges, bounded) | {e.logic_score:.2f} | |",
        f"| CIS raw | {e.cis_raw:.4f} | |",
        f"| Red penalty | −{e.red_penalty_applied * 100:.0f} % | worst: {e.red_analysis.max_severity} |",
        f"| Intent penalty | ×{e.intent_penalty:.2f} | |",
        f"| **CIS** | **{e.cis_score:.4f}** | **{e.verdict}** |",
    ]


def _where(ev: Evidence) -> str:
    return f"`{escape_md(str(ev.location), 120)}`" if ev.location else ""


def render_markdown(e: Evaluation, dbom_url: str | None = None) -> str:
    lines = [
        MARKER,
        f"## {VERDICT_ICON[e.verdict]} LogoMesh: CIS {e.cis_score:.2f} — {e.verdict}",
        "",
        *_component_rows(e),
        "",
        "### Why",
        *[f"- {escape_md(r, 500)}" for r in e.verdict_reasons],
    ]
    if e.notices:
        lines += ["", "### Notices", *[f"- {escape_md(n, 500)}" for n in e.notices]]
    lines += ["", "### Judges", "", "| Criterion | Judge | Score | Verdict | Argument |",
              "| --- | --- | ---: | --- | --- |"]
    for op in e.opinions:
        lines.append(f"| {escape_md(op.criterion_id)} | {escape_md(op.judge)} | {op.score}/5 | {op.verdict} | "
                     f"{escape_md(op.argument)} |")
    lines += ["", "### Chief Justice", "", "| Criterion | Ruling | Rules applied | Overruled |",
              "| --- | ---: | --- | --- |"]
    for ruling in e.rulings:
        lines.append(f"| {escape_md(ruling.criterion_id)} | {ruling.score:.2f}/5 | "
                     f"{escape_md(', '.join(ruling.rules_applied) or '—')} | "
                     f"{escape_md(', '.join(ruling.overruled) or '—')} |")
    if e.dissent:
        lines += ["", "### Dissent", *[f"> {escape_md(d, 1000)}" for d in e.dissent]]
    notable = [ev for ev in e.evidence if ev.severity != "info"]
    lines += ["", f"### Evidence ({len(notable)} notable of {len(e.evidence)})", "",
              "| Severity | Where | Finding | CWE |", "| --- | --- | --- | --- |"]
    for ev in notable[:MAX_EVIDENCE_ROWS]:
        lines.append(f"| {ev.severity} | {_where(ev)} | {escape_md(ev.summary)} | {ev.cwe or ''} |")
    if len(notable) > MAX_EVIDENCE_ROWS:
        lines.append(f"| | | … and {len(notable) - MAX_EVIDENCE_ROWS} more | |")
    lines += ["", f"<sub>rubric {escape_md(e.rubric.name)} v{escape_md(e.rubric.version)} · "
              f"sha256 {e.rubric.sha256[:12]} · head {e.inputs.head[:12]}</sub>"]
    if dbom_url:
        lines.append(f"<sub>Signed audit record (DBOM): {dbom_url}</sub>")
    return "\n".join(lines) + "\n"


def render_text(e: Evaluation) -> str:
    notable = [ev for ev in e.evidence if ev.severity not in ("info",)]
    lines = [
        f"LogoMesh verdict: {e.verdict.upper()}  CIS {e.cis_score:.4f} (raw {e.cis_raw:.4f})",
        f"  R {e.rationale_score:.2f}{'' if e.measured.get('rationale') else ' (not measured)'}"
        f"  A {e.architecture_score:.2f}"
        f"  T {e.testing_score:.2f}{'' if e.measured.get('testing') else ' (not measured)'}"
        f"  L {e.logic_score:.2f}",
        f"  red penalty {e.red_penalty_applied:.2f} (worst {e.red_analysis.max_severity})"
        f"  intent penalty x{e.intent_penalty:.2f}",
    ]
    lines += [f"  - {r}" for r in e.verdict_reasons]
    lines += [f"  ! {n}" for n in e.notices]
    if notable:
        lines.append("Findings:")
        lines += [f"  [{ev.severity}] {ev.location or ''} {ev.summary}".rstrip() for ev in notable[:20]]
    return "\n".join(lines) + "\n"
