"""The memory default fits a large suite's working set (more than the old 512 MB) and is still a limit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.settings import load_settings
from checks.models import TestSpec
from rubric import load_rubric
from sandbox.docker_sandbox import DockerSandbox
from sandbox.limits import SandboxCeiling, SandboxLimits

HOLD = "def test_holds_{mb}_mb():\n    data = b'x' * ({mb} * 1024 * 1024)\n    assert len(data) == {mb} * 1024 * 1024\n"


def test_the_default_and_the_operators_ceiling(tmp_path: Path) -> None:
    default = SandboxLimits.from_rubric(load_rubric())
    assert default.memory_mb == SandboxLimits().memory_mb == 1536
    settings = load_settings(home=tmp_path / ".lm")
    assert settings.sandbox_max_memory_mb >= default.memory_mb
    # the operator's ceiling bounds the default too, and a repository cannot ask past it
    assert SandboxLimits.from_rubric(load_rubric(), ceiling=SandboxCeiling(memory_mb=1024)).memory_mb == 1024
    greedy = load_rubric(overrides={"sandbox": {"memory_mb": 65536}})
    assert SandboxLimits.from_rubric(greedy, ceiling=SandboxCeiling(memory_mb=4096)).memory_mb == 4096


@pytest.mark.docker
async def test_a_working_set_past_512_mb_runs_at_the_default(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    root = make_repo({"tests/test_big.py": HOLD.format(mb=800)})
    result = await sandboxes(root, memory_mb=SandboxLimits().memory_mb).run_tests(TestSpec())
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output[-2000:]
    # the same test at the old default is killed by the out-of-memory killer
    old = await sandboxes(root, memory_mb=512).run_tests(TestSpec())
    assert old.status == "error" and "out of memory" in (old.reason or ""), old.reason


@pytest.mark.docker
async def test_the_default_is_still_a_limit(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    root = make_repo({"tests/test_huge.py": HOLD.format(mb=2048)})
    result = await sandboxes(root, memory_mb=SandboxLimits().memory_mb).run_tests(TestSpec())
    assert result.status == "error" and "out of memory (limit 1536 MB)" in (result.reason or ""), result.reason
