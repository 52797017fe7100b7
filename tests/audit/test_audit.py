"""The audit end to end on the fixture repository and its PDF: false claims flagged, true ones not, the rubric
decides what is judged, and the Markdown report is deterministic and matches its golden snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.audit.run import audit_repository, load_audit_rubric
from app.settings import load_settings
from checks.models import Brief, JudicialOpinion
from rubric import Rubric
from tests.audit.fixtures import (
    FALSE_FEATURES,
    FALSE_PATHS,
    TRUE_COMPONENTS,
    TRUE_FEATURES,
    TRUE_PATHS,
    UNKNOWN_COMPONENTS,
)

GOLDEN = Path(__file__).parent / "golden" / "courtroom.md"
ROOT = Path(__file__).resolve().parents[2]
SETTINGS = load_settings(llm_provider="offline")


async def test_false_claims_are_flagged_and_true_ones_are_not(repo: Path, report: Path) -> None:
    outcome = await audit_repository(str(repo), settings=SETTINGS, report_path=report)
    status = {c.claim.value: c.status for c in outcome.result.claims}
    for value in FALSE_PATHS + FALSE_FEATURES:
        assert status[value] == "hallucination", value
    for value in TRUE_PATHS + TRUE_COMPONENTS + TRUE_FEATURES:
        assert status[value] == "verified", value
    for value in UNKNOWN_COMPONENTS:
        assert status[value] == "unverified", value
    flagged = {e.facts["value"] for e in outcome.result.evidence if e.kind == "hallucination"}
    assert flagged == set(FALSE_PATHS + FALSE_FEATURES)


async def test_the_ruling_follows_the_facts(repo: Path, report: Path) -> None:
    result = (await audit_repository(str(repo), settings=SETTINGS, report_path=report)).result
    rulings = {r.criterion_id: r for r in result.rulings}
    assert len(rulings) == 10
    assert rulings["safe_tool_engineering"].score <= 2  # os.system in src/tools.py
    assert rulings["graph_orchestration"].score >= 4
    assert rulings["report_accuracy"].score < rulings["graph_orchestration"].score
    assert result.fact_scores["diagram_analysis"] is None  # images found, not analysed offline
    kills = {(o.judge, o.criterion_id) for o in result.opinions if o.verdict == "KILL"}
    assert ("prosecutor", "report_accuracy") in kills
    unsafe = next(e for e in result.evidence if e.kind == "constraint-violation")
    assert str(unsafe.location) == "src/tools.py:6" and unsafe.cwe == "CWE-78"


async def test_without_a_report_the_report_criteria_say_so(repo: Path) -> None:
    result = (await audit_repository(str(repo), settings=SETTINGS)).result
    assert result.report is None and result.claims == ()
    assert any(e.kind == "report-missing" for e in result.evidence)
    rulings = {r.criterion_id: r.score for r in result.rulings}
    assert rulings["report_depth"] <= 2 and rulings["report_accuracy"] <= 2


async def test_the_rubric_not_the_code_defines_what_is_judged(repo: Path, report: Path, tmp_path: Path) -> None:
    document = json.loads((ROOT / "rubric" / "auditor.json").read_text())
    document["name"] = "two-questions"
    document["criteria"] = [
        {"id": "honest_report", "title": "Honest report", "question": "Is every file the report names real?",
         "component": "rationale", "security": False, "evidence": ["claim-verified", "hallucination"],
         "levels": {"1": "Fiction.", "5": "All true."}},
        {"id": "history", "title": "History", "question": "Was the work committed steadily?",
         "component": "logic", "security": False, "evidence": ["commit-cadence", "bulk-history"]},
    ]
    custom = tmp_path / "two.json"
    custom.write_text(json.dumps(document))
    outcome = await audit_repository(str(repo), settings=SETTINGS, report_path=report, rubric_path=custom)
    assert [r.criterion_id for r in outcome.result.rulings] == ["honest_report", "history"]
    assert {o.criterion_id for o in outcome.result.opinions} == {"honest_report", "history"}
    assert "### Honest report" in outcome.markdown and "Safe tool engineering" not in outcome.markdown
    assert outcome.result.rubric.name == "two-questions"


def test_the_auditor_rubric_has_ten_criteria_with_levels_and_evidence() -> None:
    rubric = load_audit_rubric(None)
    assert rubric.name == "logomesh-auditor" and len(rubric.criteria) == 10
    for criterion in rubric.criteria:
        assert sorted(criterion.levels or {}) == ["1", "2", "3", "4", "5"], criterion.id
        assert criterion.evidence, criterion.id
    assert [c.id for c in rubric.criteria if c.security] == ["safe_tool_engineering"]


async def test_the_markdown_is_deterministic_and_matches_the_golden_snapshot(tmp_path: Path) -> None:
    from tests.audit.fixtures import build_repo, build_report

    first = await audit_repository(str(build_repo(tmp_path / "a" / "courtroom")), settings=SETTINGS,
                                   report_path=build_report(tmp_path / "a" / "report.pdf"))
    second = await audit_repository(str(build_repo(tmp_path / "b" / "courtroom")), settings=SETTINGS,
                                    report_path=build_report(tmp_path / "b" / "report.pdf"))
    assert first.markdown.encode() == second.markdown.encode()
    assert first.result.canonical_json() == second.result.canonical_json()
    assert str(tmp_path) not in first.markdown
    if os.environ.get("LOGOMESH_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(first.markdown, encoding="utf-8")
    if not GOLDEN.exists():
        pytest.fail(f"golden snapshot missing: run with LOGOMESH_UPDATE_GOLDEN=1 to create {GOLDEN}")
    assert first.markdown == GOLDEN.read_text(encoding="utf-8")


async def test_report_text_cannot_inject_markdown(repo: Path, tmp_path: Path) -> None:
    from tests.audit.fixtures import build_report

    hostile = build_report(tmp_path / "hostile.pdf", pages=(
        "See [click](https://evil.example) and src/x.py @octocat <img src=x> | cell ![i](http://e/p.png).",),
        with_image=False)
    markdown = (await audit_repository(str(repo), settings=SETTINGS, report_path=hostile)).markdown
    assert "](" not in markdown.replace("\\](", "") and "<img" not in markdown.replace("\\<", "")
    assert "@octocat" not in markdown and "![" not in markdown and "https://" not in markdown
    assert "@\u200boctocat" in markdown  # the hostile sentence did reach the report, inert


def test_the_schema_extension_rejects_bad_levels_and_audit_settings(tmp_path: Path) -> None:
    from rubric import RubricError, load_rubric

    document = json.loads((ROOT / "rubric" / "auditor.json").read_text())
    document["criteria"][0]["levels"]["6"] = "beyond the scale"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(RubricError, match=r"criteria\.0\.levels"):
        load_rubric(bad)
    document = json.loads((ROOT / "rubric" / "auditor.json").read_text())
    document["audit"]["unknown"] = 1
    bad.write_text(json.dumps(document))
    with pytest.raises(RubricError, match="audit"):
        load_rubric(bad)
    load_rubric()  # the default PR rubric, without levels or an audit section, still loads


async def test_the_settings_choose_the_bench_and_the_vision_provider_or_say_why_there_is_none() -> None:
    import contextlib

    from app.audit.run import audit_parts, load_audit_rubric
    from checks.judges import OfflineJudge
    from checks.judges.llm import LLMJudge

    rubric = load_audit_rubric(None)
    async with contextlib.AsyncExitStack() as stack:
        offline = audit_parts(stack, load_settings(llm_provider="offline"), rubric)
        assert offline.classifier is None and offline.classifier_missing == "no vision provider configured"
        assert all(isinstance(j, OfflineJudge) and j.court == "audit" for j in offline.judges) and not offline.notices
        keyless = audit_parts(stack, load_settings(llm_provider="anthropic", llm_api_key=None), rubric)
        assert keyless.classifier is None and "API key" in keyless.classifier_missing
        assert all(isinstance(j, OfflineJudge) and j.court == "audit" for j in keyless.judges)
        assert keyless.notices == ["LOGOMESH_LLM_API_KEY is not set, so the offline judges ruled instead of anthropic"]
        keyed = audit_parts(stack, load_settings(llm_provider="anthropic", llm_api_key="sk-test"), rubric)
        assert keyed.classifier is not None
        assert [j.persona for j in keyed.judges] == list(rubric.judges)
        assert all(isinstance(j, LLMJudge) for j in keyed.judges)


async def test_a_judge_that_fails_is_noted_and_the_court_rules_without_it(repo: Path) -> None:
    from app.audit.run import open_snapshot
    from checks.audit import AuditParts, run_audit
    from checks.errors import JudgeError
    from checks.judges import Defense, TechLead

    class Absent:
        persona = "prosecutor"

        async def deliberate(self, brief: Brief, rubric: Rubric) -> list[JudicialOpinion]:
            raise JudgeError("prosecutor", "no answer")

    rubric = load_audit_rubric(None)
    with open_snapshot(str(repo), rubric.forensics.max_commits) as snapshot:
        result = await run_audit(snapshot, None, rubric,
                                 AuditParts(judges=[Absent(), Defense("audit"), TechLead("audit")]))
    assert {o.judge for o in result.opinions} == {"defense", "tech_lead"}
    assert any("judge prosecutor failed: no answer" in n for n in result.notices)
    assert all(r.opinions_considered == 2 for r in result.rulings)


async def test_repository_content_cannot_inject_markdown(tmp_path: Path) -> None:
    from tests.audit.fixtures import git

    hostile = tmp_path / "hostile"
    hostile.mkdir()
    git(hostile, "init", "-q", "-b", "main")
    target = hostile / "src" / "[x](https:evil.example)<img src=y>.py"
    target.parent.mkdir()
    target.write_text("import os\nos.system('ls')\n")
    git(hostile, "add", "-A")
    git(hostile, "commit", "-q", "-m", "@octocat ![p](http://e/p.png)")
    markdown = (await audit_repository(str(hostile), settings=SETTINGS)).markdown
    assert "src/\\[x\\]\\(https\u200b:evil.example\\)\\<img src=y\\>.py:2" in markdown
    assert "](" not in markdown.replace("\\](", "") and "<img" not in markdown.replace("\\<", "")
    assert "@octocat" not in markdown and "![" not in markdown
