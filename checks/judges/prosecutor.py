"""Prosecutor — "Trust no one."

Rules, in order, per criterion:
1. Unmeasured facts prove nothing: a criterion without a measurement scores 2.
2. Otherwise start from the facts' score rounded *down*, and take one point off for every medium-or-worse
   adverse item on the record (at most two).
3. KILL on a confirmed security flaw (security criterion), or on a PR text that names a file that does not exist
   (intent criterion): the record flatly contradicts the author.
"""

from __future__ import annotations

from checks.judges.base import (
    Brief,
    Docket,
    JudicialOpinion,
    OfflineJudge,
    confirmed_security_flaw,
    floor_score,
    opinion,
)

PERSONA = "prosecutor"


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
