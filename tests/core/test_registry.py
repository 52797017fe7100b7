"""Adding a detective is adding one module: the court runs it, the report holds its evidence, the judges weigh the
kinds it declares."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import checks.detectives as package
from checks.court import CourtParts, review
from checks.detectives import registry
from checks.models import Evaluation
from rubric import load_rubric
from tests.rationale.cases import case_from_files

MODULE = '''
"""TodoCounter: the TODOs a change adds."""

from checks.detectives.registry import register
from checks.models import DetectiveReport, Evidence

ID = "todo"


class TodoCounter:
    id = ID

    async def investigate(self, case, rubric):
        found = [(f.path, n) for f in case.files if f.content
                 for n, line in enumerate(f.content.splitlines(), 1) if "TODO" in line and n in f.added_lines]
        return DetectiveReport(detective=ID, evidence=tuple(
            Evidence(id=f"{ID}.left:{path}:{line}", detective=ID, kind="todo-left", severity="medium",
                     summary=f"A TODO is left at {path}:{line}") for path, line in found))


@register(ID, order=45, bears_on={"testing": ("todo-left",)})
def build(resources):
    return TodoCounter()
'''


@pytest.fixture
def todo_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    (tmp_path / "todo_counter.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    yield
    registry.unregister("todo")
    sys.modules.pop("checks.detectives.todo_counter", None)
    monkeypatch.undo()
    registry.registrations()  # the package's own path again


def cited_on_testing(evaluation: Evaluation) -> set[str]:
    return {c for o in evaluation.opinions if o.criterion_id == "testing" for c in o.cited_evidence}


async def test_a_new_detective_module_joins_the_bench_report_and_dockets(todo_module: None) -> None:
    rubric = load_rubric()
    case = case_from_files({"shop.py": "def total(items):\n    # TODO: apply discounts\n    return sum(items)\n"})
    assert [d.id for d in CourtParts().detectives()] == ["repo", "harness", "doc", "tests", "todo", "semantic", "red"]
    assert registry.component_kinds()["testing"] >= {"todo-left", "test-failure"}
    evaluation = await review(case, rubric, CourtParts())
    assert [e.id for e in evaluation.evidence if e.detective == "todo"] == ["todo.left:shop.py:2"]

    registry.unregister("todo")
    without = await review(case, rubric, CourtParts())
    assert "todo-left" not in registry.component_kinds()["testing"]
    assert not [e for e in without.evidence if e.detective == "todo"]
    # on the testing criterion's docket: every judge cites it there, and not once it is gone
    assert "todo.left:shop.py:2" in cited_on_testing(evaluation)
    assert not any(c.startswith("todo.") for c in cited_on_testing(without))


def test_the_built_in_bench_and_what_its_evidence_bears_on() -> None:
    assert [r.id for r in registry.registrations()] == ["repo", "harness", "doc", "tests", "semantic", "red"]
    kinds = registry.component_kinds()
    assert kinds["architecture"] == {"constraint-violation", "syntax-error"}
    assert {"semantic", "intent-mismatch", "claim-unsupported"} <= kinds["rationale"]
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("semantic", order=1)(lambda resources: None)  # type: ignore[arg-type,return-value]


PERSONA_MODULE = '''
"""Auditor — "Show me the numbers.": the facts' score, rounded down, in both courts."""

from checks.judges.base import OfflineJudge, floor_score, opinion, persona


@persona(order=40)
class Auditor(OfflineJudge):
    persona = "auditor"

    def rule(self, brief, d):
        return opinion(self.persona, d, 3 if d.fact_score is None else floor_score(d.fact_score), "The numbers.")

    rule_audit = rule
'''


@pytest.fixture
def auditor_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import checks.judges as judges_package
    from checks.judges import base

    (tmp_path / "auditor.py").write_text(PERSONA_MODULE, encoding="utf-8")
    monkeypatch.setattr(judges_package, "__path__", [*judges_package.__path__, str(tmp_path)])
    yield
    base._PERSONAS.pop("auditor", None)
    sys.modules.pop("checks.judges.auditor", None)
    monkeypatch.undo()
    base.registered_personas()


async def test_a_new_persona_is_one_module_and_a_rubric_entry_in_both_courts(auditor_module: None) -> None:
    from checks.audit import AuditParts, run_audit
    from checks.audit.models import RepoSnapshot
    from checks.judges import offline_judges
    from rubric import JudgePersona

    rubric = load_rubric()
    assert [j.persona for j in offline_judges(rubric.judges)] == ["prosecutor", "defense", "tech_lead"]
    judges = {**rubric.judges, "auditor": JudgePersona(title="Auditor", motto="Show me the numbers.",
                                                       instructions="Score what the facts score.")}
    widened = rubric.model_copy(update={"judges": judges})
    bench = offline_judges(widened.judges)
    assert [j.persona for j in bench] == ["prosecutor", "defense", "tech_lead", "auditor"]
    case = case_from_files({"shop.py": "def total(items):\n    return sum(items)\n"})
    evaluation = await review(case, widened, CourtParts(judges=bench))
    assert {o.judge for o in evaluation.opinions} == {"prosecutor", "defense", "tech_lead", "auditor"}
    snapshot = RepoSnapshot(name="octo/shop", head_sha="a" * 40, commits=(), paths=(), sources=())
    audit = await run_audit(snapshot, None, widened, AuditParts(judges=offline_judges(widened.judges, court="audit")))
    assert "auditor" in {o.judge for o in audit.opinions}


async def test_offline_the_bench_is_the_rubric_s_judges_and_a_persona_without_a_module_is_said(tmp_path: Path) -> None:
    import contextlib

    from app import engine
    from app.settings import Settings
    from checks.config import RepoConfig
    from rubric import JudgePersona

    rubric = load_rubric()
    judges = {"tech_lead": rubric.judges["tech_lead"], "oracle": JudgePersona(title="Oracle", motto="I see.",
                                                                             instructions="Foresee.")}
    prepared = engine.PreparedReview(case=case_from_files({"a.py": "x = 1\n"}),
                                     rubric=rubric.model_copy(update={"judges": judges}), config=RepoConfig())
    parts = CourtParts()
    said: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        await engine.attach_judges(stack, None, prepared, Settings(home=tmp_path, llm_provider="offline"),  # type: ignore[arg-type]
                                   parts, said.append)
    assert [j.persona for j in parts.judges] == ["tech_lead"]
    assert parts.notices == ["the rubric's judge oracle has no offline persona; the court ruled without it"]
