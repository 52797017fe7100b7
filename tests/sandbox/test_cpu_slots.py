"""Test runs take turns by the engine's CPUs (sandbox/cpu_slots.py): a run's wall clock starts with its tests, so
runs started together never push each other past it."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from checks.models import TestSpec
from sandbox.cpu_slots import engine_cpus, slot_count
from sandbox.docker_sandbox import DockerSandbox

pytestmark = pytest.mark.docker

WINDOW = re.compile(r"window (\d+) (\d+)")
TIMED = """
import time


def test_window():
    start = time.time()
    time.sleep(2)
    assert False, f"window {int(start * 1000)} {int(time.time() * 1000)}"
"""


def test_slots_are_the_engine_s_cpus_over_one_run_s_limit() -> None:
    assert slot_count(2, 1.0) == 2 and slot_count(2, 2.0) == 1 and slot_count(8, 0.5) == 16
    assert slot_count(1, 2.0) == 1 and slot_count(0, 1.0) == 1  # never none


async def test_runs_started_together_take_turns_when_the_engine_holds_one(
        docker_engine: docker.DockerClient, make_repo: Callable[[dict[str, str]], Path],
        sandboxes: Callable[..., DockerSandbox]) -> None:
    cpus = engine_cpus(docker_engine)
    assert cpus >= 1
    # one run's limit is all the engine's CPUs: one slot, so the three runs' tests never overlap
    runs = [sandboxes(make_repo({"tests/test_timed.py": TIMED}), cpus=float(cpus)) for _ in range(3)]
    results = await asyncio.gather(*(sandbox.run_tests(TestSpec()) for sandbox in runs))
    windows = []
    for result in results:
        assert result.status == "ran" and result.failed == 1, (result.status, result.reason)
        found = WINDOW.search(result.tests[0].message or "")
        assert found is not None, result.tests[0].message
        windows.append((int(found.group(1)), int(found.group(2))))
    windows.sort()
    assert all(earlier[1] <= later[0] for earlier, later in itertools.pairwise(windows)), windows
