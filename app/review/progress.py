"""Stage progress for people watching a review (the CLI's stderr): the court does no I/O, so its parts are
wrapped, as :class:`app.metrics.CourtTimer` wraps them for the metrics, and say when a stage starts and ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from checks.models import Brief, Case, Deliberation, JudicialOpinion, ProbeResult, RedAnalysis, TestRunResult, TestSpec
from rubric import Rubric

Say = Callable[[str], None]


HEARTBEAT_SECONDS = 10.0
_sleep = asyncio.sleep  # the heartbeat's clock (a test drives it tick by tick)


async def _heartbeat(say: Say, what: str, every: float) -> None:
    """Say ``what`` is still under way, with the seconds since it started, every ``every`` seconds (throttled:
    a long environment build is never silent, nor a line a second)."""
    started = time.monotonic()
    while True:
        await _sleep(every)
        say(f"{what} ({time.monotonic() - started:.0f} s)…")


class _ProgressSandbox:
    def __init__(self, inner: Any, say: Say, every: float = HEARTBEAT_SECONDS) -> None:
        self._inner, self._say, self._every = inner, say, every
        self._probing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        tree = getattr(spec, "tree", "head")
        self._say(f"sandbox: running the tests of the {tree} tree…")
        beat = asyncio.create_task(_heartbeat(
            self._say, f"sandbox: still installing the {tree} tree's test environment or running its tests",
            self._every))
        try:
            result: TestRunResult = await self._inner.run_tests(spec)
        finally:
            beat.cancel()
        counts = f"{result.passed} passed, {result.failed} failed, {result.errored} errors"
        self._say(f"sandbox: {tree} tree {result.status}" + (f": {counts}" if result.status == "ran" else
                                                              f" ({result.reason})" if result.reason else ""))
        return result

    async def run_probe(self, code: str, timeout_seconds: float, runtime: str = "python",
                        beside: str | None = None) -> ProbeResult:
        if not self._probing:
            self._probing = True
            self._say("red agent: running the changed code in the sandbox…")
        result: ProbeResult = await self._inner.run_probe(code, timeout_seconds, runtime, beside)
        return result


class _ProgressRedTeam:
    def __init__(self, inner: Any, say: Say) -> None:
        self._inner, self._say = inner, say

    async def attack(self, case: Case, rubric: Rubric, sandbox: Any) -> RedAnalysis:
        self._say("red agent: looking for exploitable code in the change…")  # its adapter says how it ended
        analysis: RedAnalysis = await self._inner.attack(case, rubric, sandbox)
        return analysis


class _ProgressJudge:
    def __init__(self, inner: Any, say: Say, started: list[bool]) -> None:
        self._inner, self._say, self._started = inner, say, started
        self.persona: str = inner.persona

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def deliberate(self, brief: Brief, rubric: Rubric) -> list[JudicialOpinion] | Deliberation:
        if not self._started:
            self._started.append(True)
            self._say("judges: the facts are in; deliberating…")
        answer: list[JudicialOpinion] | Deliberation = await self._inner.deliberate(brief, rubric)
        self._say(f"judges: {self.persona.replace('_', ' ')} ruled")
        return answer


def report_progress(parts: Any, say: Say, every: float = HEARTBEAT_SECONDS) -> None:
    """Wrap ``parts`` (a :class:`checks.court.CourtParts`) so that its stages say when they start and end, and a
    sandbox run that lasts says so every ``every`` seconds."""
    if parts.sandbox is not None:
        parts.sandbox = _ProgressSandbox(parts.sandbox, say, every)
    if parts.red_team is not None:
        parts.red_team = _ProgressRedTeam(parts.red_team, say)
    started: list[bool] = []
    parts.judges = [_ProgressJudge(j, say, started) for j in parts.judges]
