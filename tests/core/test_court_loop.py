"""The court keeps the event loop free: detectives that only compute run in threads of their own, and the
detectives that wait on containers start first."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from app.review.gitrepo import GitRepo, read_case
from checks.config import parse_repo_config
from checks.court import CourtParts, review
from checks.detectives import DocAnalyst, HarnessInspector, RepoInvestigator
from checks.models import Case, DetectiveReport
from rubric import Rubric, load_rubric
from tests.core.scenarios import SCENARIOS, build


def test_the_parsing_detectives_declare_themselves_cpu_bound() -> None:
    assert all(d.cpu_bound for d in (RepoInvestigator(), HarnessInspector(), DocAnalyst()))


async def test_cpu_bound_detectives_run_off_the_loop_after_the_waiting_ones_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop_thread = threading.get_ident()
    started: list[tuple[str, int]] = []

    def spy(cls: type[Any]) -> None:
        original = cls.investigate

        async def investigate(self: Any, case: Case, rubric: Rubric) -> DetectiveReport:
            started.append((self.id, threading.get_ident()))
            report: DetectiveReport = await original(self, case, rubric)
            return report

        monkeypatch.setattr(cls, "investigate", investigate)

    from checks.detectives import Semantic, TestRunner

    for cls in (RepoInvestigator, HarnessInspector, DocAnalyst, TestRunner, Semantic):
        spy(cls)
    path = build(tmp_path, "eval")
    spec = SCENARIOS["eval"]
    case = read_case(GitRepo.open(path), "main", "pr", config=parse_repo_config(None), title=spec["title"],
                     body=spec["body"])
    evaluation = await review(case, load_rubric(), CourtParts(sandbox_missing="none", embedder_missing="none"))
    threads = dict(started)
    assert threads[TestRunner.id] == loop_thread and threads[Semantic.id] == loop_thread
    cpu = [RepoInvestigator.id, HarnessInspector.id, DocAnalyst.id]
    assert all(threads[d] != loop_thread for d in cpu), threads
    order = [name for name, _ in started]
    assert order.index(TestRunner.id) < min(order.index(d) for d in cpu)
    # what they found is unchanged (the golden reviews pin the bytes)
    assert any(e.kind == "constraint-violation" for e in evaluation.evidence)
