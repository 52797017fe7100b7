"""Render an Evaluation for people: the PR comment, the check run's summary, and a short text.

Both Markdown reports lead with the verdict and **What to fix** (``checks/fixes.py``): each blocking fact with its
location (a link into the PR's diff when :class:`Links` knows the repository), the failure message and a hint.
Then one row of scores with a one-line legend. The comment stays short — judges, rulings and the evidence are
collapsed in ``<details>`` — while the check run's summary carries the evidence table open.

Everything that came from the PR (paths, titles, test names, judges' arguments quoting them) is untrusted:
escaped so it can never open a link, embed an image, ping someone with ``@``, cross-reference an issue or inject
HTML/tables/entities; or shown as a code span, whose text GitHub shows literally (so it is never escaped there,
only fenced with more backticks than it holds). Model text (the judges' arguments) is treated exactly like PR text.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from checks.deciding import deciding_rule, thresholds
from checks.fixes import Fix, what_to_fix, worst_first
from checks.links import GITHUB_WEB, GitHubLinks, cwe_url
from checks.models import Evaluation, Evidence, JudicialOpinion, Location
from checks.redaction import redact_internal_paths

MARKER = "<!-- logomesh:review -->"
MAX_EVIDENCE_ROWS = 40
MAX_CELL = 300
COMMENT_FIXES = 5
DOCS_URL = "https://github.com/logomesh/logomesh/blob/main/docs/scoring.md"

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~])")
_SCHEME = re.compile(r"(?i)\b(https?|ftp|file|javascript|data|mailto):")
VERDICT_ICON = {"pass": "✅", "neutral": "⚠️", "fail": "❌"}
VERDICT_WORD = {"pass": "Pass", "neutral": "Neutral", "fail": "Fail"}
# GitHub autolinks ``www.`` hosts, and turns ``#12``, ``GH-12`` and ``owner/repo#12`` into cross-references that
# notify the referenced issue; a zero-width space keeps the text readable and the link dead.
_WWW = re.compile(r"(?i)\b(www)\.")
_ISSUE_REF = re.compile(r"(?i)(#|\bGH-)(?=\d)")
# Bidirectional overrides and isolates can make a report read differently from what it says (Trojan Source).
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f]")
_CODE = re.compile(r"`([^`\n]{1,300})`")
RULE_WORDS = {"evidence": "held to the facts", "functionality": "weighted by the judges' expertise",
              "security": "capped by a security flaw", "dissent": "judges disagree", "no-opinions: facts only":
              "facts only (no opinions)"}


def escape_md(text: str, limit: int = MAX_CELL, *, keep_edges: bool = False) -> str:
    """Inert Markdown: one line, specials escaped, mentions broken, length capped. ``keep_edges`` keeps one
    leading and trailing space (for a piece of a longer line)."""
    lead = " " if keep_edges and text[:1].isspace() else ""
    tail = " " if keep_edges and text[-1:].isspace() else ""
    text = lead + " ".join(_BIDI.sub("", str(text)).split()) + tail
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # An escaped ``&`` keeps entities such as ``&#64;`` (an "@" once rendered) from turning into live text.
    text = text.replace("&", "\\&")
    text = _WWW.sub("\\1\u200b.", text)
    text = _ISSUE_REF.sub("\\1\u200b", text)
    text = text.replace("@", "@\u200b")
    text = _SCHEME.sub(lambda m: m.group(1) + "\u200b:", text)
    return text


def code(text: str, limit: int = 200, *, in_table: bool = False) -> str:
    """A code span showing ``text`` literally: fenced by one more backtick than its longest run, one line,
    capped. In a table cell ``|`` must still be escaped (GitHub splits cells before it reads code spans)."""
    text = " ".join(_BIDI.sub("", str(text)).split()) or " "
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    if in_table:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(text: str, language: str = "", indent: str = "", limit: int = 4000) -> str:
    """A fenced code block showing ``text`` literally: fenced by one more backtick than its longest run (at least
    three), each line indented by ``indent`` (inside a list item), capped."""
    text = _BIDI.sub("", str(text))[:limit].rstrip("\n")
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    body = "\n".join(indent + line for line in text.split("\n"))
    return f"{indent}{fence}{language}\n{body}\n{indent}{fence}"


def inline(text: str, limit: int = MAX_CELL, *, in_table: bool = False) -> str:
    """Escaped prose in which the ```…``` spans a detective wrote stay code spans."""
    text = " ".join(_BIDI.sub("", str(text)).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    out: list[str] = []
    last = 0
    for match in _CODE.finditer(text):
        out.append(escape_md(text[last:match.start()], limit, keep_edges=True))
        out.append(code(match.group(1), in_table=in_table))
        last = match.end()
    out.append(escape_md(text[last:], limit, keep_edges=True))
    return "".join(out)


@dataclass(frozen=True)
class Links:
    """Where a report's locations point on GitHub: the PR's diff for lines the change added, else the file
    at the head commit (:class:`checks.links.GitHubLinks`: nothing is linked for a repository, commit or path
    that is not plain, e.g. a local CLI review)."""

    web_url: str = GITHUB_WEB
    changed: Mapping[str, Collection[int]] = field(default_factory=dict)
    dbom_url: str | None = None
    docs_url: str = DOCS_URL

    def location(self, e: Evaluation, where: Location) -> str | None:
        github = GitHubLinks.build(self.web_url, e.inputs.repo, e.inputs.head, e.inputs.pr_number)
        if where.line is not None and where.line in self.changed.get(where.path, ()):
            return github.diff(where.path, where.line) or github.blob(where.path, where.line)
        return github.blob(where.path, where.line)


def _where(e: Evaluation, where: Location | None, links: Links | None, *, in_table: bool = False) -> str:
    if where is None:
        return ""
    shown = code(str(where), 120, in_table=in_table)
    url = links.location(e, where) if links is not None else None
    return f"[{shown}]({url})" if url else shown


def _cwe(cwe: str | None) -> str:
    url = cwe_url(cwe)
    return f"[{escape_md(cwe or '')}]({url})" if url else escape_md(cwe or "")


def _fix_line(n: int, fix: Fix, e: Evaluation, links: Links | None) -> str:
    parts = [f"{n}. **{inline(fix.title, 200)}**"]
    if fix.location is not None:
        parts.append(" · " + _where(e, fix.location, links))
    detail = []
    if fix.subject:
        detail.append(code(fix.subject, 160))
    if fix.detail and fix.detail != fix.title:
        detail.append(code(fix.detail, 160) if fix.kind.startswith("test-") else inline(fix.detail, 100))
    if detail:
        parts.append("<br>" + ": ".join(detail))
    if fix.hint:
        whom = f"For {fix.for_whom}: " if fix.for_whom else ""
        parts.append(f"<br>*{inline(whom + fix.hint, 340)}*")
    if fix.reproducer:
        parts.append("\n\n   <details><summary>Reproducer</summary>\n\n" + code_block(fix.reproducer, "python", "   ")
                     + "\n   </details>\n")
    return "".join(parts)


def _to_fix(e: Evaluation, fixes: list[Fix]) -> int:
    """How many things the author has to fix (what is not the change's fault is not counted)."""
    return sum(1 for fix in fixes if fix.authors) if e.verdict != "pass" else 0


def _lead(e: Evaluation, fixes: list[Fix], links: Links | None, limit: int, more_where: str) -> list[str]:
    own = [fix for fix in fixes if fix.authors]
    others = [fix for fix in fixes if not fix.authors]
    count = f" · {n} to fix" if (n := _to_fix(e, fixes)) else ""
    lines = [f"### {VERDICT_ICON[e.verdict]} LogoMesh: {headline(e)}{count}", ""]
    if not fixes:
        lines.append("Nothing blocks this change." if e.verdict == "pass" else "Nothing specific to fix.")
        return lines
    if own:
        lines += ["**What to fix**" if e.verdict != "pass" else "**Worth a look**", ""]
        lines += [_fix_line(i, fix, e, links) for i, fix in enumerate(own[:limit], 1)]
        if len(own) > limit:
            lines.append(f"\n… and {len(own) - limit} more {more_where}.")
    for fix in others[:limit]:  # a paragraph each: the author has nothing to do here
        lines += [*([""] if len(lines) > 2 else []), _other_line(fix, e, links)]
    return lines


def _other_line(fix: Fix, e: Evaluation, links: Links | None) -> str:
    where = f" · {_where(e, fix.location, links)}" if fix.location is not None else ""
    subject = f" {code(fix.subject, 160)}:" if fix.subject else ""
    detail = f"{subject} {inline(fix.detail, 300)}" if fix.detail and fix.detail != fix.title else ""
    return (f"**Not this change's fault: {inline(fix.title, 200)}**{where}{detail} *For {escape_md(fix.for_whom)}: "
            f"{inline(fix.hint, 300)}*")


def _score(e: Evaluation, key: str, value: float) -> str:
    return f"{value:.2f}" if key == "logic" or e.measured.get(key) else "not measured"


def _scores(e: Evaluation, links: Links | None) -> list[str]:
    docs = links.docs_url if links is not None else DOCS_URL
    red = f"−{e.red_penalty_applied * 100:.0f} %" if e.red_penalty_applied else "none"
    intent = f"×{e.intent_penalty:.2f}" if e.intent_penalty < 1 else "none"
    limits = thresholds(e)
    return [
        "| R intent | A rules | T tests | L judges | Red team | Intent | CIS |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {_score(e, 'rationale', e.rationale_score)} | {_score(e, 'architecture', e.architecture_score)} | "
        f"{_score(e, 'testing', e.testing_score)} | {e.logic_score:.2f} | {red} | {intent} | "
        f"**{e.cis_score:.2f}** {e.verdict} |",
        "",
        "<sub>The CIS weighs R (does the code do what the PR says), A (the repository's rules), T (tests run in a "
        "sandbox against the base) and L (the judges, held to the facts), less penalties for red-team exploits "
        "and a mismatched intent" + (f"; {escape_md(limits, 80)}" if limits else "")
        + f". Named rules decide before the score. [How it is scored]({docs})</sub>",
    ]


def _judges(e: Evaluation) -> list[str]:
    names = list(dict.fromkeys(op.judge for op in e.opinions))
    by: dict[tuple[str, str], JudicialOpinion] = {(op.criterion_id, op.judge): op for op in e.opinions}
    moved = any(r.overruled for r in e.rulings)
    header = ["Criterion", "Ruling", *[n.replace("_", " ") for n in names], "How it was ruled"]
    if moved:
        header.append("Held to the facts")
    lines = ["| " + " | ".join(escape_md(h) for h in header) + " |",
             "| --- | ---: | " + "---: | " * len(names) + "--- |" + (" --- |" if moved else "")]
    for ruling in e.rulings:
        cells = [escape_md(ruling.criterion_id), f"{ruling.score:.2f}/5"]
        for name in names:
            op = by.get((ruling.criterion_id, name))
            cells.append("—" if op is None else f"{op.score}/5" + (" **veto**" if op.verdict == "KILL" else ""))
        cells.append(escape_md(", ".join(RULE_WORDS.get(r, r) for r in ruling.rules_applied) or "—"))
        if moved:
            cells.append(escape_md(", ".join(ruling.overruled) or "—"))
        lines.append("| " + " | ".join(cells) + " |")
    rulings = {r.criterion_id: r.score for r in e.rulings}
    # Arguments that say something beyond the ruling: a veto, or a score a point or more away from it.
    telling = [op for op in e.opinions if op.verdict == "KILL"
               or abs(op.score - rulings.get(op.criterion_id, op.score)) >= 1]
    seen: set[str] = set()
    notes: list[str] = []
    for op in telling:
        if op.argument in seen:
            continue
        seen.add(op.argument)
        veto = ", veto" if op.verdict == "KILL" else ""
        notes.append(f"- **{escape_md(op.judge)}** on {escape_md(op.criterion_id)} ({op.score}/5{veto}): "
                     f"{inline(op.argument, 500)}")
    if notes:
        lines += ["", *notes]
    quiet = len(e.opinions) - len(telling)
    if quiet > 0:
        lines += ["", f"<sub>{quiet} opinion(s) within a point of the ruling are not quoted; every argument is in "
                      "the DBOM.</sub>"]
    if e.rehearing is not None:
        who_moved = "; ".join(e.rehearing.moved) or "no judge moved"
        lines += ["", f"Re-heard once (judges spread by more than the rubric allows on "
                      f"{escape_md(', '.join(e.rehearing.criteria))}): {inline(who_moved, 500)}. Both rounds are in "
                      "the DBOM."]
    if e.dissent:
        quoted = [f"> {inline(d, 1000)}" for d in e.dissent]
        lines += ["", *"\n>\n".join(quoted).splitlines()]  # one paragraph per dissent
    return lines


def _notable(e: Evaluation) -> list[Evidence]:
    return worst_first(ev for ev in e.evidence if ev.severity != "info")


def _evidence(e: Evaluation, links: Links | None) -> list[str]:
    notable = _notable(e)
    if not notable:
        return []
    lines = [f"**Evidence** ({len(notable)} notable of {len(e.evidence)}, worst first)", "",
             "| Severity | Where | Finding | CWE |", "| --- | --- | --- | --- |"]
    for ev in notable[:MAX_EVIDENCE_ROWS]:
        lines.append(f"| {ev.severity} | {_where(e, ev.location, links, in_table=True)} | "
                     f"{inline(ev.summary, in_table=True)} | {_cwe(ev.cwe)} |")
    if len(notable) > MAX_EVIDENCE_ROWS:
        lines.append(f"| | | … and {len(notable) - MAX_EVIDENCE_ROWS} more (in the DBOM) | |")
    return lines


def _reasons(e: Evaluation) -> list[str]:
    rules = list(e.verdict_reasons[1:] if thresholds(e) else e.verdict_reasons)
    lines: list[str] = []
    if rules:
        lines += ["**Why this verdict**", "", *[f"- {inline(r, 500)}" for r in rules]]
    if e.notices:
        lines += ["", "**Notices**", "", *[f"- {inline(n, 500)}" for n in e.notices]]
    return lines


def _details(summary: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>"]


def _footer(e: Evaluation, links: Links | None, dbom_url: str | None, dbom_id: str | None = None) -> list[str]:
    parts = []
    if links is not None:
        parts.append("Comment <code>/recheck</code> to review again")
    if dbom_url:
        parts.append(f"[Full report and signed audit record (DBOM)]({dbom_url})")
    elif dbom_id:
        parts.append(f"signed audit record (DBOM) {code(dbom_id)}: {code('logomesh dbom show ' + dbom_id)}")
    parts.append(f"rubric {escape_md(e.rubric.name)} v{escape_md(e.rubric.version)} · sha256 "
                 f"{e.rubric.sha256[:12]} · head {e.inputs.head[:12]}")
    return [f"<sub>{' · '.join(parts)}</sub>"]


MORE_WHERE = {"comment": "in the check run", "cli": "in `--format text`"}


def render_markdown(e: Evaluation, dbom_url: str | None = None, *, links: Links | None = None,
                    place: Literal["comment", "check", "cli"] = "comment", dbom_id: str | None = None) -> str:
    """The report: ``comment`` is short (details collapsed, five fixes); ``check`` is the check run's summary
    (every fix, the evidence open); ``cli`` is the comment for a local review, pointing only at what its reader
    has (the other formats, the DBOM by ``dbom_id``). ``links`` makes locations links into the PR (the App
    passes it)."""
    dbom_url = dbom_url or (links.dbom_url if links is not None else None)
    fixes = what_to_fix(e)
    judges = _judges(e)
    if place == "check":
        lines = [*_lead(e, fixes, links, len(fixes), ""), "", *_scores(e, links)]
        if reasons := _reasons(e):
            lines += ["", *reasons]
        if evidence := _evidence(e, links):
            lines += ["", *evidence]
        lines += ["", *_details("Judges and the Chief Justice's rulings", judges), "", *_footer(e, links, dbom_url)]
        return redact_internal_paths("\n".join(lines) + "\n")
    inner: list[str] = []
    for block in (_reasons(e), judges, _evidence(e, links)):
        if block:
            inner += [*block, ""]
    notable = len(_notable(e))
    lines = [MARKER, *_lead(e, fixes, links, COMMENT_FIXES, MORE_WHERE[place]), "", *_scores(e, links), "",
             *_details(f"Why, the judges and the evidence ({notable} notable)", inner[:-1]), "",
             *_footer(e, links, dbom_url, dbom_id)]
    return redact_internal_paths("\n".join(lines) + "\n")


def headline(e: Evaluation) -> str:
    """The verdict and what decided it: the named rule ("Fail · a test that passed before fails now"), else the
    score ("Neutral · CIS 0.62")."""
    rule = deciding_rule(e)
    return f"{VERDICT_WORD[e.verdict]} · {rule}" if rule else f"{VERDICT_WORD[e.verdict]} · CIS {e.cis_score:.2f}"


def render_title(e: Evaluation) -> str:
    """The check run's title: the verdict, what decided it, and the first thing to fix unless the rule says it."""
    return redact_internal_paths(_title(e))


def _title(e: Evaluation) -> str:
    fixes = what_to_fix(e)
    head = headline(e)
    if e.verdict == "pass" or not fixes:
        return head
    n = _to_fix(e, fixes)
    if deciding_rule(e) is not None or not n:
        return f"{head} · {n} to fix"[:255] if n > 1 else head[:255]
    more = f" (+{n - 1} more)" if n > 1 else ""
    return f"{head} · {' '.join(fixes[0].title.split())}{more}"[:255]


def render_text(e: Evaluation, *, dbom_id: str | None = None) -> str:
    lines = [
        f"LogoMesh verdict: {e.verdict.upper()}  CIS {e.cis_score:.4f} (raw {e.cis_raw:.4f})"
        + (f"  decided by the rule: {rule}" if (rule := deciding_rule(e)) else ""),
        f"  R {e.rationale_score:.2f}{'' if e.measured.get('rationale') else ' (not measured)'}"
        f"  A {e.architecture_score:.2f}"
        f"  T {e.testing_score:.2f}{'' if e.measured.get('testing') else ' (not measured)'}"
        f"  L {e.logic_score:.2f}",
        f"  red penalty {e.red_penalty_applied:.2f} (worst {e.red_analysis.max_severity})"
        f"  intent penalty x{e.intent_penalty:.2f}",
    ]
    lines += [f"  - {r}" for r in e.verdict_reasons]
    lines += [f"  ! {n}" for n in e.notices]
    fixes = what_to_fix(e)
    for group, heading in (([f for f in fixes if f.authors], "What to fix:" if e.verdict != "pass" else
                            "Worth a look:"), ([f for f in fixes if not f.authors], "Not this change's fault:")):
        if group:
            lines.append(heading)
        for fix in group:
            where = f" {fix.location}" if fix.location else ""
            subject = f"{fix.subject}: " if fix.subject else ""
            lines.append(f"  [{fix.severity}]{where} {fix.title}")
            if fix.detail and fix.detail != fix.title:
                lines.append(f"     {subject}{' '.join(fix.detail.split())[:300]}")
            if fix.hint:
                lines.append(f"     {'for ' + fix.for_whom if fix.for_whom else 'hint'}: {fix.hint}")
            if fix.reproducer:
                lines.append("     reproducer:")
                lines += [f"       {line}" for line in fix.reproducer.splitlines()]
    if notable := _notable(e):
        lines.append("Findings:")
        lines += [f"  [{ev.severity}] {ev.location or ''} {ev.summary}".rstrip() for ev in notable[:20]]
    if dbom_id:
        lines.append(f"DBOM {dbom_id} (logomesh dbom show {dbom_id})")
    return redact_internal_paths("\n".join(lines) + "\n")
