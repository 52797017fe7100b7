"""Prosecutor — "Trust no one."

Rules, in order, per criterion:
1. Unmeasured facts prove nothing: a criterion without a measurement scores 2.
2. Otherwise start from the facts' score rounded *down*, and take one point off for every medium-or-worse
   adverse item on the record (at most two).
3. KILL on a confirmed security flaw (security criterion), or on a PR text that names a file that does not exist
   (intent criterion): the record flatly contradicts the author.

In an audit:
1. A confirmed security flaw on a security criterion: 1 and KILL.
2. A hallucinated report claim on the record of the criterion: at most 2 and KILL.
3. Unmeasured: 2. Otherwise the facts' score rounded down, one point off per medium-or-worse item (max two).
"""

from __future__ import annotations

from checks.judges.base import (
    Brief,
    Docket,
    JudicialOpinion,
    OfflineJudge,
    charges,
    confirmed_security_flaw,
    floor_score,
    opinion,
    persona,
)

PERSONA = "prosecutor"


@persona(order=10)
class Prosecutor(OfflineJudge):
    persona = PERSONA

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        charges = [f"{e.summary} [{e.id}]" for e in d.adverse if e.severity != "low"]
        if d.criterion.security and confirmed_security_flaw(brief):
            return opinion(PERSONA, d, 1, "Confirmed security flaw on the record: " + "; ".join(charges), kill=True)
        contradicted = [e for e in d.adverse if e.kind == "claim-unsupported" and e.facts.get("exists") is False]
        if contradicted:
            names = ", ".join(str(e.facts.get("path")) for e in contradicted)
            return opinion(PERSONA, d, 1, f"The PR names files that do not exist ({names}).", kill=True)
        if d.fact_score is None:
            return opinion(PERSONA, d, 2, f"{d.criterion.title} was never measured; unproven claims earn nothing.")
        penalty = min(2, d.count("medium"))
        score = floor_score(d.fact_score) - penalty
        if charges:
            argument = f"The facts put this at {d.fact_score:.1f}/5 and the record adds charges: " + "; ".join(charges)
        else:
            argument = f"The facts put this at {d.fact_score:.1f}/5; I found nothing more, which proves little."
        return opinion(PERSONA, d, score, argument)

    def rule_audit(self, brief: Brief, d: Docket) -> JudicialOpinion:
        if d.criterion.security and confirmed_security_flaw(brief):
            return opinion(PERSONA, d, 1, "Confirmed security flaw: " + "; ".join(charges(d, "high")), kill=True)
        hallucinated = [str(e.facts.get("value")) for e in d.adverse if e.kind == "hallucination"]
        if hallucinated:
            score = 2 if d.fact_score is None else min(2, floor_score(d.fact_score))
            return opinion(PERSONA, d, score, "The report claims what the repository does not hold: "
                           + ", ".join(hallucinated) + ".", kill=True)
        if d.fact_score is None:
            return opinion(PERSONA, d, 2, f"{d.criterion.title} was never measured; unproven claims earn nothing.")
        found = charges(d, "medium")
        score = floor_score(d.fact_score) - min(2, len(found))
        if found:
            return opinion(PERSONA, d, score, f"The facts put this at {d.fact_score:.1f}/5 and the record "
                           "adds charges: " + "; ".join(found[:4]))
        return opinion(PERSONA, d, score, f"The facts put this at {d.fact_score:.1f}/5; "
                       "I found nothing more, which proves little.")
