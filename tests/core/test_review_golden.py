"""Golden end-to-end reviews of small fixture repositories, pinned to the exact JSON.

Regenerate after an intended change with ``LOGOMESH_UPDATE_GOLDEN=1`` and read the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.review.gitrepo import GitRepo, read_case
from checks.config import parse_repo_config
from checks.court import CourtParts, review
from rubric import load_rubric
from tests.core.scenarios import SCENARIOS, build

GOLDEN = Path(__file__).parent / "golden"


async def evaluate(root: Path, name: str) -> str:
    path = build(root, name)
    spec = SCENARIOS[name]
    case = read_case(GitRepo.open(path), "main", "pr", config=parse_repo_config(None), title=spec["title"],
                     body=spec["body"])
    evaluation = await review(case, load_rubric(), CourtParts(sandbox_missing="no sandbox in this test",
                                                              embedder_missing="no model in this test",
                                                              red_team_missing="no red agent in this test"))
    return evaluation.pretty_json() + "\n"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_golden(tmp_path: Path, name: str) -> None:
    got = await evaluate(tmp_path, name)
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("LOGOMESH_UPDATE_GOLDEN"):
        golden.write_text(got, encoding="utf-8")
    assert got == golden.read_text(encoding="utf-8")


async def test_clean_change_scores_as_worked_by_hand(tmp_path: Path) -> None:
    data = json.loads(await evaluate(tmp_path, "clean"))
    assert data["architecture_score"] == 0.8
    assert data["testing_score"] == 0.5 and data["measured"]["testing"] is False
    assert data["rationale_score"] == 0.5 and data["measured"]["rationale"] is False
    # anchor = A = 0.8 (T unmeasured); L stays within ±0.10 of it
    assert 0.7 <= data["logic_score"] <= 0.9
    raw = 0.25 * (0.5 + 0.8 + 0.5 + data["logic_score"])
    assert data["cis_raw"] == pytest.approx(raw, abs=1e-4)
    assert data["verdict"] != "pass"  # T not measured can never pass
    assert all(not e["id"].startswith("repo.constraint") for e in data["evidence"])
    for key in ("rationale_score", "architecture_score", "testing_score", "logic_score", "cis_score",
                "red_penalty_applied", "intent_penalty"):
        assert isinstance(data[key], float)
    assert set(data["red_analysis"]) >= {"attack_successful", "vulnerability_count", "max_severity"}


async def test_eval_is_located_and_costs_architecture(tmp_path: Path) -> None:
    data = json.loads(await evaluate(tmp_path, "eval"))
    violations = [e for e in data["evidence"] if e["kind"] == "constraint-violation"]
    assert [(v["location"]["path"], v["location"]["line"], v["cwe"]) for v in violations] == \
        [("calc/ops.py", 9, "CWE-95")]
    assert data["architecture_score"] == 0.6
    security = next(r for r in data["rulings"] if r["criterion_id"] == "security")
    assert security["score"] <= 2


async def test_shell_true_is_a_confirmed_flaw_that_fails(tmp_path: Path) -> None:
    data = json.loads(await evaluate(tmp_path, "shell"))
    assert data["verdict"] == "fail"
    assert data["cis_score"] <= 0.49
    assert any(o["verdict"] == "KILL" for o in data["opinions"])


async def test_claims_without_changes_are_flagged(tmp_path: Path) -> None:
    data = json.loads(await evaluate(tmp_path, "claims"))
    unsupported = {e["id"] for e in data["evidence"] if e["kind"] == "claim-unsupported"}
    assert {"doc.path:calc/parser.py", "doc.path:calc/lexer.py", "doc.tests", "doc.fixes:41"} <= unsupported
    intent = next(r for r in data["rulings"] if r["criterion_id"] == "intent")
    clean_intent = next(r for r in json.loads(await evaluate(tmp_path / "c", "clean"))["rulings"]
                        if r["criterion_id"] == "intent")
    assert intent["score"] < clean_intent["score"]


async def test_same_inputs_give_identical_bytes(tmp_path: Path) -> None:
    first = await evaluate(tmp_path / "one", "eval")
    second = await evaluate(tmp_path / "two", "eval")
    assert first == second
