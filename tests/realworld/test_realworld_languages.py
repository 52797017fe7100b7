"""Real merged Go, JavaScript and TypeScript pull requests, and a reverted-fix twin of each, reviewed with zero
configuration.

The bundles (``fixtures/languages/``, BSD and MIT projects; see its ``README.md``) hold each project's history up to
the PR and a branch ``twin/<id>``: the PR's test changes on its base without its product change, so that a test of
the PR fails there. Each is reviewed as the CLI reviews it, with the real Docker sandbox (``go test -json``, or
``node --test`` — or the project's Vitest or Jest, TypeScript through them — with LogoMesh's reporter after
``npm ci`` from the lock file, at base, head and under the base's tests). The honest PR must have its tests measured
and must ``pass`` or be an honest ``neutral`` (nothing regressed, nothing of its own failing, the reason not a
failure); the twin must have its tests measured, its new test failing, and must never ``pass``. The red agent is off
(it probes neither language): this pins T and the verdict on real code, with the default settings (R measured when
the embedding model is installed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from tests.realworld.conftest import clone_bundles

pytestmark = [pytest.mark.docker, pytest.mark.slow]
FIXTURES = Path(__file__).parent / "fixtures" / "languages"
PRS: list[dict[str, Any]] = json.loads((FIXTURES / "prs.json").read_text(encoding="utf-8"))
# what a neutral may rest on for an honest change: what was not measured, never a failing or regressed test
ACCEPTED = ("CIS ", "Rule of Measurement: ")


@pytest.fixture(scope="module")
def language_projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clone_bundles(FIXTURES, tmp_path_factory.mktemp("realworld-languages"))


async def review(root: Path, pr: dict[str, Any]) -> Evaluation:
    # one home for the module: environments and build caches are reused across reviews
    settings = load_settings(sandbox="docker", home=root / ".lm", red_team="off")
    evaluation, _ = await review_repository(root / pr["repo"], pr["base"], pr["head"], settings=settings,
                                            title=pr["title"], body=pr["body"] or "")
    return evaluation


def measured_tests(evaluation: Evaluation) -> None:
    head = evaluation.tests
    assert head is not None and head.status == "ran", (head and head.reason, head and head.output[-2000:])
    assert head.passed > 0
    assert evaluation.measured["testing"] is True, evaluation.verdict_reasons
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", diff and diff.reason


@pytest.mark.parametrize("pr", [p for p in PRS if p["kind"] == "honest"], ids=lambda p: p["id"])
async def test_a_real_merged_pr_is_measured_and_passes_or_is_an_honest_neutral(
        language_projects: Path, docker_engine: docker.DockerClient, pr: dict[str, Any]) -> None:
    evaluation = await review(language_projects, pr)
    measured_tests(evaluation)
    diff = evaluation.differential
    assert diff is not None and diff.regressed == () and diff.new_failing == (), diff
    assert diff.new_passing, "the PR's own tests are new and pass"
    assert evaluation.verdict in ("pass", "neutral"), evaluation.verdict_reasons
    if evaluation.verdict == "neutral":
        assert [r for r in evaluation.verdict_reasons if not r.startswith(ACCEPTED)] == [], \
            evaluation.verdict_reasons


@pytest.mark.parametrize("pr", [p for p in PRS if p["kind"] == "twin"], ids=lambda p: p["id"])
async def test_a_reverted_fix_is_measured_and_never_passes(
        language_projects: Path, docker_engine: docker.DockerClient, pr: dict[str, Any]) -> None:
    evaluation = await review(language_projects, pr)
    measured_tests(evaluation)
    diff = evaluation.differential
    assert diff is not None and diff.new_failing, diff
    assert evaluation.verdict != "pass", evaluation.verdict_reasons
    assert evaluation.verdict == "fail", evaluation.verdict_reasons
    assert any("Rule of New Failures" in r for r in evaluation.verdict_reasons), evaluation.verdict_reasons


def test_every_twin_is_its_prs_tests_without_its_product_change() -> None:
    honest = {p["id"]: p for p in PRS if p["kind"] == "honest"}
    twins = [p for p in PRS if p["kind"] == "twin"]
    assert {t["twin_of"] for t in twins} == set(honest)
    assert {p["language"] for p in PRS} >= {"go", "javascript"}
    for twin in twins:
        pr = honest[twin["twin_of"]]
        assert twin["base"] == pr["base"] and twin["verified"]
        assert (FIXTURES / f"{twin['repo']}.bundle").is_file()
