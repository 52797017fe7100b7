"""The Anthropic diagram classifier against a loopback server speaking the Messages API, and in a full audit."""

from __future__ import annotations

import base64
from pathlib import Path

import anthropic
import pytest

from app.audit.run import audit_repository, read_report
from app.llm.vision_anthropic import AnthropicDiagramClassifier
from app.settings import load_settings
from checks.audit.vision import StructureSummary
from checks.errors import DetectiveError
from tests.audit.fake_anthropic import serve

STRUCTURE = StructureSummary(nodes=("a", "b"), fan_out={"a": ("b", "c")}, fan_in={}, graphs=1)


def classifier(url: str) -> AnthropicDiagramClassifier:
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=url, max_retries=0, timeout=10)
    return AnthropicDiagramClassifier(client, "claude-sonnet-4-6")


async def test_the_image_and_the_code_structure_go_to_the_model_and_the_answer_is_schema_bound(report: Path) -> None:
    image = read_report(report).images[0]
    with serve() as fake:
        fake.answer_tool({"kind": "architecture_diagram", "matches_code": False, "description": "linear " * 200})
        answer = await classifier(fake.url).classify(image, STRUCTURE)
    assert answer.kind == "architecture_diagram" and answer.matches_code is False
    assert len(answer.description) <= 400
    sent = fake.requests[0]["messages"][0]["content"]
    assert base64.b64decode(sent[0]["source"]["data"]) == image.data
    assert '"fan_out": {"a": ["b", "c"]}' in sent[1]["text"]


async def test_provider_failures_and_bad_answers_become_detective_errors(report: Path) -> None:
    image = read_report(report).images[0]
    with serve() as fake:
        fake.answer_error(529)
        with pytest.raises(DetectiveError, match="vision provider failed"):
            await classifier(fake.url).classify(image, STRUCTURE)
        fake.answer_tool({"kind": "poem"})
        with pytest.raises(DetectiveError, match="does not fit the schema"):
            await classifier(fake.url).classify(image, STRUCTURE)


async def test_a_full_audit_with_vision_measures_the_diagram_criterion(repo: Path, report: Path) -> None:
    settings = load_settings(llm_provider="offline")
    with serve() as fake:
        fake.answer_tool({"kind": "architecture_diagram", "matches_code": True, "description": "the courtroom"})
        matched = await audit_repository(str(repo), settings=settings, report_path=report,
                                         classifier=classifier(fake.url))
        fake.answer_error(500, "api_error")
        failed = await audit_repository(str(repo), settings=settings, report_path=report,
                                        classifier=classifier(fake.url))
    assert matched.result.fact_scores["diagram_analysis"] == 5.0
    assert any(e.kind == "diagram-classified" for e in matched.result.evidence)
    assert failed.result.fact_scores["diagram_analysis"] is None  # an outage is not a verdict on the diagram
    assert any(e.kind == "diagram-not-analysed" and "not analysed" in e.summary for e in failed.result.evidence)


async def test_the_anthropic_settings_wire_the_classifier(repo: Path, report: Path) -> None:
    from app.settings import Settings

    if "llm_api_key" not in Settings.model_fields:
        pytest.skip("the Anthropic provider settings (LOGOMESH_LLM_*) are not in this build")
    with serve() as fake:
        settings = load_settings(llm_provider="anthropic", llm_api_key="test-key", llm_base_url=fake.url,
                                 llm_max_retries=0)
        fake.answer_tool({"kind": "flowchart", "matches_code": None, "description": "boxes"})
        outcome = await audit_repository(str(repo), settings=settings, report_path=report)
    assert fake.requests and fake.requests[0]["model"] == settings.llm_model
    classified = next(e for e in outcome.result.evidence if e.kind == "diagram-classified")
    assert classified.facts["kind"] == "flowchart"
