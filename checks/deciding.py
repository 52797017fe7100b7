"""The rule that decided a verdict, in words a PR author reads.

The Chief Justice records each rule it applied as a reason (``checks/chief_justice.py``: "Rule of Regression: …",
"Rejection-first policy: …"). A named rule decides before the score: a regression fails a change whatever its CIS.
The headline and the check run's title name that rule, so that "Fail" next to a CIS in the pass band never reads as
an arithmetic error. Pure: reads only the Evaluation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from checks.models import Evaluation


@dataclass(frozen=True)
class Rule:
    prefix: str  # how its reason starts
    words: str  # what it means for the author, in plain words
    verdicts: frozenset[str]  # the verdicts it can decide


_FAIL = frozenset({"fail"})
_HOLD = frozenset({"neutral"})
# In order of precedence: the first one recorded that can reach the verdict decided it.
RULES: tuple[Rule, ...] = (
    Rule("Rule of Regression", "a test that passed before fails now", _FAIL),
    Rule("Rule of New Failures", "a test of this change fails", _FAIL),
    Rule("Rejection-first policy", "a judge vetoed the change", _FAIL),
    Rule("Rule of Measurement: nothing to review", "nothing to review", _HOLD),
    Rule("Rule of Measurement: not analysed", "no Python code to analyse", _HOLD),
    Rule("Rule of the Environment", "tests failed because of the sandbox, not this change", _HOLD),
    Rule("Tests were not measured", "the tests were not measured", _HOLD),
    Rule("Rule of the Oracle", "a test passes only under this change's test harness", _HOLD),
    Rule("Rule of the Declared Change", "a behaviour change the changelog declares awaits a person's confirmation",
         _HOLD),
    Rule("Rule of Reproduction", "a failing test did not fail again when re-run", _HOLD),
    Rule("Rule of the Unmeasured Base", "failing tests could not be compared with the base", _HOLD),
    Rule("Rule of Completion", "the test run did not complete", _HOLD),
    Rule("Rule of Start-up Code", "a new dependency runs code at every interpreter start", _HOLD),
    Rule("Rule of Untested Change", "no test notices the changed lines", _HOLD),
    Rule("Rule of Measurement: changed Python code was not analysed", "changed code was not analysed", _HOLD),
    Rule("Rule of Security", "a confirmed security flaw caps the score", _FAIL | _HOLD),
)

# The Chief Justice's first reason: "CIS 0.6123 against pass ≥ 0.70, fail < 0.50" (the rubric's thresholds).
SCORE_REASON = re.compile(r"^CIS -?[0-9.]+ against (?P<limits>.+)$")


def score_reason(cis: float, pass_at: float, fail_under: float) -> str:
    """The reason that records the score against the rubric's thresholds (parsed back by :func:`thresholds`)."""
    return f"CIS {cis:.4f} against {limits(pass_at, fail_under)}"


def limits(pass_at: float, fail_under: float) -> str:
    return f"pass ≥ {pass_at:.2f}, fail < {fail_under:.2f}"


def thresholds(e: Evaluation) -> str:
    """``pass ≥ 0.70, fail < 0.50`` as the rubric of ``e`` set them, or "" when it was not recorded."""
    match = SCORE_REASON.match(e.verdict_reasons[0]) if e.verdict_reasons else None
    return match.group("limits") if match else ""


def deciding_rules(e: Evaluation) -> list[Rule]:
    """The named rules recorded for ``e`` that can reach its verdict, the deciding one first."""
    if e.verdict == "pass":
        return []
    return [rule for rule in RULES if e.verdict in rule.verdicts
            and any(reason.startswith(rule.prefix) for reason in e.verdict_reasons)]


def deciding_rule(e: Evaluation) -> str | None:
    """In words, the rule that decided the verdict of ``e``; None when the score alone decided it."""
    rules = deciding_rules(e)
    return rules[0].words if rules else None
