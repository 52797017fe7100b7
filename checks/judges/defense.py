"""Defense — "Reward effort."

Rules, in order, per criterion:
1. An unmeasured criterion gets the benefit of the doubt: 3.
2. Otherwise start from the facts' score rounded *up*; low-severity items are minor and not held against the
   author.
3. Credit effort: +1 when the change adds or updates tests (testing and intent criteria), +1 when its commits are
   few and described (intent and architecture criteria). Never above 5.
4. Never deny an established fact: with a confirmed security flaw the security criterion scores at most 2.
5. KILL only when there is nothing to defend: the change is empty.

In an audit:
1. Unmeasured: 3 (benefit of the doubt). Otherwise the facts' score rounded up.
2. +1 when favourable evidence stands and nothing adverse is worse than low. Never above 5.
3. Never denies a confirmed security flaw: a security criterion then scores at most 2.
"""

from __future__ import annotations

from checks.judges.base import (
    Brief,
    Docket,
    JudicialOpinion,
    OfflineJudge,
    ceil_score,
    confirmed_security_flaw,
    opinion,
    persona,
    tests_added,
)
from checks.models import SEVERITY_ORDER

PERSONA = "defense"
FOCUSED_COMMITS = 5


@persona(order=20)
class Defense(OfflineJudge):
    persona = PERSONA

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        case = brief.case
        if not case.files:
            return opinion(PERSONA, d, 1, "The change is empty; there is no work to defend.", kill=True)
        credits: list[str] = []
        tests = tests_added(brief)
        if tests and d.criterion.component in ("testing", "rationale"):
            credits.append(f"the author wrote tests ({', '.join(tests[:3])})")
        focused = 0 < len(case.commits) <= FOCUSED_COMMITS and all(c.message.strip() for c in case.commits)
        if focused and d.criterion.component in ("rationale", "architecture"):
            credits.append(f"{len(case.commits)} focused, described commit(s)")
        if d.fact_score is None:
            base = 3
            argument = f"{d.criterion.title} was not measured; the author deserves the benefit of the doubt"
        else:
            base = ceil_score(d.fact_score)
            argument = f"The facts support {d.fact_score:.1f}/5"
        score = min(5, base + len(credits))
        if credits:
            argument += "; credit is due: " + "; ".join(credits)
        if d.criterion.security and confirmed_security_flaw(brief):
            score = min(score, 2)
            argument += ". I cannot dispute the confirmed security finding"
        return opinion(PERSONA, d, score, argument + ".")

    def rule_audit(self, brief: Brief, d: Docket) -> JudicialOpinion:
        from checks.audit.docket import weight

        if d.fact_score is None:
            score, argument = 3, f"{d.criterion.title} was not measured; the authors deserve the benefit of the doubt"
        else:
            score, argument = ceil_score(d.fact_score), f"The facts support {d.fact_score:.1f}/5"
            merits = [e for e in d.favourable if weight(e)[0] > 0]
            if merits and SEVERITY_ORDER[d.worst()] <= SEVERITY_ORDER["low"]:
                score = min(5, score + 1)
                argument += "; credit is due: " + "; ".join(e.summary for e in merits[:2])
        if d.criterion.security and confirmed_security_flaw(brief):
            score = min(score, 2)
            argument += ". I cannot dispute the confirmed security finding"
        return opinion(PERSONA, d, score, argument + ".")
