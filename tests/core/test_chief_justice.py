"""Each of the Chief Justice's rules on its own, then the whole ruling."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from checks import cis
from checks.chief_justice import dissent_for, judge_case, rule_of_evidence, rule_of_functionality, rule_of_security
from checks.models import (
    Brief,
    Case,
    ChangedFile,
    Evidence,
    JudicialOpinion,
    Location,
    MutantResult,
    RedAnalysis,
    RedFinding,
    TestChange,
    TestDiff,
    TestRunResult,
    ToolchainPlan,
)
from rubric import load_rubric

RUBRIC = load_rubric()
ARCH = RUBRIC.criterion("architecture")
SECURITY = RUBRIC.criterion("security")


def op(judge: str, score: int, criterion: str = "architecture", verdict: str = "PASS") -> JudicialOpinion:
    return JudicialOpinion(judge=judge, criterion_id=criterion, score=score, argument=f"{judge} says {score}",
                           verdict=verdict)


PY_FILE = ChangedFile(path="calc/ops.py", status="modified", added_lines=(1,), content="x = 1\n")


def brief(evidence: Iterable[Evidence] = (), red: RedAnalysis | None = None,
          components: Mapping[str, float | None] | None = None, files: Iterable[ChangedFile] = (PY_FILE,),
          diff: TestDiff | None = None, tests: TestRunResult | None = None) -> Brief:
    case = Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=tuple(files))
    return Brief(case=case, evidence=tuple(evidence), tests=tests, semantic=None, red=red or RedAnalysis(),
                 differential=diff,
                 components=components or {"rationale": None, "architecture": 0.8, "testing": 0.85})


GOOD = [op(j, 5, c) for j in ("prosecutor", "defense", "tech_lead") for c in ("intent", "architecture", "testing",
                                                                               "security")]
FAILING = TestChange(name="tests/test_ops.py::test_add", base="passed", head="failed",
                     message="tests/test_ops.py:5: assert 6 == 5", location="tests/test_ops.py:5")


def measured(**fields: Any) -> TestDiff:
    return TestDiff(status="measured", unchanged_passing=10, **fields)


def killed(status: str = "killed") -> MutantResult:
    return MutantResult(id="m1", path="calc/ops.py", line=1, description="changing `+` to `-`", status=status)


@pytest.mark.parametrize(("diff", "verdict", "rule"), [
    (measured(), "pass", None),
    (measured(mutants=(killed(),)), "pass", None),
    (measured(regressed=(FAILING,)), "fail", "Rule of Regression"),
    (measured(new_failing=(FAILING,)), "fail", "Rule of New Failures"),
    (measured(tampered=(FAILING,)), "neutral", "Rule of the Oracle"),
    (measured(mutants=(killed("survived"), killed("uncovered").model_copy(update={"id": "m2"}))), "neutral",
     "Rule of Untested Change"),
    # a mutant the budget left unrun proves nothing either way
    (measured(mutants=(killed("not_run"),)), "pass", None),
    # the base could not run: nothing is charged to the change
    (TestDiff(status="env_error", reason="no module named freezegun", regressed=(FAILING,)), "pass", None),
])
def test_the_verdict_follows_the_test_facts(diff: TestDiff, verdict: str, rule: str | None) -> None:
    j = judge_case(RUBRIC, brief(diff=diff), GOOD)
    assert j.verdict == verdict
    applied = [r for r in j.verdict_reasons if r.startswith("Rule of")]
    assert applied == ([] if rule is None else [applied[0]]) and (rule is None or applied[0].startswith(rule))


def test_a_head_run_that_did_not_complete_is_not_a_pass() -> None:
    tests = TestRunResult(status="error", reason="pytest ended (exit code 5) before LogoMesh's collector reported")
    j = judge_case(RUBRIC, brief(diff=measured(), tests=tests), GOOD)
    assert j.verdict == "neutral"
    assert any(r.startswith("Rule of Completion") for r in j.verdict_reasons)


def test_a_cis_under_the_fail_line_only_because_the_run_did_not_complete_is_not_a_fail() -> None:
    tests = TestRunResult(status="timeout", reason="killed: wall-clock timeout after 300 s")
    low = {"rationale": 0.3, "architecture": 0.5, "testing": 0.2}
    j = judge_case(RUBRIC, brief(diff=measured(), tests=tests, components=low), _all(2))
    assert j.cis_score < RUBRIC.verdict.fail and j.verdict == "neutral"
    assert any(r.startswith("Rule of Completion") and "300 s" in r for r in j.verdict_reasons)
    # hostile twins: a regression before the stop, or a confirmed critical finding, still fail
    j = judge_case(RUBRIC, brief(diff=measured(regressed=(FAILING,)), tests=tests, components=low), _all(2))
    assert j.verdict == "fail"
    finding = RedFinding(id="f", title="cmd injection", severity="critical", confirmed=True, confidence=0.95,
                         cwe="CWE-78")
    red = RedAnalysis(attack_successful=True, vulnerability_count=1, max_severity="critical", findings=(finding,),
                      ran=True)
    assert judge_case(RUBRIC, brief(diff=measured(), tests=tests, components=low, red=red), _all(2)).verdict == "fail"
    # and a complete run with the same low CIS fails as before
    assert judge_case(RUBRIC, brief(diff=measured(), components=low), _all(2)).verdict == "fail"
    # markupsafe#64: a C file beside the Python is named (Rule of Measurement), which is no fact against the change
    mixed = (PY_FILE, ChangedFile(path="markupsafe/_speedups.c", status="modified", added_lines=(1,)))
    j = judge_case(RUBRIC, brief(diff=measured(), tests=tests, components=low, files=mixed), _all(2))
    assert any(r.startswith("Rule of Measurement") for r in j.verdict_reasons) and j.verdict == "neutral"
    # hostile: a test passing only under the change's harness is a fact against it: the low CIS still fails
    j = judge_case(RUBRIC, brief(diff=measured(tampered=(FAILING,)), tests=tests, components=low), _all(2))
    assert any(r.startswith("Rule of the Oracle") for r in j.verdict_reasons) and j.verdict == "fail"


def test_a_cis_under_the_fail_line_with_the_base_unmeasurable_and_nothing_against_the_change_is_not_a_fail() -> None:
    # pyyaml#358: the 2019 base's own tests cannot import yaml here, T is not measured, R is low but not a mismatch
    base = "no test passed at the base commit: ModuleNotFoundError: No module named 'yaml'"
    unmeasured = TestDiff(status="env_error", reason=base)
    low = {"rationale": 0.24, "architecture": 0.5, "testing": None}
    j = judge_case(RUBRIC, brief(diff=unmeasured, components=low), _all(2))
    assert j.cis_score < RUBRIC.verdict.fail and j.verdict == "neutral"
    assert any(r.startswith("Rule of the Unmeasured Base: the tests were not measured") and "yaml" in r
               for r in j.verdict_reasons)
    # hostile twins: a failing test of the change, or a confirmed critical finding, still fail
    charged = TestDiff(status="env_error", reason=base, new_failing=(FAILING,))
    assert judge_case(RUBRIC, brief(diff=charged, components=low), _all(2)).verdict == "fail"
    finding = RedFinding(id="f", title="cmd injection", severity="critical", confirmed=True, confidence=0.95,
                         cwe="CWE-78")
    red = RedAnalysis(attack_successful=True, vulnerability_count=1, max_severity="critical", findings=(finding,),
                      ran=True)
    assert judge_case(RUBRIC, brief(diff=unmeasured, components=low, red=red), _all(2)).verdict == "fail"
    # and with a measured base the same low CIS fails as before
    assert judge_case(RUBRIC, brief(diff=measured(), components=low), _all(2)).verdict == "fail"


def test_a_guard_run_that_stopped_before_every_test_scores_as_incomplete_never_as_no_tests() -> None:
    # cattrs#732 ("Format using ruff"): the head's run passed 879 tests, the run of its code under the base's tests
    # hit the wall clock before it reported one, so no test was classified as holding
    timeout = "killed: wall-clock timeout after 300 s"
    guard = TestRunResult(status="timeout", reason=timeout)
    stopped = TestDiff(status="measured", guard_tests=guard, unreached=("tests/test_a.py::t",))
    apart = RUBRIC.model_copy(update={"testing": RUBRIC.testing.model_copy(update={"no_tests": 0.15})})
    assert cis.testing_from_diff(apart, stopped, TestRunResult(status="ran", passed=879)) == apart.testing.at_zero
    low = {"rationale": 0.3, "architecture": 0.5, "testing": RUBRIC.testing.at_zero}
    j = judge_case(RUBRIC, brief(diff=stopped, components=low), _all(2))
    assert j.cis_score < RUBRIC.verdict.fail and j.verdict == "neutral"
    assert any(r.startswith("Rule of Completion: the run of the change's code under the base's tests") and timeout in r
               for r in j.verdict_reasons)
    # hostile twins: a regression the guard saw before it stopped still fails; a complete guard's low CIS fails
    regressed = stopped.model_copy(update={"regressed": (FAILING,)})
    assert judge_case(RUBRIC, brief(diff=regressed, components=low), _all(2)).verdict == "fail"
    complete = stopped.model_copy(update={"guard_tests": TestRunResult(status="ran", passed=1), "unreached": ()})
    assert judge_case(RUBRIC, brief(diff=complete, components=low), _all(2)).verdict == "fail"
    assert cis.testing_from_diff(apart, complete, None) == apart.testing.no_tests


def test_an_empty_change_is_nothing_to_review_and_other_languages_are_not_analysed() -> None:
    empty = judge_case(RUBRIC, brief(files=()), GOOD)
    assert empty.verdict == "neutral"
    assert "Rule of Measurement: nothing to review (the change is empty)" in empty.verdict_reasons
    docs = judge_case(RUBRIC, brief(files=(ChangedFile(path="docs/index.rst", status="modified"),
                                           ChangedFile(path="web/app.js", status="added"))), GOOD)
    assert docs.verdict == "neutral"
    assert any("not analysed: JavaScript, reStructuredText" in r for r in docs.verdict_reasons)
    # a non-Python change that breaks a test still fails
    broke = judge_case(RUBRIC, brief(files=(ChangedFile(path="data/x.json", status="modified"),),
                                     diff=measured(regressed=(FAILING,))), GOOD)
    assert broke.verdict == "fail"


def test_rule_of_evidence_pulls_contradicting_opinions_into_the_band() -> None:
    scores, overruled = rule_of_evidence([op("prosecutor", 1), op("defense", 5), op("tech_lead", 4)], 4.2, 1)
    assert scores == {"prosecutor": 3.2, "defense": 5.0, "tech_lead": 4.0}
    assert overruled == ["prosecutor"]
    unmeasured, none = rule_of_evidence([op("prosecutor", 1)], None, 1)
    assert unmeasured == {"prosecutor": 1.0} and none == []


def test_rule_of_functionality_weighs_the_tech_lead_most_on_architecture() -> None:
    scores = {"prosecutor": 2.0, "defense": 2.0, "tech_lead": 5.0}
    assert rule_of_functionality(RUBRIC, ARCH, scores) == pytest.approx((2 + 2 + 10) / 4)
    assert rule_of_functionality(RUBRIC, RUBRIC.criterion("testing"), scores) == pytest.approx(3.0)


def test_rule_of_security_caps_only_with_serious_security_facts() -> None:
    serious = Evidence(id="x", detective="repo", kind="constraint-violation", summary="eval", severity="high",
                       cwe="CWE-95")
    assert rule_of_security(RUBRIC, SECURITY, brief([serious]), 4.5) == (2.0, True)
    assert rule_of_security(RUBRIC, SECURITY, brief(), 4.5) == (4.5, False)
    assert rule_of_security(RUBRIC, ARCH, brief([serious]), 4.5) == (4.5, False)


def test_dissent_only_above_the_spread() -> None:
    assert dissent_for(RUBRIC, ARCH, [op("prosecutor", 2), op("defense", 4)]) is None
    text = dissent_for(RUBRIC, ARCH, [op("prosecutor", 1), op("defense", 4), op("tech_lead", 3)])
    assert text and "defense scored 4/5" in text and "prosecutor scored 1/5" in text


def _all(score: int, verdict: str = "PASS") -> list[JudicialOpinion]:
    return [op(j, score, c.id, verdict) for j in ("prosecutor", "defense", "tech_lead") for c in RUBRIC.criteria]


def test_logic_cannot_leave_its_bound_either_way() -> None:
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    anchor = (0.8 + 0.85) / 2
    low = judge_case(RUBRIC, brief(components=facts), _all(1))
    high = judge_case(RUBRIC, brief(components=facts), _all(5))
    assert low.logic_score == pytest.approx(anchor - 0.10)
    assert high.logic_score == pytest.approx(anchor + 0.10)


def test_cis_follows_the_design_formula() -> None:
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    j = judge_case(RUBRIC, brief(components=facts), _all(4))
    raw = 0.25 * (0.9 + 0.8 + 0.85 + j.logic_score)
    assert j.cis_raw == pytest.approx(raw)
    assert j.cis_score == pytest.approx(raw)
    assert j.verdict == "pass"


def test_red_findings_and_confirmed_flaws() -> None:
    finding = RedFinding(id="f", title="cmd injection", severity="critical", confirmed=True, confidence=0.95,
                         cwe="CWE-78")
    red = RedAnalysis(attack_successful=True, vulnerability_count=1, max_severity="critical", findings=(finding,),
                      ran=True)
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    j = judge_case(RUBRIC, brief(red=red, components=facts), _all(5))
    assert j.red_penalty == pytest.approx(0.40)
    assert j.cis_score <= RUBRIC.chief_justice.security_cap.cis_max
    assert j.verdict == "fail"


def test_unmeasured_tests_cannot_pass() -> None:
    facts = {"rationale": 1.0, "architecture": 0.8, "testing": None}
    j = judge_case(RUBRIC, brief(components=facts), _all(5))
    assert j.verdict == "neutral"
    assert any("not measured" in r for r in j.verdict_reasons)


def test_rejection_first_turns_any_kill_into_fail() -> None:
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    opinions = _all(5)
    opinions[0] = op("prosecutor", 5, opinions[0].criterion_id, "KILL")
    assert judge_case(RUBRIC, brief(components=facts), opinions).verdict == "pass"
    assert judge_case(RUBRIC, brief(components=facts), opinions, rejection_first=True).verdict == "fail"


def test_rules_with_fewer_judges_and_none() -> None:
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    one = [o for o in _all(4) if o.judge == "tech_lead"]
    assert judge_case(RUBRIC, brief(components=facts), one).verdict == "pass"
    nobody = judge_case(RUBRIC, brief(components=facts), [])
    assert nobody.logic_judged is None
    assert nobody.logic_score == pytest.approx((0.8 + 0.85) / 2)


def test_a_confirmed_medium_finding_is_penalised_but_does_not_cap() -> None:
    finding = RedFinding(id="r", title="unbounded recursion", severity="medium", confirmed=True, confidence=0.9,
                         cwe="CWE-674")
    red = RedAnalysis(attack_successful=True, vulnerability_count=1, max_severity="medium", findings=(finding,),
                      ran=True)
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    j = judge_case(RUBRIC, brief(red=red, components=facts), _all(5))
    assert j.red_penalty == pytest.approx(0.15)
    assert j.cis_score == pytest.approx(j.cis_raw * 0.85)
    assert not any("Rule of Security" in r for r in j.verdict_reasons)


JS_FILE = ChangedFile(path="lib/run.js", status="modified", added_lines=(3,), content="x\n")
SHELL_SINK = Evidence(id="architecture.shell", detective="architecture", kind="constraint-violation", severity="high",
                      cwe="CWE-78", summary="child_process.exec with a built string",
                      location=Location(path="lib/run.js", line=3))


def probe_entry(reward: float) -> dict[str, object]:
    return {"attack": "command-injection:lib/run.js:3:run|command|shell", "confirmed": False, "reward": reward,
            "effect": "the target ran with the payload; no effect observed" if reward else
                      "could not reach the target: Error: Cannot find module 'left-pad'"}


@pytest.mark.parametrize(("probes", "verdict"), [
    ([], "neutral"),  # no probe ran on it
    ([probe_entry(0.0)], "neutral"),  # a probe ran and never reached it (its module does not load): nothing cleared
    ([probe_entry(0.0), probe_entry(0.1)], "pass"),  # one reached it and found nothing
    ([probe_entry(0.3)], "pass"),
])
def test_a_serious_sink_holds_a_pass_back_until_a_probe_reaches_it(probes: list[dict[str, object]],
                                                                    verdict: str) -> None:
    tests = TestRunResult(status="ran", passed=4, toolchains=(ToolchainPlan(language="JavaScript", version="22"),))
    red = RedAnalysis(search={"probes": probes})
    parts = {"rationale": 0.8, "architecture": 0.8, "testing": 0.85}
    j = judge_case(RUBRIC, brief([SHELL_SINK], red=red, files=(JS_FILE,), diff=measured(), tests=tests,
                                 components=parts), GOOD)
    said = " | ".join(j.verdict_reasons)
    assert j.verdict == verdict, said
    assert ("1 serious sink(s) in JavaScript that the Red Agent did not probe" in said) == (verdict == "neutral"), said
