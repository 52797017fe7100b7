"""The founding example, end to end: a rate limiter whose single-threaded tests pass, reviewed through the CLI's
path (``review_repository``) with the real Docker sandbox and the Red Agent on. Without its lock the race is
confirmed by running it and the verdict is ``fail`` with the reproducer in the report; with the lock, ``pass``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from checks.render import render_markdown, render_text
from examples.make_example import RATELIMIT, build, pr_body

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("example") / "ratelimit", "ratelimit")


async def review(root: Path, head: str) -> Evaluation:
    settings = load_settings(sandbox="docker", home=root.parent / ".lm", embedding="off", red_team="on")
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title=RATELIMIT.title,
                                            body=pr_body("ratelimit"))
    return evaluation


async def test_the_limiter_without_its_lock_fails_with_the_race_confirmed_and_reproduced(
        example: Path, docker_engine: docker.DockerClient, tmp_path: Path) -> None:
    evaluation = await review(example, "feature/rate-limit")
    assert evaluation.differential is not None and not evaluation.differential.new_failing  # its tests pass
    (race,) = [f for f in evaluation.red_analysis.findings if f.id.startswith("unlocked-shared-state:")]
    assert race.confirmed and race.severity == "high" and race.cwe == "CWE-362"
    assert race.location is not None and race.location.path == "ratelimit/limiter.py"
    assert race.effect is not None and "a limit exceeded" in race.effect
    assert evaluation.verdict == "fail", evaluation.verdict_reasons
    assert race.reproducer is not None
    text, markdown = render_text(evaluation), render_markdown(evaluation)
    assert all(line in text and line in markdown for line in race.reproducer.splitlines())
    assert "<summary>Reproducer</summary>" in markdown
    evidence = next(e for e in evaluation.evidence if e.id == f"red.finding:{race.id}")
    assert evidence.facts["reproducer"] == race.reproducer  # and so in the DBOM
    # the reproducer shows the race by itself, in a checkout of the change
    archive = subprocess.run(["git", "-C", str(example), "archive", "feature/rate-limit"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    shown = subprocess.run([sys.executable, "-c", race.reproducer], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, check=True).stdout
    alone, together = (ast.literal_eval(line.split(":", 1)[1].strip()) for line in shown.splitlines())
    # the limiter and the clients are the ones the project's tests use (`RateLimiter(limit=…, window=60.0)`)
    assert sum(alone.values()) == 32 and "'window': 60.0}" in race.reproducer
    assert together["True"] > alone["True"]


async def test_the_limiter_with_its_lock_passes(example: Path, docker_engine: docker.DockerClient) -> None:
    evaluation = await review(example, "feature/rate-limit-locked")
    assert [f for f in evaluation.red_analysis.findings if f.id.startswith("unlocked-shared-state:")] == []
    assert evaluation.verdict == "pass", evaluation.verdict_reasons
