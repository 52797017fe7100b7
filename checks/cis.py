"""The Contextual Integrity Score, exactly as in DESIGN.md.

    CIS_raw   = w_R·R + w_A·A + w_T·T + w_L·L
    CIS_final = CIS_raw · (1 − red_penalty) · intent_penalty

Every function here is pure; every constant comes from the rubric.
"""

from __future__ import annotations

from collections.abc import Iterable

from checks.models import SEVERITY_ORDER, TestDiff, TestRunResult
from rubric import Rubric


def clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def cis_raw(rubric: Rubric, rationale: float, architecture: float, testing: float, logic: float) -> float:
    w = rubric.weights
    return clamp(
        w.rationale * rationale + w.architecture * architecture + w.testing * testing + w.logic * logic
    )


def cis_final(raw: float, red_penalty: float, intent_penalty: float) -> float:
    return clamp(raw * (1.0 - red_penalty) * intent_penalty)


def testing_score(rubric: Rubric, pass_rate: float) -> float:
    """Linear map of the sandbox pass rate: 0 % → at_zero, 100 % → at_full."""
    t = rubric.testing
    return t.at_zero + (t.at_full - t.at_zero) * clamp(pass_rate)


def testing_from_diff(rubric: Rubric, diff: TestDiff, head: TestRunResult | None) -> float:
    """T version 2, from a measured differential run (see README "How the score is made").

    Any regression sets T to ``regressed``. A head run that did not complete scores as all failing. Otherwise
    the share of the change's tests that hold (existing ones still passing under the base's oracle, fixed
    ones, new passing ones, against new failing and tampered ones) is blended with the mutation kill rate
    (weight ``mutation.weight``) and mapped linearly onto [at_zero, at_full]. No test at all scores
    ``no_tests``, never more than a failing suite.
    """
    t = rubric.testing
    if diff.regressed:
        return t.regressed
    if head is not None and head.status in ("timeout", "error"):
        return t.at_zero
    good, bad = tests_held(diff)
    if good + bad == 0:  # a run stopped before every test (the guard's wall clock) is not "no tests"
        return t.at_zero if diff.unreached else t.no_tests
    share = good / (good + bad)
    kill_rate = diff.kill_rate
    if kill_rate is not None:
        share = (1.0 - t.mutation.weight) * share + t.mutation.weight * kill_rate
    return testing_score(rubric, share)


def tests_held(diff: TestDiff) -> tuple[int, int]:
    """``(good, bad)``: the change's tests that hold (still passing, fixed, new passing, expectation changed) and
    those that do not (new failing, tampered). ``(0, 0)``: the runs found no test at all."""
    good = diff.unchanged_passing + len(diff.fixed) + len(diff.new_passing) + len(diff.expectation_changed)
    return good, len(diff.new_failing) + len(diff.tampered)


def architecture_score(rubric: Rubric, violation_severities: Iterable[str]) -> float:
    """Baseline minus one penalty per violation, never below the floor."""
    a = rubric.architecture
    penalties: dict[str, float] = a.penalties.model_dump()
    total = sum(penalties.get(sev, 0.0) for sev in violation_severities)
    return max(a.floor, a.baseline - total)


def rationale_score(rubric: Rubric, raw_cosine: float) -> float:
    """Calibrate a raw cosine into [0, 1]: raw_low → 0, raw_high → 1, linear in between."""
    c = rubric.rationale.calibration
    return calibrate(raw_cosine, c.raw_low, c.raw_high)


def calibrate(raw_cosine: float, raw_low: float, raw_high: float) -> float:
    """raw_low → 0, raw_high → 1, linear in between, clamped to [0, 1]."""
    return clamp((raw_cosine - raw_low) / (raw_high - raw_low))


def intent_penalty(rubric: Rubric, similarity: float | None, threshold: float | None = None) -> float:
    """Multiplier for a change that addresses a different problem than stated.

    Below the threshold s₀ (``threshold``, by default the rubric's ``intent.threshold``) the score is multiplied
    by floor + (1 − floor)·s/s₀, falling to the floor at s = 0. An unmeasured similarity applies no penalty.
    """
    if similarity is None:
        return 1.0
    i = rubric.intent
    s0 = i.threshold if threshold is None else threshold
    if similarity >= s0 or s0 <= 0:
        return 1.0
    return i.floor + (1.0 - i.floor) * clamp(similarity) / s0


def red_penalty(rubric: Rubric, severities: Iterable[str]) -> float:
    """Penalty fraction set by the worst severity found; a level counts once however many findings share it."""
    worst = max(severities, key=lambda s: SEVERITY_ORDER.get(s, 0), default=None)
    if worst is None:
        return 0.0
    multiplier = rubric.red.multipliers.model_dump().get(worst)
    if multiplier is None:
        return 0.0
    return 1.0 - float(multiplier)


def logic_anchor(rubric: Rubric, components: dict[str, float | None], fallback: float) -> float:
    """L's ground-truth anchor: the mean of the measured anchor components (``fallback`` if none is)."""
    values = [components[name] for name in rubric.logic.anchor_components if components.get(name) is not None]
    measured = [v for v in values if v is not None]
    if not measured:
        return fallback
    return sum(measured) / len(measured)


def bounded_logic(rubric: Rubric, anchor: float, judged: float) -> float:
    """The judges may move L at most ±bound away from its anchor — a floor and a ceiling."""
    bound = rubric.logic.bound
    return clamp(judged, max(0.0, anchor - bound), min(1.0, anchor + bound))


def opinion_to_unit(score: float) -> float:
    """Map a judge's 1–5 score onto [0, 1]."""
    return clamp((score - 1.0) / 4.0)


def unit_to_opinion(unit: float) -> float:
    """The inverse of :func:`opinion_to_unit`: a value on [0, 1] as a 1–5 score."""
    return 1.0 + 4.0 * clamp(unit)


def verdict_for(rubric: Rubric, score: float) -> str:
    if score >= rubric.verdict.pass_:
        return "pass"
    if score < rubric.verdict.fail:
        return "fail"
    return "neutral"
