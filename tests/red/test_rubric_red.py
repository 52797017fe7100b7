"""The red agent's constants live in the rubric, validated by its schema."""

from __future__ import annotations

from typing import Any

import pytest

from rubric import RubricError, load_rubric


def test_defaults_from_the_seed_and_the_severity_table() -> None:
    red = load_rubric().red
    assert (red.max_steps, red.max_time_seconds, red.mcts_branches, red.exploration_weight) == (10, 60, 3, 1.414)
    assert red.severity_table["command-injection"].confirmed == "critical"
    assert red.severity_table["hardcoded-secret"].confirmed is None
    # the type already says so; the rubric file is what is checked here
    assert all(rule.unconfirmed != "critical" for rule in red.severity_table.values())  # type: ignore[comparison-overlap]


def test_critical_requires_confirmation() -> None:
    with pytest.raises(RubricError) as error:
        load_rubric(overrides={"red": {"severity_table": {"sql-injection": {"unconfirmed": "critical"}}}})
    assert error.value.field == "red.severity_table.sql-injection.unconfirmed"


@pytest.mark.parametrize(("override", "field"), [
    ({"probe_timeout_seconds": 0}, "red.probe_timeout_seconds"),
    ({"severity_table": {"sql-injection": {"cwe": "89"}}}, "red.severity_table.sql-injection.cwe"),
    ({"untraced": {"severity": "high", "confidence": 0.3}}, "red.untraced.severity"),
])
def test_bad_red_constants_are_rejected_with_their_field(override: dict[str, Any], field: str) -> None:
    with pytest.raises(RubricError) as error:
        load_rubric(overrides={"red": override})
    assert error.value.field == field


def test_a_repository_may_tighten_the_budget() -> None:
    tighter = {"max_steps": 3, "severity_table": {"path-traversal": {"confirmed": "critical"}}}
    red = load_rubric(overrides={"red": tighter}).red
    assert red.max_steps == 3 and red.severity_table["path-traversal"].confirmed == "critical"
    assert red.severity_table["path-traversal"].cwe == "CWE-22"
