"""``court_parts`` attaches the sandbox and the embedding model together, and stays correct when one fails.

The attachers here are stand-ins with the real signature: they prove the overlap with events (never with
timings), and that messages, errors and cleanup read as if the attachers had run one after another.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from app.review import assembly as engine
from app.review.gitrepo import GitRepo
from app.settings import Settings
from checks.config import RepoConfig
from checks.court import CourtParts
from rubric import load_rubric


def prepared() -> engine.PreparedReview:
    from tests.rationale.cases import case_from_files

    return engine.PreparedReview(case=case_from_files({"a.py": "x = 1\n"}), rubric=load_rubric(),
                                 config=RepoConfig())


def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", sandbox="off", red_team="off", embedding="off")


class Overlap:
    """Two attachers that each wait until the other has started: sequential attaching would never finish."""

    def __init__(self) -> None:
        self.sandbox_started = asyncio.Event()
        self.model_started = asyncio.Event()
        self.closed: list[str] = []

    async def sandbox(self, stack: contextlib.AsyncExitStack, repo: GitRepo | None, prep: engine.PreparedReview,
                      sets: Settings, parts: CourtParts, say: engine.ProgressFn) -> None:
        stack.callback(self.closed.append, "docker client")
        self.sandbox_started.set()
        await asyncio.wait_for(self.model_started.wait(), 10)
        say("sandbox: ready")
        parts.sandbox_missing = "stand-in sandbox"

    async def model(self, stack: contextlib.AsyncExitStack, repo: GitRepo | None, prep: engine.PreparedReview,
                    sets: Settings, parts: CourtParts, say: engine.ProgressFn) -> None:
        self.model_started.set()
        say("model: loading")  # said first in time, but said after the sandbox's messages
        await asyncio.wait_for(self.sandbox_started.wait(), 10)
        parts.embedder_missing = "stand-in model"


async def test_sandbox_and_model_attach_concurrently_with_messages_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    overlap = Overlap()
    monkeypatch.setattr(engine, "CONCURRENT_ATTACHERS", (overlap.sandbox, overlap.model))
    said: list[str] = []
    async with engine.court_parts(None, prepared(), settings(tmp_path), said.append) as parts:  # type: ignore[arg-type]
        assert isinstance(parts, CourtParts)
        assert (parts.sandbox_missing, parts.embedder_missing) == ("stand-in sandbox", "stand-in model")
        assert overlap.closed == []
    assert overlap.closed == ["docker client"]
    assert said[:2] == ["sandbox: ready", "model: loading"]


async def test_a_failing_attacher_does_not_leak_what_the_other_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[str] = []
    finished: list[str] = []

    async def sandbox(stack: contextlib.AsyncExitStack, repo: GitRepo | None, prep: engine.PreparedReview,
                      sets: Settings, parts: CourtParts, say: engine.ProgressFn) -> None:
        say("notice: sandbox needed")
        raise RuntimeError("LOGOMESH_SANDBOX=docker but no engine")

    async def model(stack: contextlib.AsyncExitStack, repo: GitRepo | None, prep: engine.PreparedReview,
                    sets: Settings, parts: CourtParts, say: engine.ProgressFn) -> None:
        await asyncio.sleep(0.05)  # still working when the sandbox fails: it is not cancelled
        stack.callback(closed.append, "model resource")
        finished.append("model")
        say("model: loaded")

    monkeypatch.setattr(engine, "CONCURRENT_ATTACHERS", (sandbox, model))
    said: list[str] = []
    with pytest.raises(RuntimeError, match="no engine"):
        async with engine.court_parts(None, prepared(), settings(tmp_path), said.append):  # type: ignore[arg-type]
            pytest.fail("the review must not start")
    assert finished == ["model"] and closed == ["model resource"]
    assert said == ["notice: sandbox needed", "model: loaded"]  # nothing lost, in the attachers' order


async def test_two_failures_raise_the_first_and_note_the_second(tmp_path: Path) -> None:
    async def first(stack: contextlib.AsyncExitStack, repo: GitRepo | None, prep: engine.PreparedReview,
                    sets: Settings, parts: CourtParts, say: engine.ProgressFn) -> None:
        await asyncio.sleep(0.02)
        raise ValueError("first")

    async def second(stack: contextlib.AsyncExitStack, repo: GitRepo | None, prep: engine.PreparedReview,
                     sets: Settings, parts: CourtParts, say: engine.ProgressFn) -> None:
        raise KeyError("second")

    parts = CourtParts()
    async with contextlib.AsyncExitStack() as stack:
        with pytest.raises(ValueError, match="first") as err:
            await engine.attach_together((first, second), stack, None, prepared(), settings(tmp_path),  # type: ignore[arg-type]
                                         parts, lambda _m: None)
    assert any("KeyError" in note and "second" in note for note in err.value.__notes__)


async def test_the_real_attachers_are_split_as_documented() -> None:
    assert (engine.attach_sandbox, engine.attach_embedder) == engine.CONCURRENT_ATTACHERS
    assert (engine.attach_red_team, engine.attach_judges) == engine.SEQUENTIAL_ATTACHERS
    assert engine.ATTACHERS == engine.CONCURRENT_ATTACHERS + engine.SEQUENTIAL_ATTACHERS


async def test_court_parts_with_everything_off_says_the_same_as_before(tmp_path: Path) -> None:
    said: list[str] = []
    async with engine.court_parts(None, prepared(), settings(tmp_path), said.append) as parts:  # type: ignore[arg-type]
        assert parts.sandbox is None and parts.embedder is None and parts.red_team is None
    assert said == ["notice: tests not measured: the sandbox is turned off (LOGOMESH_SANDBOX=off); set "
                    "LOGOMESH_SANDBOX=auto to run them"]
