"""What a model judge reads in a whole-repository audit: the measured facts per criterion, then the evidence and
the recent history as untrusted sections (:class:`checks.judges.digest.Digest`, subject ``repository``).

The audit's :class:`~checks.models.Brief` carries, per criterion id, the facts' score on [0, 1] in
``components`` (:func:`checks.audit.court.run_audit`); there is no diff, no PR text and no test run.
"""

from __future__ import annotations

from checks.cis import unit_to_opinion
from checks.judges.digest import Digest, DigestBudget, Section, clean_section, evidence_lines
from checks.models import Brief
from checks.redaction import truncate

MAX_SUBJECTS = 40


def _facts(brief: Brief) -> str:
    case = brief.case
    authors = len({c.author_email.lower() for c in case.commits})
    lines = [f"- repository: {len(case.head_paths)} path(s); {len(case.commits)} commit(s) read by {authors} "
             "author(s)",
             "- what the detectives measured per criterion (1 = fails it, 5 = exemplary):"]
    for criterion_id, unit in sorted(brief.components.items()):
        shown = "not measured" if unit is None else f"{unit_to_opinion(unit):.1f}/5"
        lines.append(f"  - {criterion_id}: {shown}")
    return "\n".join(lines)


def _history(brief: Brief, budget: int) -> str:
    lines = [f"- {c.sha[:12]} {c.author_name}: {c.subject}" for c in brief.case.commits[:MAX_SUBJECTS]]
    if len(brief.case.commits) > MAX_SUBJECTS:
        lines.append(f"- … {len(brief.case.commits) - MAX_SUBJECTS} older commit(s)")
    return truncate("\n".join(lines) or "(no history: not a git repository)", budget)


def build_audit_digest(brief: Brief, budget: DigestBudget, known_secrets: tuple[str, ...] = ()) -> Digest:
    """The audit's digest. Pure: the same brief and budget give the same digest."""
    evidence_budget = budget.evidence + budget.diff  # no diff to show: the evidence gets its room
    case = brief.case
    return Digest(
        facts=_facts(brief),
        untrusted=(Section("evidence", clean_section(evidence_lines(brief, evidence_budget), evidence_budget,
                                                     known_secrets)),
                   Section("history", clean_section(_history(brief, budget.body), budget.body, known_secrets))),
        subject="repository",
        heading=f"Audit of the whole repository {case.repo} at {case.head_sha[:12]} (and its report, if any).",
    )
