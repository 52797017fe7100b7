"""One review end to end through ``app.review.assembly.review_repository`` with ``llm_provider=anthropic``."""

from __future__ import annotations

from pathlib import Path

from app.review.assembly import review_repository
from checks.render import render_markdown
from tests.judges.conftest import BODY, MODEL, TITLE, settings_for
from tests.judges.fake_anthropic import FakeAnthropic, FakeAnthropicServer, Step


async def test_review_repository_with_the_anthropic_provider(
        fake: FakeAnthropic, anthropic_server: FakeAnthropicServer, repo: Path, tmp_path: Path) -> None:
    fake.default_score = 4
    settings = settings_for(tmp_path, llm_provider="anthropic", llm_api_key=fake.api_key,
                            llm_base_url=anthropic_server.base_url, llm_model=MODEL, llm_max_retries=0)
    said: list[str] = []
    evaluation, _ = await review_repository(repo, "main", "pr", settings=settings, title=TITLE, body=BODY,
                                            progress=said.append)
    assert len(fake.requests) == 3
    assert {o.judge for o in evaluation.opinions} == {"prosecutor", "defense", "tech_lead"}
    assert all(o.score == 4 for o in evaluation.opinions)
    records = [e for e in evaluation.evidence if e.kind == "llm-exchange"]
    assert len(records) == 3 and all(r.facts["outcome"] == "answered" for r in records)
    assert any("on anthropic" in line for line in said)
    assert fake.api_key not in evaluation.canonical_json()
    assert "llm-exchange" not in render_markdown(evaluation)  # info-level records stay out of the comment


async def test_unreachable_anthropic_falls_back_to_offline_and_says_so(
        fake: FakeAnthropic, anthropic_server: FakeAnthropicServer, repo: Path, tmp_path: Path) -> None:
    fake.script("*", *[Step(kind="error", status=529, error_type="overloaded_error")] * 3)
    settings = settings_for(tmp_path, llm_provider="anthropic", llm_api_key=fake.api_key,
                            llm_base_url=anthropic_server.base_url, llm_max_retries=0)
    offline, _ = await review_repository(repo, "main", "pr", settings=settings_for(tmp_path), title=TITLE,
                                         body=BODY)
    evaluation, _ = await review_repository(repo, "main", "pr", settings=settings, title=TITLE, body=BODY)
    assert evaluation.opinions == offline.opinions and evaluation.cis_score == offline.cis_score
    notices = [n for n in evaluation.notices if "ruled instead" in n]
    assert len(notices) == 3 and all("HTTP 529" in n for n in notices)
    assert "ruled instead" in render_markdown(evaluation)


async def test_anthropic_without_an_api_key_uses_the_offline_judges(repo: Path, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, llm_provider="anthropic")
    evaluation, _ = await review_repository(repo, "main", "pr", settings=settings, title=TITLE, body=BODY)
    assert any("LOGOMESH_LLM_API_KEY is not set" in n for n in evaluation.notices)
    assert {o.judge for o in evaluation.opinions} == {"prosecutor", "defense", "tech_lead"}
