"""The numbers docs/scoring.md gives a reader are the bundled rubric's: each is formatted here from the rubric and
must stand in the page, so a changed rubric fails this test until the page says the same."""

from __future__ import annotations

from pathlib import Path

from checks.deciding import limits
from rubric import load_rubric

SCORING = Path(__file__).parent.parent.parent / "docs" / "scoring.md"
NUMBER_WORDS = {1: "once", 2: "twice", 3: "three times"}


def test_the_scoring_page_states_the_rubrics_thresholds_weights_and_penalties() -> None:
    rubric = load_rubric()
    page = " ".join(SCORING.read_text(encoding="utf-8").split())
    weights = {rubric.weights.rationale, rubric.weights.architecture, rubric.weights.testing, rubric.weights.logic}
    wanted = [
        f"by default {limits(rubric.verdict.pass_, rubric.verdict.fail)}",
        f"R under {rubric.intent.threshold:.2f}",
        f"as little as ×{rubric.intent.floor:.2f}",
        f"at most ±{rubric.logic.bound:.2f}",
        f"costs {1 - rubric.red.multipliers.critical:.0%} (critical), {1 - rubric.red.multipliers.high:.0%} (high) "
        f"or {1 - rubric.red.multipliers.medium:.0%} (medium)".replace("%", " %"),
        f"re-run ({NUMBER_WORDS[rubric.testing.reruns]}, alone)",
    ]
    if len(weights) == 1:
        wanted.append(f"{weights.pop():.2f} each by default")
    missing = [w for w in wanted if w not in page]
    assert not missing, f"docs/scoring.md does not say what the rubric does: {missing}"
