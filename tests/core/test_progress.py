"""A review says when its stages start and end (the CLI's progress): sandbox runs, red agent, judges."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.review import progress
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

    async def run_probe(self, code: str, timeout_seconds: float, runtime: str = "python",
                        beside: str | None = None) -> ProbeResult:
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


async def test_a_long_sandbox_run_says_it_is_still_working_throttled(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Three intervals pass while the head's environment builds: three lines, each after a wait of the interval
    (the heartbeat's clock is driven tick by tick, so nothing here depends on the machine's speed)."""
    asked: list[float] = []
    ticks: asyncio.Queue[None] = asyncio.Queue()

    async def tick_sleep(seconds: float) -> None:
        asked.append(seconds)
        await ticks.get()

    monkeypatch.setattr(progress, "_sleep", tick_sleep)
    said: list[str] = []

    def beats() -> list[str]:
        return [m for m in said if m.startswith("sandbox: still installing the head tree's test environment")]

    class BuildingSandbox(FakeSandbox):
        async def run_tests(self, spec: TestSpec) -> TestRunResult:
            if spec.tree == "head":
                for n in range(1, 4):
                    ticks.put_nowait(None)
                    for _ in range(10_000):  # bounded: a heartbeat that never speaks fails the test, not hangs
                        if len(beats()) >= n:
                            break
                        await asyncio.sleep(0)
            return await super().run_tests(spec)

    parts = CourtParts(sandbox=BuildingSandbox(), embedder_missing="none", red_team_missing="none")
    report_progress(parts, said.append, every=0.1)
    assert parts.sandbox is not None
    await parts.sandbox.run_tests(TestSpec(tree="head"))
    assert len(beats()) == 3 and all(b.endswith(" s)…") for b in beats()), said  # one line per interval
    assert set(asked) == {0.1}  # each line waited a whole interval, never a poll
    ticks.put_nowait(None)
    for _ in range(5):
        await asyncio.sleep(0)
    assert said[-1] == "sandbox: head tree ran: 1 passed, 1 failed, 0 errors", said  # silent once it is over
    await parts.sandbox.run_tests(TestSpec(tree="base"))  # a quick run says nothing in between
    assert said[-2:] == ["sandbox: running the tests of the base tree…", "sandbox: base tree ran: 1 passed, "
                         "1 failed, 0 errors"]
