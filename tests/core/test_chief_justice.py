"""Each of the Chief Justice's rules on its own, then the whole ruling."""

from __future__ import annotations

import pytest

from checks.chief_justice import dissent_for, judge_case, rule_of_evidence, rule_of_functionality, rule_of_security
from checks.models import Brief, Case, Evidence, JudicialOpinion, RedAnalysis, RedFinding
from rubric import load_rubric

RUBRIC = load_rubric()
ARCH = RUBRIC.criterion("architecture")
SECURITY = RUBRIC.criterion("security")


def op(judge: str, score: int, criterion: str = "architecture", verdict: str = "PASS") -> JudicialOpinion:
    return JudicialOpinion(judge=judge, criterion_id=criterion, score=score, argument=f"{judge} says {score}",
                           verdict=verdict)


def brief(evidence=(), red=None, components=None) -> Brief:
    case = Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=())
    return Brief(case=case, evidence=tuple(evidence), tests=None, semantic=None, red=red or RedAnalysis(),
                 components=components or {"rationale": None, "architecture": 0.8, "testing": 0.85})


def test_rule_of_evidence_pulls_contradicting_opinions_into_the_band():
    scores, overruled = rule_of_evidence([op("prosecutor", 1), op("defense", 5), op("tech_lead", 4)], 4.2, 1)
    assert scores == {"prosecutor": 3.2, "defense": 5.0, "tech_lead": 4.0}
    assert overruled == ["prosecutor"]
    unmeasured, none = rule_of_evidence([op("prosecutor", 1)], None, 1)
    assert unmeasured == {"prosecutor": 1.0} and none == []


def test_rule_of_functionality_weighs_the_tech_lead_most_on_architecture():
    scores = {"prosecutor": 2.0, "defense": 2.0, "tech_lead": 5.0}
    assert rule_of_functionality(RUBRIC, ARCH, scores) == pytest.approx((2 + 2 + 10) / 4)
    assert rule_of_functionality(RUBRIC, RUBRIC.criterion("testing"), scores) == pytest.approx(3.0)


def test_rule_of_security_caps_only_with_serious_security_facts():
    serious = Evidence(id="x", detective="repo", kind="constraint-violation", summary="eval", severity="high",
                       cwe="CWE-95")
    assert rule_of_security(RUBRIC, SECURITY, brief([serious]), 4.5) == (2.0, True)
    assert rule_of_security(RUBRIC, SECURITY, brief(), 4.5) == (4.5, False)
    assert rule_of_security(RUBRIC, ARCH, brief([serious]), 4.5) == (4.5, False)


def test_dissent_only_above_the_spread():
    assert dissent_for(RUBRIC, ARCH, [op("prosecutor", 2), op("defense", 4)]) is None
    text = dissent_for(RUBRIC, ARCH, [op("prosecutor", 1), op("defense", 4), op("tech_lead", 3)])
    assert text and "defense scored 4/5" in text and "prosecutor scored 1/5" in text


def _all(score: int, verdict: str = "PASS") -> list[JudicialOpinion]:
    return [op(j, score, c.id, verdict) for j in ("prosecutor", "defense", "tech_lead") for c in RUBRIC.criteria]


def test_logic_cannot_leave_its_bound_either_way():
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    anchor = (0.8 + 0.85) / 2
    low = judge_case(RUBRIC, brief(components=facts), _all(1))
    high = judge_case(RUBRIC, brief(components=facts), _all(5))
    assert low.logic_score == pytest.approx(anchor - 0.10)
    assert high.logic_score == pytest.approx(anchor + 0.10)


def test_cis_follows_the_design_formula():
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    j = judge_case(RUBRIC, brief(components=facts), _all(4))
    raw = 0.25 * (0.9 + 0.8 + 0.85 + j.logic_score)
    assert j.cis_raw == pytest.approx(raw)
    assert j.cis_score == pytest.approx(raw)
    assert j.verdict == "pass"


def test_red_findings_and_confirmed_flaws():
    finding = RedFinding(id="f", title="cmd injection", severity="critical", confirmed=True, confidence=0.95,
                         cwe="CWE-78")
    red = RedAnalysis(attack_successful=True, vulnerability_count=1, max_severity="critical", findings=(finding,),
                      ran=True)
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    j = judge_case(RUBRIC, brief(red=red, components=facts), _all(5))
    assert j.red_penalty == pytest.approx(0.40)
    assert j.cis_score <= RUBRIC.chief_justice.security_cap.cis_max
    assert j.verdict == "fail"


def test_unmeasured_tests_cannot_pass():
    facts = {"rationale": 1.0, "architecture": 0.8, "testing": None}
    j = judge_case(RUBRIC, brief(components=facts), _all(5))
    assert j.verdict == "neutral"
    assert any("not measured" in r for r in j.verdict_reasons)


def test_rejection_first_turns_any_kill_into_fail():
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    opinions = _all(5)
    opinions[0] = op("prosecutor", 5, opinions[0].criterion_id, "KILL")
    assert judge_case(RUBRIC, brief(components=facts), opinions).verdict == "pass"
    assert judge_case(RUBRIC, brief(components=facts), opinions, rejection_first=True).verdict == "fail"


def test_rules_with_fewer_judges_and_none():
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    one = [o for o in _all(4) if o.judge == "tech_lead"]
    assert judge_case(RUBRIC, brief(components=facts), one).verdict == "pass"
    nobody = judge_case(RUBRIC, brief(components=facts), [])
    assert nobody.logic_judged is None
    assert nobody.logic_score == pytest.approx((0.8 + 0.85) / 2)


def test_a_confirmed_medium_finding_is_penalised_but_does_not_cap():
    finding = RedFinding(id="r", title="unbounded recursion", severity="medium", confirmed=True, confidence=0.9,
                         cwe="CWE-674")
    red = RedAnalysis(attack_successful=True, vulnerability_count=1, max_severity="medium", findings=(finding,),
                      ran=True)
    facts = {"rationale": 0.9, "architecture": 0.8, "testing": 0.85}
    j = judge_case(RUBRIC, brief(red=red, components=facts), _all(5))
    assert j.red_penalty == pytest.approx(0.15)
    assert j.cis_score == pytest.approx(j.cis_raw * 0.85)
    assert not any("Rule of Security" in r for r in j.verdict_reasons)
