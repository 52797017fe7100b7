"""The judges' view of a case: a compact, budgeted digest built by the court, largest risk first.

Judges never see the raw repository. They see the measured facts (numbers the court computed), then the
evidence ordered by severity, then the PR's words, the riskiest parts of the diff and the tail of the test
output — each cut to its own character budget and with secrets redacted. Everything that came from the PR is
returned as separate *untrusted* sections; the prompt wraps those in nonce delimiters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from checks.models import SEVERITY_ORDER, Brief, Evidence
from checks.redaction import redact_secrets, truncate

DIFF_HEADER = re.compile(r"^diff --git ", re.MULTILINE)


@dataclass(frozen=True)
class DigestBudget:
    """Character budgets per section; the sum bounds what one judge reads (≈ chars / 4 tokens)."""

    title: int = 300
    body: int = 4000
    evidence: int = 6000
    diff: int = 12000
    diff_per_file: int = 4000
    test_output: int = 3000

    @classmethod
    def scaled(cls, total: int) -> DigestBudget:
        """The default proportions scaled to ``total`` characters."""
        base = cls()
        full = base.title + base.body + base.evidence + base.diff + base.test_output
        k = max(total, 1000) / full
        return cls(title=max(80, int(base.title * k)), body=int(base.body * k), evidence=int(base.evidence * k),
                   diff=int(base.diff * k), diff_per_file=int(base.diff_per_file * k),
                   test_output=int(base.test_output * k))


@dataclass(frozen=True)
class Section:
    name: str
    text: str


@dataclass(frozen=True)
class Digest:
    """What one judge reads: trusted facts, untrusted sections, and what the case is (a pull request by
    default; a whole-repository audit sets ``subject`` and ``heading``)."""

    facts: str
    untrusted: tuple[Section, ...]
    subject: str = "pull-request"
    heading: str | None = None

    @property
    def size(self) -> int:
        return len(self.facts) + sum(len(s.text) for s in self.untrusted)


def risk_key(e: Evidence) -> tuple[int, float, str]:
    """Sort key: most severe first, then most confident, then id (stable)."""
    return (-SEVERITY_ORDER[e.severity], -e.confidence, e.id)


def _facts(brief: Brief) -> str:
    def component(name: str) -> str:
        value = brief.components.get(name)
        return f"{value:.2f}" if value is not None else "not measured"

    lines = [
        f"- rationale R (intent vs code similarity): {component('rationale')}",
        f"- architecture A (constraint checks): {component('architecture')}",
        f"- testing T (sandbox run): {component('testing')}",
    ]
    tests = brief.tests
    if tests is None:
        lines.append("- tests: not run")
    else:
        lines.append(f"- tests: status {tests.status}; {tests.passed} passed, {tests.failed} failed, "
                     f"{tests.errored} errored, {tests.skipped} skipped")
    red = brief.red
    attack = "an attack succeeded" if red.attack_successful else "no attack succeeded"
    lines.append(f"- red team: {'ran' if red.ran else 'did not run'}; {red.vulnerability_count} finding(s), "
                 f"worst {red.max_severity}, {attack}")
    case = brief.case
    lines.append(f"- change: {len(case.files)} file(s), {sum(len(f.added_lines) for f in case.files)} added and "
                 f"{sum(f.removed_count for f in case.files)} removed line(s), {len(case.commits)} commit(s)")
    return "\n".join(lines)


def evidence_lines(brief: Brief, budget: int) -> str:
    lines: list[str] = []
    used = 0
    ordered = sorted(brief.evidence, key=risk_key)
    for i, e in enumerate(ordered):
        where = f" at {e.location}" if e.location else ""
        cwe = f" {e.cwe}" if e.cwe else ""
        line = f"- [{e.severity}{cwe}] id={e.id} kind={e.kind}{where}: {e.summary}"
        line = truncate(" ".join(line.split()), 400)
        if used + len(line) + 1 > budget:
            lines.append(f"- … {len(ordered) - i} more item(s) of lower or equal risk omitted")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) or "- (no evidence)"


def _file_risk(brief: Brief) -> dict[str, int]:
    """Per path, the worst severity of evidence located in it."""
    worst: dict[str, int] = {}
    for e in brief.evidence:
        if e.location is not None:
            worst[e.location.path] = max(worst.get(e.location.path, 0), SEVERITY_ORDER[e.severity])
    for f in brief.red.findings:
        if f.location is not None:
            worst[f.location.path] = max(worst.get(f.location.path, 0), SEVERITY_ORDER[f.severity])
    return worst


def split_diff(diff: str) -> list[tuple[str, str]]:
    """(path, text) per file section of a unified git diff, in diff order."""
    starts = [m.start() for m in DIFF_HEADER.finditer(diff)]
    sections: list[tuple[str, str]] = []
    for i, start in enumerate(starts):
        text = diff[start: starts[i + 1] if i + 1 < len(starts) else len(diff)]
        header = text.split("\n", 1)[0]
        path = header.rsplit(" b/", 1)[-1] if " b/" in header else header[len("diff --git "):]
        sections.append((path, text))
    return sections


def _diff(brief: Brief, budget: DigestBudget) -> str:
    risk = _file_risk(brief)
    sections = split_diff(brief.case.diff)
    ordered = sorted(enumerate(sections), key=lambda item: (-risk.get(item[1][0], -1), -len(item[1][1]), item[0]))
    parts: list[str] = []
    used = 0
    for n, (_, (_path, text)) in enumerate(ordered):
        room = min(budget.diff_per_file, budget.diff - used)
        if room < 200:
            parts.append(f"[… {len(ordered) - n} more file(s) omitted]")
            break
        excerpt = truncate(text, room)
        parts.append(excerpt)
        used += len(excerpt)
    return "\n".join(parts) or "(empty diff)"


DigestBuilder = Callable[[Brief, DigestBudget, tuple[str, ...]], Digest]


def clean_section(text: str, limit: int, known_secrets: tuple[str, ...] = ()) -> str:
    """Untrusted text as a digest section carries it: secrets redacted, then cut to ``limit`` characters."""
    return truncate(redact_secrets(text, known_secrets), limit)


def build_digest(brief: Brief, budget: DigestBudget | None = None, known_secrets: tuple[str, ...] = ()) -> Digest:
    """The digest one judge reads. Pure: the same brief and budget give the same digest."""
    budget = budget or DigestBudget()

    def clean(text: str, limit: int) -> str:
        return clean_section(text, limit, known_secrets)

    case = brief.case
    untrusted = [
        Section("evidence", clean(evidence_lines(brief, budget.evidence), budget.evidence)),
        Section("pr-title", clean(case.title or "(no title)", budget.title)),
        Section("pr-body", clean(case.body or "(no description)", budget.body)),
    ]
    if case.linked_issues:
        untrusted.append(Section("linked-issues", clean("\n\n".join(case.linked_issues), budget.body // 2)))
    untrusted.append(Section("diff", clean(_diff(brief, budget), budget.diff)))
    if brief.tests is not None and brief.tests.output:
        output = redact_secrets(brief.tests.output, known_secrets)
        # The end of a test log holds the failures and the summary.
        tail = output[-budget.test_output:] if len(output) > budget.test_output else output
        cut = len(output) - len(tail)
        untrusted.append(Section("test-output", (f"[… {cut} characters cut]\n" if cut else "") + tail))
    return Digest(facts=_facts(brief), untrusted=tuple(untrusted))
