"""The whole-repo detectives: history forensics, architecture facts, unsafe calls, the offline vision path."""

from __future__ import annotations

from collections.abc import Iterable

from checks.audit.architecture import architecture_evidence, safety_evidence
from checks.audit.ast_facts import collect
from checks.audit.history import investigate_history
from checks.audit.models import HistoryCommit, ReportDocument, ReportImage, ReportPage, RepoSnapshot
from checks.audit.vision import DiagramAssessment, StructureSummary, VisionInspector
from checks.models import Evidence
from rubric import load_rubric
from tests.audit.fixtures import GRAPH, JUDGES, JUSTICE, STATE, TOOLS

RUBRIC = load_rubric()


def commit(i: int, minutes: int, message: str, author: str = "A") -> HistoryCommit:
    return HistoryCommit(sha=f"{i:040x}", author_name=author, author_email=f"{author.lower()}@x", message=message,
                         timestamp=1_767_225_600 + 60 * minutes, files_changed=1, insertions=5)


def snapshot(*commits: HistoryCommit) -> RepoSnapshot:
    return RepoSnapshot(name="r", head_sha="f" * 40, paths=(), commits=commits)


def kinds(items: Iterable[Evidence]) -> dict[str, Evidence]:
    return {e.kind: e for e in items}


def test_a_single_bulk_upload_is_a_finding_and_steady_work_is_not() -> None:
    bulk = kinds(investigate_history(snapshot(*(commit(i, i, f"Add part {i} of it") for i in range(6))), RUBRIC))
    assert bulk["bulk-history"].severity == "low"
    assert "commit-cadence" not in bulk
    steady = kinds(investigate_history(snapshot(*(commit(i, 90 * i, f"Add part {i} of it") for i in range(6))),
                                       RUBRIC))
    assert "bulk-history" not in steady and "commit-cadence" in steady
    assert "descriptive-messages" in steady
    one = kinds(investigate_history(snapshot(commit(0, 0, "Initial import of everything")), RUBRIC))
    assert one["bulk-history"].severity == "medium"


def test_terse_messages_and_authorship() -> None:
    items = kinds(investigate_history(snapshot(commit(0, 0, "wip", "A"), commit(1, 300, "fix", "B"),
                                               commit(2, 600, "Explain the reducer", "B")), RUBRIC))
    assert items["terse-commit-message"].severity == "medium"
    assert items["authorship"].facts["authors"] == ["A <a@x>", "B <b@x>"]
    assert "descriptive-messages" not in items


def test_architecture_facts_of_the_fixture() -> None:
    sources = {"src/state.py": STATE, "src/graph.py": GRAPH, "src/judges.py": JUDGES, "src/justice.py": JUSTICE}
    facts = collect(sources)
    assert {f.name for f in facts.typed_state} == {"Evidence", "AgentState", "JudicialOpinion"}
    assert [(f.name, f.detail) for f in facts.reducers] == [("AgentState.evidences", "operator.add")]
    assert facts.fan_out() == {"START": ["doc_analyst", "repo_investigator"],
                               "evidence_aggregator": ["defense", "prosecutor", "tech_lead"]}
    assert facts.fan_in()["chief_justice"] == ["defense", "prosecutor", "tech_lead"]
    assert sorted(facts.personas) == ["defense", "prosecutor", "tech_lead"]
    items = kinds(architecture_evidence(facts))
    assert items["synthesis-engine"].facts["rules"] == ["rule_of_evidence", "rule_of_security"]
    structured = items["structured-output"].location
    assert structured is not None and structured.path == "src/judges.py"
    assert not [e for e in items.values() if e.severity != "info"]


def test_missing_architecture_is_reported_not_guessed() -> None:
    items = kinds(architecture_evidence(collect({"main.py": "print('hello')\n"})))
    for kind in ("typed-state-missing", "graph-missing", "structured-output-missing", "judge-personas-missing",
                 "synthesis-engine-missing"):
        assert items[kind].severity == "medium"


def test_unsafe_calls_anywhere_in_the_repository_are_found_with_file_and_line() -> None:
    items = safety_evidence({"src/tools.py": TOOLS, "src/ok.py": "import subprocess\nsubprocess.run(['ls'])\n",
                             "src/bad.py": "def f(:\n"}, RUBRIC)
    violations = [e for e in items if e.kind == "constraint-violation"]
    assert [(str(e.location), e.cwe, e.severity) for e in violations] == [("src/tools.py:6", "CWE-78", "high")]
    assert any(e.kind == "syntax-error" and e.location is not None and e.location.path == "src/bad.py" for e in items)
    clean = safety_evidence({"src/ok.py": "import subprocess\nsubprocess.run(['ls'])\n"}, RUBRIC)
    assert [e.kind for e in clean] == ["tools-clean"]


def report_with_image() -> ReportDocument:
    image = ReportImage(page=2, name="I1.png", format="png", width=10, height=5, size=3, sha256="a" * 64,
                        data=b"png")
    return ReportDocument(name="r.pdf", sha256="0" * 64, pages=(ReportPage(number=1, text=""),
                                                              ReportPage(number=2, text="")), images=(image,))


async def test_offline_vision_lists_images_and_says_they_were_not_analysed() -> None:
    items = kinds(await VisionInspector().inspect(report_with_image(), collect({})))
    assert items["report-images"].facts["images"][0]["page"] == 2
    assert items["diagram-not-analysed"].facts["unmeasured"] is True
    assert "not analysed" in items["diagram-not-analysed"].summary
    assert "data" not in items["report-images"].facts["images"][0]  # bytes never enter the record
    empty = ReportDocument(name="r.pdf", sha256="0" * 64, pages=(ReportPage(number=1, text=""),))
    assert [e.kind for e in await VisionInspector().inspect(empty, collect({}))] == ["report-images-missing"]
    assert await VisionInspector().inspect(None, collect({})) == []


class Classifier:
    """A vision provider's answer, fixed: the court's mapping is what is tested, not a model."""

    model_id = "fixed-answer"

    def __init__(self, answer: DiagramAssessment) -> None:
        self.answer = answer
        self.seen: list[StructureSummary] = []

    async def classify(self, image: ReportImage, structure: StructureSummary) -> DiagramAssessment:
        self.seen.append(structure)
        return self.answer


async def test_a_classified_diagram_that_contradicts_the_code_is_a_finding() -> None:
    facts = collect({"src/graph.py": GRAPH})
    mismatch = Classifier(DiagramAssessment(kind="architecture_diagram", matches_code=False,
                                            description="shows a linear pipeline"))
    items = kinds(await VisionInspector(mismatch).inspect(report_with_image(), facts))
    assert items["diagram-mismatch"].severity == "medium"
    assert mismatch.seen[0].fan_out["evidence_aggregator"] == ("defense", "prosecutor", "tech_lead")
    match = Classifier(DiagramAssessment(kind="architecture_diagram", matches_code=True))
    items = kinds(await VisionInspector(match).inspect(report_with_image(), facts))
    assert items["diagram-classified"].severity == "info" and "diagram-not-analysed" not in items
