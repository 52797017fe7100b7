"""Adding a detective is adding one module: the court runs it, the report holds its evidence; a rubric entry puts its
kinds on a criterion's docket."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import checks.detectives as package
from checks.court import CourtParts, review
from checks.detectives import registry
from checks.models import Evaluation
from rubric import Rubric, build_rubric, load_rubric
from rubric.loader import RubricError, read_document
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


@register(ID, order=45, emits=("todo-left",))
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


def with_kind_on(criterion_id: str, kind: str) -> Rubric:
    """The default rubric with one more evidence kind on one criterion: the rubric entry of a new detective."""
    document = read_document()
    for criterion in document["criteria"]:
        if criterion["id"] == criterion_id:
            criterion["evidence"] = [*criterion["evidence"], kind]
    return build_rubric(document)


async def test_a_new_detective_module_joins_the_bench_report_and_dockets(todo_module: None) -> None:
    rubric = with_kind_on("testing", "todo-left")
    case = case_from_files({"shop.py": "def total(items):\n    # TODO: apply discounts\n    return sum(items)\n"})
    assert [d.id for d in CourtParts().detectives()] == ["repo", "harness", "doc", "tests", "todo", "semantic", "red"]
    assert registry.emitted_kinds()["todo"] == {"todo-left"}
    evaluation = await review(case, rubric, CourtParts())
    assert [e.id for e in evaluation.evidence if e.detective == "todo"] == ["todo.left:shop.py:2"]
    # on the testing criterion's docket: every judge cites it there
    assert "todo.left:shop.py:2" in cited_on_testing(evaluation)

    # without the rubric entry the evidence is reported but on no docket
    unlisted = await review(case, load_rubric(), CourtParts())
    assert [e.id for e in unlisted.evidence if e.detective == "todo"] == ["todo.left:shop.py:2"]
    assert not any(c.startswith("todo.") for o in unlisted.opinions for c in o.cited_evidence)

    registry.unregister("todo")
    without = await review(case, rubric, CourtParts())
    assert "todo" not in registry.emitted_kinds()
    assert not [e for e in without.evidence if e.detective == "todo"]
    assert not any(c.startswith("todo.") for c in cited_on_testing(without))


def test_the_built_in_bench_and_the_kinds_the_rubric_puts_on_each_criterion() -> None:
    assert [r.id for r in registry.registrations()] == ["repo", "harness", "doc", "tests", "semantic", "red"]
    emitted = set().union(*registry.emitted_kinds().values())
    rubric = load_rubric()
    listed = {c.id: set(c.evidence or ()) for c in rubric.criteria}
    assert listed["architecture"] == {"constraint-violation", "syntax-error"}
    assert {"semantic", "intent-mismatch", "claim-unsupported"} <= listed["intent"]
    assert not rubric.criterion("security").evidence  # every security fact, whatever its kind
    # every kind the rubric weighs is one a detective reports: a typo would silently empty a docket
    for criterion_id, kinds in listed.items():
        assert kinds <= emitted, (criterion_id, kinds - emitted)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("semantic", order=1)(lambda resources: None)  # type: ignore[arg-type,return-value]


def test_the_evidence_of_real_reviews_is_of_kinds_its_detective_declares() -> None:
    """The goldens are whole reviews (sandbox, red agent, claims): each detective's evidence is of a kind it
    declares, so the kinds a rubric can list are the ones that really occur."""
    declared = registry.emitted_kinds()
    seen = 0
    for path in sorted((Path(__file__).parent / "golden").glob("*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")).get("evidence", []):
            if item["detective"] in declared:
                assert item["kind"] in declared[item["detective"]], (path.name, item["id"], item["kind"])
                seen += 1
    assert seen > 20


def test_a_criterion_must_list_its_kinds_unless_it_is_a_security_criterion() -> None:
    document = read_document()
    del document["criteria"][2]["evidence"]
    with pytest.raises(RubricError) as raised:
        build_rubric(document)
    assert raised.value.field == "criteria.2.evidence"
    document = read_document()
    document["criteria"][3]["evidence"] = ["red-finding"]  # a security criterion may also name its kinds
    assert build_rubric(document).criterion("security").evidence == ("red-finding",)


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
    judges = {**rubric.judges, "auditor": JudgePersona(
        title="Auditor", motto="Show me the numbers.", instructions="Score exactly what the facts score, no more.")}
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

    from app.review import assembly as engine
    from app.settings import Settings
    from checks.config import RepoConfig
    from rubric import JudgePersona

    rubric = load_rubric()
    judges = {"tech_lead": rubric.judges["tech_lead"], "oracle": JudgePersona(
        title="Oracle", motto="I see.", instructions="Foresee what the change will do once it is merged.")}
    prepared = engine.PreparedReview(case=case_from_files({"a.py": "x = 1\n"}),
                                     rubric=rubric.model_copy(update={"judges": judges}), config=RepoConfig())
    parts = CourtParts()
    said: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        await engine.attach_judges(stack, None, prepared, Settings(home=tmp_path, llm_provider="offline"),  # type: ignore[arg-type]
                                   parts, said.append)
    assert [j.persona for j in parts.judges] == ["tech_lead"]
    assert parts.notices == ["the rubric's judge oracle has no offline persona; the court ruled without it"]
