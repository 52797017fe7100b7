"""What every offline judge reads the same way: which evidence bears on which criterion, and the facts' score.

The personas differ in what they make of it (their rules live in their own modules); they agree on how to
read the record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from checks.detectives.doc_analyst import is_test_path
from checks.models import SEVERITY_ORDER, Brief, Evidence, JudicialOpinion
from checks.plugins import import_modules

__all__ = ["Brief", "Docket", "JudicialOpinion", "OfflineJudge", "docket", "opinion"]
from rubric import Criterion, Rubric


@dataclass(frozen=True)
class Docket:
    """One criterion as a judge sees it: the facts' score (1–5, or None) and the evidence that bears on it."""

    criterion: Criterion
    fact_score: float | None
    adverse: tuple[Evidence, ...]
    favourable: tuple[Evidence, ...]

    def worst(self) -> str:
        return max((e.severity for e in self.adverse), key=lambda s: SEVERITY_ORDER[s], default="info")

    def count(self, minimum: str) -> int:
        return sum(1 for e in self.adverse if SEVERITY_ORDER[e.severity] >= SEVERITY_ORDER[minimum])

    def cited(self) -> tuple[str, ...]:
        return tuple(e.id for e in (*self.adverse, *self.favourable))


def is_security(e: Evidence) -> bool:
    return bool(e.cwe) or bool(e.facts.get("security"))


def bears_on(criterion: Criterion, e: Evidence) -> bool:
    """Whether ``e`` is on ``criterion``'s docket: its kind is one the rubric lists for the criterion; a security
    criterion that lists none takes every security fact (a CWE, or a detective's ``security`` fact)."""
    if criterion.evidence is not None:
        return e.kind in criterion.evidence
    return criterion.security and is_security(e)


def unit_to_five(value: float) -> float:
    return 1.0 + 4.0 * value


def docket(brief: Brief, criterion: Criterion) -> Docket:
    evidence = [e for e in brief.evidence if bears_on(criterion, e)]
    adverse = tuple(e for e in evidence if e.severity != "info")
    favourable = tuple(e for e in evidence if e.severity == "info")
    component = brief.components.get(criterion.component)
    fact = None if component is None else unit_to_five(component)
    if criterion.security:
        fact = 5.0 - 1.0 * sum(1 for e in adverse if SEVERITY_ORDER[e.severity] >= SEVERITY_ORDER["high"])
        fact = max(1.0, fact - 0.5 * sum(1 for e in adverse if e.severity == "medium"))
    return Docket(criterion=criterion, fact_score=fact, adverse=adverse, favourable=favourable)


def tests_added(brief: Brief) -> list[str]:
    return sorted(f.path for f in brief.case.files if is_test_path(f.path) and f.status != "removed")


def confirmed_security_flaw(brief: Brief) -> bool:
    """A flaw no judge may argue away: a confirmed high/critical red finding, or a critical construct added."""
    if any(f.confirmed and SEVERITY_ORDER[f.severity] >= SEVERITY_ORDER["high"] for f in brief.red.findings):
        return True
    return any(is_security(e) and e.severity == "critical" for e in brief.evidence)


def clamp_score(value: float) -> int:
    return max(1, min(5, int(value)))


def floor_score(value: float) -> int:
    return clamp_score(math.floor(value + 1e-9))


def ceil_score(value: float) -> int:
    return clamp_score(math.ceil(value - 1e-9))


def nearest_score(value: float) -> int:
    return clamp_score(math.floor(value + 0.5))


def opinion(persona: str, d: Docket, score: int, argument: str, kill: bool = False) -> JudicialOpinion:
    return JudicialOpinion(
        judge=persona,
        criterion_id=d.criterion.id,
        score=clamp_score(score),
        argument=argument,
        cited_evidence=d.cited(),
        verdict="KILL" if kill else "PASS",
    )


Court = Literal["pr", "audit"]


class OfflineJudge:
    """A deterministic persona: ``rule`` maps one docket of a pull request to one opinion by the persona's written
    rules, ``rule_audit`` one docket of a repository audit (:mod:`checks.audit.docket`). One persona, one module,
    both courts: constructed for the court it sits in."""

    persona = "judge"

    def __init__(self, court: Court = "pr") -> None:
        self.court = court

    async def deliberate(self, brief: Brief, rubric: Rubric) -> list[JudicialOpinion]:
        if self.court == "audit":
            from checks.audit.docket import audit_docket  # the audit package imports the judges: not at load

            return [self.rule_audit(brief, audit_docket(brief, criterion)) for criterion in rubric.criteria]
        return [self.rule(brief, docket(brief, criterion)) for criterion in rubric.criteria]

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        raise NotImplementedError

    async def reconsider(self, brief: Brief, rubric: Rubric, first: Sequence[JudicialOpinion],
                         criteria: Sequence[str]) -> list[JudicialOpinion]:
        """The re-hearing, by :func:`reconsidered`, on each of ``criteria`` this persona gave an opinion on."""
        evidence = {e.id: e for e in brief.evidence}
        answers: list[JudicialOpinion] = []
        for criterion_id in criteria:
            on = [o for o in first if o.criterion_id == criterion_id]
            own = next((o for o in on if o.judge == self.persona), None)
            if own is None:
                continue
            bound = rubric.criterion(criterion_id).security and confirmed_security_flaw(brief)
            answers.append(reconsidered(own, [o for o in on if o.judge != self.persona], evidence,
                                        flaw_established=bound))
        return answers

    def rule_audit(self, brief: Brief, d: Docket) -> JudicialOpinion:
        raise NotImplementedError


_PERSONAS: dict[str, tuple[int, type[OfflineJudge]]] = {}
Persona = TypeVar("Persona", bound=type[OfflineJudge])


def persona(order: int) -> Callable[[Persona], Persona]:
    """Register the decorated class as the offline persona named by its ``persona``, at ``order`` on the bench."""

    def register(cls: Persona) -> Persona:
        known = _PERSONAS.get(cls.persona)
        if known is not None and known[1] is not cls:
            raise ValueError(f"persona {cls.persona!r} is registered twice")
        _PERSONAS[cls.persona] = (order, cls)
        return cls

    return register


def registered_personas() -> dict[str, type[OfflineJudge]]:
    """Every persona module's class by persona name, in bench order."""
    import checks.judges as package

    import_modules(package)
    return {name: cls for name, (_order, cls) in sorted(_PERSONAS.items(), key=lambda item: (item[1][0], item[0]))}


def charges(d: Docket, minimum: str) -> list[str]:
    """The summaries of the adverse evidence at ``minimum`` severity or worse."""
    return [e.summary for e in d.adverse if SEVERITY_ORDER[e.severity] >= SEVERITY_ORDER[minimum]]


def _supports(e: Evidence, upward: bool) -> bool:
    """Whether ``e`` argues for a higher score (a favourable, ``info`` fact) or a lower one (an adverse fact)."""
    return (e.severity == "info") == upward


def reconsidered(own: JudicialOpinion, others: Sequence[JudicialOpinion], evidence: Mapping[str, Evidence], *,
                 flaw_established: bool = False) -> JudicialOpinion:
    """An offline persona's second opinion, shown the others' opinions on the same criterion. The rule:

    1. Another judge *pulls* only with evidence: its score differs from ours and it cites at least one fact on
       the record that argues its way — a favourable (``info``) fact to pull up, an adverse one to pull down.
       An argument without such a fact moves nobody.
    2. The target is the mean of the pulling judges' scores; at least one point away, we move ONE point toward
       it (never further: one re-hearing narrows a spread, it does not flip a ruling).
    3. A KILL stands, and on a security criterion with an established (confirmed) flaw no one moves up.

    The argument says who moved us and by which fact.
    """
    if own.verdict == "KILL":
        return own
    pulls: list[tuple[JudicialOpinion, Evidence]] = []
    for other in sorted(others, key=lambda o: o.judge):
        if other.score == own.score:
            continue
        upward = other.score > own.score
        if upward and flaw_established:
            continue
        fact = next((evidence[i] for i in other.cited_evidence if i in evidence
                     and _supports(evidence[i], upward)), None)
        if fact is not None:
            pulls.append((other, fact))
    if not pulls:
        return own
    target = sum(o.score for o, _ in pulls) / len(pulls)
    if abs(target - own.score) < 1:
        return own
    score = clamp_score(own.score + (1 if target > own.score else -1))
    who = "; ".join(f"{o.judge} ({o.score}/5, citing {fact.id}: {fact.summary})" for o, fact in pulls)
    argument = f"{own.argument} On re-hearing, moved from {own.score} to {score}/5 by {who}."
    return own.model_copy(update={"score": score, "argument": argument})
