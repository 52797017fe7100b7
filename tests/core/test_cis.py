"""The CIS maths, with numbers worked by hand, and properties that must hold for any input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checks import cis
from rubric import load_rubric

RUBRIC = load_rubric()
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_raw_is_the_weighted_sum_worked_by_hand() -> None:
    # 0.25·0.9 + 0.25·0.8 + 0.25·0.85 + 0.25·0.75 = 0.825
    assert cis.cis_raw(RUBRIC, 0.9, 0.8, 0.85, 0.75) == pytest.approx(0.825)


def test_final_applies_both_penalties_multiplicatively() -> None:
    # 0.825 · (1 − 0.25) · 0.8 = 0.495
    assert cis.cis_final(0.825, 0.25, 0.8) == pytest.approx(0.495)


@pytest.mark.parametrize(("rate", "expected"), [(0.0, 0.20), (1.0, 0.85), (0.5, 0.525), (0.8, 0.72)])
def test_testing_maps_pass_rate_linearly(rate: float, expected: float) -> None:
    assert cis.testing_score(RUBRIC, rate) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("severities", "expected"),
    [([], 0.80), (["medium"], 0.70), (["high"], 0.60), (["high", "high"], 0.40), (["critical"] * 4, 0.0),
     (["low"], 0.75)],
)
def test_architecture_starts_at_baseline_and_pays_per_violation(severities: list[str], expected: float) -> None:
    assert cis.architecture_score(RUBRIC, severities) == pytest.approx(expected)


@pytest.mark.parametrize(("similarity", "expected"), [(None, 1.0), (0.35, 1.0), (0.9, 1.0), (0.0, 0.30),
                                                      (0.175, 0.65), (0.07, 0.44)])
def test_intent_penalty_curve(similarity: float | None, expected: float) -> None:
    # below 0.35: 0.30 + 0.70·s/0.35
    assert cis.intent_penalty(RUBRIC, similarity) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("severities", "expected"),
    [([], 0.0), (["low"], 0.0), (["medium"], 0.15), (["high"], 0.25), (["critical"], 0.40),
     (["medium", "high", "medium"], 0.25), (["critical", "critical", "high"], 0.40)],
)
def test_red_penalty_is_set_by_the_worst_level_once(severities: list[str], expected: float) -> None:
    assert cis.red_penalty(RUBRIC, severities) == pytest.approx(expected)


@pytest.mark.parametrize(("anchor", "judged", "expected"), [(0.7, 0.2, 0.6), (0.7, 1.0, 0.8), (0.7, 0.75, 0.75),
                                                            (0.95, 1.0, 1.0), (0.05, 0.0, 0.0)])
def test_logic_is_bounded_both_ways_around_its_anchor(anchor: float, judged: float, expected: float) -> None:
    assert cis.bounded_logic(RUBRIC, anchor, judged) == pytest.approx(expected)


def test_logic_anchor_ignores_unmeasured_components() -> None:
    assert cis.logic_anchor(RUBRIC, {"architecture": 0.6, "testing": None}, 0.5) == pytest.approx(0.6)
    assert cis.logic_anchor(RUBRIC, {"architecture": 0.6, "testing": 0.8}, 0.5) == pytest.approx(0.7)
    assert cis.logic_anchor(RUBRIC, {"architecture": None, "testing": None}, 0.5) == pytest.approx(0.5)


def test_rationale_calibration_clamps_and_is_linear() -> None:
    c = RUBRIC.rationale.calibration
    assert cis.rationale_score(RUBRIC, c.raw_low) == 0.0
    assert cis.rationale_score(RUBRIC, c.raw_high) == 1.0
    assert cis.rationale_score(RUBRIC, -1.0) == 0.0
    mid = (c.raw_low + c.raw_high) / 2
    assert cis.rationale_score(RUBRIC, mid) == pytest.approx(0.5)


@given(unit, unit, unit, unit, st.sampled_from([[], ["medium"], ["high"], ["critical"]]), unit)
def test_cis_stays_in_unit_interval(
        r: float, a: float, t: float, logic: float, red: list[str], similarity: float) -> None:
    raw = cis.cis_raw(RUBRIC, r, a, t, logic)
    final = cis.cis_final(raw, cis.red_penalty(RUBRIC, red), cis.intent_penalty(RUBRIC, similarity))
    assert 0.0 <= raw <= 1.0
    assert 0.0 <= final <= 1.0


@given(unit, unit, unit, unit, unit, st.integers(min_value=0, max_value=3))
def test_cis_is_monotone_in_each_component(
        r: float, a: float, t: float, logic: float, bump: float, which: int) -> None:
    values = [r, a, t, logic]
    higher = list(values)
    higher[which] = min(1.0, values[which] + bump)
    assert cis.cis_raw(RUBRIC, *higher) >= cis.cis_raw(RUBRIC, *values) - 1e-12


@given(unit, unit)
def test_final_is_monotone_in_similarity(s1: float, s2: float) -> None:
    low, high = sorted((s1, s2))
    assert cis.intent_penalty(RUBRIC, high) >= cis.intent_penalty(RUBRIC, low)


def test_verdict_thresholds() -> None:
    assert cis.verdict_for(RUBRIC, 0.70) == "pass"
    assert cis.verdict_for(RUBRIC, 0.6999) == "neutral"
    assert cis.verdict_for(RUBRIC, 0.50) == "neutral"
    assert cis.verdict_for(RUBRIC, 0.4999) == "fail"
