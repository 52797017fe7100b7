"""Tech Lead — "Does it actually work?"

Rules, in order, per criterion:
1. Code that does not parse cannot work: architecture scores 1 and KILL.
2. Testing: tests that ran decide — the facts' score rounded to nearest, at most 2 if any test failed, and KILL
   when every executed test failed. No tests or unmeasured tests: 2, nobody knows whether it works.
3. Security: a confirmed flaw means the change cannot ship as merged — 1 and KILL.
4. Everything else: the facts' score rounded to nearest, one point off for each high-or-worse adverse item;
   an unmeasured criterion is neutral (3).

In an audit:
1. A confirmed security flaw on a security criterion: 1 and KILL.
2. Unmeasured: 3. Otherwise the facts' score rounded to nearest, one point off per high-or-worse item.
"""

from __future__ import annotations

from checks.judges.base import (
    Brief,
    Docket,
    JudicialOpinion,
    OfflineJudge,
    charges,
    confirmed_security_flaw,
    nearest_score,
    opinion,
    persona,
)

PERSONA = "tech_lead"


@persona(order=30)
class TechLead(OfflineJudge):
    persona = PERSONA

    def rule(self, brief: Brief, d: Docket) -> JudicialOpinion:
        component = d.criterion.component
        syntax = [e for e in brief.evidence if e.kind == "syntax-error"]
        if component == "architecture" and not d.criterion.security and syntax:
            where = ", ".join(str(e.location) for e in syntax)
            return opinion(PERSONA, d, 1, f"Code that does not parse cannot work ({where}).", kill=True)
        if d.criterion.security and confirmed_security_flaw(brief):
            return opinion(PERSONA, d, 1, "A confirmed exploitable flaw: this cannot ship as merged.", kill=True)
        if component == "testing":
            tests = brief.tests
            if tests is None or tests.status in ("not_measured", "no_tests") or d.fact_score is None:
                why = "no tests exist" if tests is not None and tests.status == "no_tests" else "tests did not run"
                return opinion(PERSONA, d, 2, f"I cannot tell whether it works: {why}.")
            failing = tests.failed + tests.errored
            score = nearest_score(d.fact_score)
            if tests.executed and tests.passed == 0:
                return opinion(PERSONA, d, 1, f"Every executed test failed ({failing}).", kill=True)
            if failing or tests.status in ("timeout", "error"):
                return opinion(PERSONA, d, min(score, 2), f"{failing} test(s) fail or the run did not finish "
                               f"({tests.status}); it does not work yet.")
            return opinion(PERSONA, d, score, f"{tests.passed} test(s) pass in the sandbox; it works as tested.")
        if d.fact_score is None:
            return opinion(PERSONA, d, 3, f"{d.criterion.title} was not measured; neutral until it is.")
        serious = d.count("high")
        score = nearest_score(d.fact_score) - serious
        if serious:
            return opinion(PERSONA, d, score, f"{serious} serious problem(s) on the record: "
                           + "; ".join(e.summary for e in d.adverse if e.severity in ("high", "critical")))
        return opinion(PERSONA, d, score, f"Measured at {d.fact_score:.1f}/5 with no serious problem on record.")

    def rule_audit(self, brief: Brief, d: Docket) -> JudicialOpinion:
        if d.criterion.security and confirmed_security_flaw(brief):
            return opinion(PERSONA, d, 1, "A confirmed unsafe construct: this cannot ship.", kill=True)
        if d.fact_score is None:
            return opinion(PERSONA, d, 3, f"{d.criterion.title} was not measured; neutral until it is.")
        serious = charges(d, "high")
        score = nearest_score(d.fact_score) - len(serious)
        if serious:
            return opinion(PERSONA, d, score, f"{len(serious)} serious problem(s): " + "; ".join(serious[:4]))
        return opinion(PERSONA, d, score, f"Measured at {d.fact_score:.1f}/5 with no serious problem on record.")
