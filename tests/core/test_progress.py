"""A review says when its stages start and end (the CLI's progress): sandbox runs, red agent, judges."""

from __future__ import annotations

from pathlib import Path

from app.review.gitrepo import GitRepo, read_case
from app.review.progress import report_progress
from checks.config import parse_repo_config
from checks.court import CourtParts, review
from checks.models import Case, ProbeResult, TestRunResult, TestSpec
from rubric import load_rubric
from tests.core.scenarios import SCENARIOS, build


class FakeSandbox:
    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        return TestRunResult(status="ran", tree=spec.tree, collected=2, passed=1, failed=1)

    async def run_probe(self, code: str, timeout_seconds: float) -> ProbeResult:
        raise AssertionError("no probe in this test")


def clean_case(tmp_path: Path) -> Case:
    path = build(tmp_path, "clean")
    spec = SCENARIOS["clean"]
    return read_case(GitRepo.open(path), "main", "pr", config=parse_repo_config(None), title=spec["title"],
                     body=spec["body"])


async def test_stages_say_when_they_start_and_end(tmp_path: Path) -> None:
    case = clean_case(tmp_path)
    said: list[str] = []
    parts = CourtParts(sandbox=FakeSandbox(), embedder_missing="none", red_team_missing="none")
    report_progress(parts, said.append)
    evaluation = await review(case, load_rubric(), parts)
    assert "sandbox: running the tests of the head tree…" in said
    assert "sandbox: head tree ran: 1 passed, 1 failed, 0 errors" in said
    assert said.index("judges: the facts are in; deliberating…") > said.index("sandbox: running the tests of the "
                                                                               "head tree…")
    assert sorted(m for m in said if m.endswith(" ruled")) == ["judges: defense ruled", "judges: prosecutor ruled",
                                                                "judges: tech lead ruled"]
    assert evaluation.opinions  # the wrapped judges still ruled


class SlowSandbox(FakeSandbox):
    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        import asyncio

        await asyncio.sleep(0.35)  # an environment being built
        return await super().run_tests(spec)


async def test_a_long_sandbox_run_says_it_is_still_working_throttled(tmp_path: Path) -> None:
    case = clean_case(tmp_path)
    said: list[str] = []
    parts = CourtParts(sandbox=SlowSandbox(), embedder_missing="none", red_team_missing="none")
    report_progress(parts, said.append, every=0.1)
    await review(case, load_rubric(), parts)
    beats = [m for m in said if m.startswith("sandbox: still installing the head tree's test environment")]
    assert 2 <= len(beats) <= 4, said  # one line per interval, not one per poll
    assert beats[0].endswith(" s)…")
    done = said.index("sandbox: head tree ran: 1 passed, 1 failed, 0 errors")
    assert not [m for m in said[done:] if m.startswith("sandbox: still")]  # silent once the run is over
