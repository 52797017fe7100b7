"""A race on an object only the project's tests build, probed in the real Docker sandbox: the probe runs the
project's tests under the image's pytest inside the container (its read-only root, its tmpfs, no network), records
the console a test fills and confirms the race; under its lock, no race."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from sandbox.docker_sandbox import DockerSandbox
from tests.red.test_race import _probe
from tests.red.test_recorded_race import CONSOLE, CONSOLE_TESTS, LOCKED_CONSOLE

pytestmark = pytest.mark.docker

TEST = "tests/test_console.py::test_export_text_clears_the_record"


async def test_the_sandbox_records_the_object_a_test_builds_and_confirms_its_race(
        tmp_path: Path, docker_engine: docker.DockerClient, sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"term/console.py": CONSOLE, "tests/test_console.py": CONSOLE_TESTS}
    raced = await _probe(tmp_path, files, "term/console.py", "Console.export_text", sandbox_for=sandboxes)
    assert raced.confirmed and f"on the object {TEST} builds" in (raced.effect or ""), raced.effect
    locked = await _probe(tmp_path, {**files, "term/console.py": LOCKED_CONSOLE}, "term/console.py",
                          "Console.export_text", sandbox_for=sandboxes)
    assert not locked.confirmed and f"on the object the tests build ({TEST}): no race seen" in locked.effect, \
        locked.effect
