"""Bounds on what one change can make LogoMesh store: evidence, red findings, judges' citations and arguments.

A change with ten thousand flagged lines is judged on all of them — the Chief Justice sees everything — but the
Evaluation (and so the DBOM ledger and the rendered report) keeps the worst ``MAX_EVIDENCE`` items and says, in
one ``truncated`` evidence item, how many more there were of which kind and severity. Nothing is dropped
silently, and what is kept is the most severe first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from checks.models import SEVERITY_ORDER, Evidence, JudicialOpinion, RedFinding

MAX_EVIDENCE = 300
MAX_FINDINGS = 100
MAX_CITED = 25
MAX_ARGUMENT = 4000
TRUNCATED_ID = "court.truncated"


def _worst_first(items: Sequence[Evidence], keep: int) -> tuple[list[Evidence], list[Evidence]]:
    """The ``keep`` most severe items in their original order, and the rest."""
    ranked = sorted(range(len(items)), key=lambda i: (-SEVERITY_ORDER[items[i].severity], i))
    kept = set(ranked[:keep])
    return [e for i, e in enumerate(items) if i in kept], [e for i, e in enumerate(items) if i not in kept]


def _tally(counter: Counter[str]) -> str:
    return ", ".join(f"{n} {what}" for what, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def bounded_evidence(evidence: Sequence[Evidence]) -> tuple[Evidence, ...]:
    if len(evidence) <= MAX_EVIDENCE:
        return tuple(evidence)
    kept, dropped = _worst_first(evidence, MAX_EVIDENCE - 1)
    worst = max((e.severity for e in dropped), key=lambda s: SEVERITY_ORDER[s])
    note = Evidence(
        id=TRUNCATED_ID, detective="court", kind="truncated", severity="info",
        summary=(f"{len(dropped)} more evidence items were judged but not stored (the {MAX_EVIDENCE - 1} most "
                 f"severe are kept): {_tally(Counter(e.kind for e in dropped))}; the most severe of them: {worst}"),
        facts={"stored": len(kept), "judged": len(evidence), "omitted": len(dropped),
               "omitted_by_severity": dict(Counter(e.severity for e in dropped)),
               "omitted_by_kind": dict(Counter(e.kind for e in dropped))})
    return (*kept, note)


def bounded_findings(findings: Sequence[RedFinding]) -> tuple[RedFinding, ...]:
    """The most severe red findings (the agent sorts them worst first); the count stays in the summary."""
    return tuple(findings[:MAX_FINDINGS])


def bounded_opinion(opinion: JudicialOpinion) -> JudicialOpinion:
    cited = opinion.cited_evidence
    argument = opinion.argument
    if len(cited) <= MAX_CITED and len(argument) <= MAX_ARGUMENT:
        return opinion
    if len(argument) > MAX_ARGUMENT:
        argument = argument[:MAX_ARGUMENT - 40].rstrip() + f" … [{len(opinion.argument)} characters in all]"
    if len(cited) > MAX_CITED:
        argument += f" (cites {len(cited)} evidence items; the first {MAX_CITED} are listed)"
    return opinion.model_copy(update={"cited_evidence": cited[:MAX_CITED], "argument": argument})
