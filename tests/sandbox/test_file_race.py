"""A race on a file, probed in the real Docker sandbox: the probe forks its processes inside the container (its
read-only root, its tmpfs, its process limit) and confirms the lost update; under a file lock, no race."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from sandbox.docker_sandbox import DockerSandbox
from tests.red.test_file_race import LOCKED_VISITS, VISITS
from tests.red.test_race import _probe

pytestmark = pytest.mark.docker


async def test_processes_in_the_sandbox_confirm_a_file_race_and_a_file_lock_holds(
        tmp_path: Path, docker_engine: docker.DockerClient, sandboxes: Callable[..., DockerSandbox]) -> None:
    raced = await _probe(tmp_path, {"web/visits.py": VISITS}, "web/visits.py", "Visits.record",
                         sink="file:self.path", sandbox_for=sandboxes)
    assert raced.confirmed and "8 processes × 4 calls" in (raced.effect or ""), raced.effect
    locked = await _probe(tmp_path, {"web/visits.py": LOCKED_VISITS}, "web/visits.py", "Visits.record",
                          sink="file:self.path", sandbox_for=sandboxes)
    assert not locked.confirmed and locked.effect.startswith("no race seen in 5 trial(s) of 8 processes"), \
        locked.effect
