"""The offline audit personas: the PR court's three judges, reading an audit docket instead of a diff's.

They keep their mottos and their temperament (:mod:`checks.judges`), with rules fitted to a whole-repository
audit. Each returns one :class:`~checks.models.JudicialOpinion` per criterion of whatever rubric it is given,
so any object with the :class:`~checks.protocols.Judge` shape (an LLM judge too) can sit on the same bench.

Prosecutor — "Trust no one."
  1. A confirmed security flaw on a security criterion: 1 and KILL.
  2. A hallucinated report claim on the record of the criterion: at most 2 and KILL.
  3. Unmeasured: 2. Otherwise the facts' score rounded down, one point off per medium-or-worse item (max two).
Defense — "Reward effort."
  1. Unmeasured: 3 (benefit of the doubt). Otherwise the facts' score rounded up.
  2. +1 when favourable evidence stands and nothing adverse is worse than low. Never above 5.
  3. Never denies a confirmed security flaw: a security criterion then scores at most 2.
Tech Lead — "Does it actually work?"
  1. A confirmed security flaw on a security criterion: 1 and KILL.
  2. Unmeasured: 3. Otherwise the facts' score rounded to nearest, one point off per high-or-worse item.
"""

from __future__ import annotations

from checks.audit.docket import audit_docket, weight
from checks.judges.base import (
    Docket,
    ceil_score,
    confirmed_security_flaw,
    floor_score,
    opinion,
    round_score,
)
from checks.models import SEVERITY_ORDER, Brief, JudicialOpinion
from rubric import Rubric


class AuditJudge:
    persona = "judge"

    async def deliberate(self, brief: Brief, rubric: Rubric) -> list[JudicialOpinion]:
        return [self.rule(brief, audit_docket(brief, criterion)) for criterion in rubric.criteria]

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        raise NotImplementedError


def _charges(d: Docket, minimum: str) -> list[str]:
    return [e.summary for e in d.adverse if SEVERITY_ORDER[e.severity] >= SEVERITY_ORDER[minimum]]


class AuditProsecutor(AuditJudge):
    persona = "prosecutor"

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        if d.criterion.security and confirmed_security_flaw(brief):
            return opinion(self.persona, d, 1, "Confirmed security flaw: " + "; ".join(_charges(d, "high")),
                           kill=True)
        hallucinated = [str(e.facts.get("value")) for e in d.adverse if e.kind == "hallucination"]
        if hallucinated:
            score = 2 if d.fact_score is None else min(2, floor_score(d.fact_score))
            return opinion(self.persona, d, score, "The report claims what the repository does not hold: "
                           + ", ".join(hallucinated) + ".", kill=True)
        if d.fact_score is None:
            return opinion(self.persona, d, 2, f"{d.criterion.title} was never measured; unproven claims earn nothing.")
        charges = _charges(d, "medium")
        score = floor_score(d.fact_score) - min(2, len(charges))
        if charges:
            return opinion(self.persona, d, score, f"The facts put this at {d.fact_score:.1f}/5 and the record "
                           "adds charges: " + "; ".join(charges[:4]))
        return opinion(self.persona, d, score, f"The facts put this at {d.fact_score:.1f}/5; "
                       "I found nothing more, which proves little.")


class AuditDefense(AuditJudge):
    persona = "defense"

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        if d.fact_score is None:
            score, argument = 3, f"{d.criterion.title} was not measured; the authors deserve the benefit of the doubt"
        else:
            score, argument = ceil_score(d.fact_score), f"The facts support {d.fact_score:.1f}/5"
            worst = d.worst()
            merits = [e for e in d.favourable if weight(e)[0] > 0]
            if merits and SEVERITY_ORDER[worst] <= SEVERITY_ORDER["low"]:
                score = min(5, score + 1)
                argument += "; credit is due: " + "; ".join(e.summary for e in merits[:2])
        if d.criterion.security and confirmed_security_flaw(brief):
            score = min(score, 2)
            argument += ". I cannot dispute the confirmed security finding"
        return opinion(self.persona, d, score, argument + ".")


class AuditTechLead(AuditJudge):
    persona = "tech_lead"

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        if d.criterion.security and confirmed_security_flaw(brief):
            return opinion(self.persona, d, 1, "A confirmed unsafe construct: this cannot ship.", kill=True)
        if d.fact_score is None:
            return opinion(self.persona, d, 3, f"{d.criterion.title} was not measured; neutral until it is.")
        serious = _charges(d, "high")
        score = round_score(d.fact_score) - len(serious)
        if serious:
            return opinion(self.persona, d, score, f"{len(serious)} serious problem(s): " + "; ".join(serious[:4]))
        return opinion(self.persona, d, score, f"Measured at {d.fact_score:.1f}/5 with no serious problem on record.")


def audit_judges() -> list[AuditJudge]:
    return [AuditProsecutor(), AuditDefense(), AuditTechLead()]
