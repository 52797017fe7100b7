"""Fixtures for the sandbox tests: a real Docker engine, the real sandbox image, fixture repositories.

The tests skip (with the reason shown) only when no Docker engine answers at all. A missing image is built
offline here, exactly as ``scripts/sandbox-image.sh`` does.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from checks.court import ReviewState, measured_components
from checks.models import Case, DetectiveReport, TestRunResult
from rubric import load_rubric
from sandbox.docker_sandbox import LABEL_OWNER, DockerSandbox, docker_client
from sandbox.errors import SandboxUnavailable
from sandbox.image import build_image, image_exists
from sandbox.limits import SandboxLimits
from tests.images import SANDBOX_IMAGE

IMAGE = SANDBOX_IMAGE  # built here when missing


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[docker.DockerClient]:
    try:
        client = docker_client()
    except SandboxUnavailable as exc:
        pytest.skip(f"no Docker engine can be reached: {exc.reason}")
    if not image_exists(IMAGE):
        build_image(IMAGE)
    yield client
    client.close()


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    counter = iter(range(1000))

    def make(files: dict[str, str]) -> Path:
        root = tmp_path / f"repo{next(counter)}"
        for name, text in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        root.mkdir(exist_ok=True)
        return root

    return make


@pytest.fixture
def sandboxes(docker_engine: docker.DockerClient) -> Iterator[Callable[..., DockerSandbox]]:
    """Build sandboxes; afterwards, assert that none left a container or a volume behind."""
    made: list[DockerSandbox] = []

    def make(root: Path, **limits: Any) -> DockerSandbox:
        sandbox = DockerSandbox.for_tree(root, SandboxLimits(**{"timeout_seconds": 120, **limits}), IMAGE,
                                         client=docker_engine)
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        assert leftovers(docker_engine, sandbox) == ([], [])


def leftovers(client: docker.DockerClient, sandbox: DockerSandbox) -> tuple[list[str], list[str]]:
    label = f"{LABEL_OWNER}={sandbox.owner}"
    containers = [c["Id"] for c in client.api.containers(all=True, filters={"label": label})]
    volumes = [v["Name"] for v in client.api.volumes(filters={"label": label}).get("Volumes") or []]
    return containers, volumes


def court_t(result: TestRunResult) -> float | None:
    """T exactly as the court computes it from this sandbox result."""
    rubric = load_rubric()
    case = Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=())
    state = ReviewState(case=case, rubric=rubric)
    state.reports = [DetectiveReport(detective="tests", tests=result)]
    return measured_components(rubric, state)["testing"]

