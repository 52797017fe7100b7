"""The small interfaces through which the outside world reaches the court.

The caller (CLI or worker) hands in implementations; the court itself never touches Docker, the network,
a database or GitHub.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from checks.llm_types import LLMReply, LLMRequest
from checks.models import (
    Brief,
    Case,
    Deliberation,
    DetectiveReport,
    JudicialOpinion,
    ProbeResult,
    RedAnalysis,
    TestRunResult,
    TestSpec,
)
from rubric import Rubric


@runtime_checkable
class Sandbox(Protocol):
    """Runs the change's tests at its head commit, somewhere PR code cannot hurt anyone."""

    async def run_tests(self, spec: TestSpec) -> TestRunResult: ...

    async def run_probe(self, code: str, timeout_seconds: float, runtime: str = "python",
                        beside: str | None = None) -> ProbeResult:
        """Run ``code`` (a Python program; with ``runtime="node"`` a node program; with ``runtime="go"`` a test file
        of the package of the Go file ``beside``) with the repository at head as the working directory, in the head's
        test environment, network off."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors (one per text) with a fixed, named model."""

    model_id: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class RedTeam(Protocol):
    """Attacks the changed code and reports what it could break."""

    async def attack(self, case: Case, rubric: Rubric, sandbox: Sandbox | None) -> RedAnalysis: ...


@runtime_checkable
class Detective(Protocol):
    """A plug-in that collects facts about a case. ``id`` is stable and appears in every evidence id.

    A detective that only computes (no I/O, no objects bound to the event loop) may say ``cpu_bound = True``:
    the court then runs it in a thread of its own, off the event loop."""

    id: str

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport: ...


class CourtResources(Protocol):
    """What a review can lend its detectives (:class:`checks.court.CourtParts`): each interface, or why not."""

    sandbox: Sandbox | None
    sandbox_missing: str
    embedder: Embedder | None
    embedder_missing: str
    red_team: RedTeam | None
    red_team_missing: str


@runtime_checkable
class Judge(Protocol):
    """A persona that reads the evidence and returns one opinion per rubric criterion."""

    persona: str

    async def deliberate(self, brief: Brief, rubric: Rubric) -> list[JudicialOpinion] | Deliberation: ...


@runtime_checkable
class Reconsidering(Protocol):
    """A judge that can be heard again (:mod:`checks.rehearing`): shown the first round's opinions, it answers
    once more on ``criteria`` only. A judge without this keeps its first opinion."""

    persona: str

    async def reconsider(self, brief: Brief, rubric: Rubric, first: Sequence[JudicialOpinion],
                         criteria: Sequence[str]) -> list[JudicialOpinion] | Deliberation: ...


@runtime_checkable
class LLMClient(Protocol):
    """Asks a language model for one answer in a fixed JSON shape; holds no tool that acts on anything.

    Raises :class:`checks.errors.LLMUnavailable` when the provider cannot be reached (the caller falls back),
    :class:`checks.errors.LLMBudgetExceeded` when the review's budget is spent, and
    :class:`checks.errors.LLMError` for any other refusal.
    """

    provider: str
    model_id: str

    async def complete(self, request: LLMRequest) -> LLMReply: ...
