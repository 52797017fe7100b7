"""Fixtures of the red-agent tests: the rubric, and a runner that attacks a fixture change for real."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from checks.models import RedAnalysis
from checks.red import MCTSRedTeam
from rubric import Rubric, load_rubric
from tests.red.fixtures import make_case, write_repo
from tests.red.local_sandbox import LocalProbeSandbox

Attack = Callable[..., Awaitable[tuple[RedAnalysis, MCTSRedTeam, LocalProbeSandbox]]]


@pytest.fixture(scope="session")
def rubric() -> Rubric:
    return load_rubric()


@pytest.fixture
def attack(tmp_path: Path, rubric: Rubric) -> Attack:
    """Attack a change adding ``modules``; the probes run in copies of a repository holding them."""

    async def run(modules: dict[str, str], overrides: dict[str, Any] | None = None,
                  sandboxed: bool = True, body: str = "", **agent: Any
                  ) -> tuple[RedAnalysis, MCTSRedTeam, LocalProbeSandbox]:
        repo = write_repo(tmp_path / f"repo{len(list(tmp_path.iterdir()))}", modules)
        sandbox = LocalProbeSandbox(repo)
        chosen = load_rubric(overrides=overrides) if overrides else rubric
        red_team = MCTSRedTeam(**agent)
        analysis = await red_team.attack(make_case(modules, body), chosen, sandbox if sandboxed else None)
        return analysis, red_team, sandbox

    return run
