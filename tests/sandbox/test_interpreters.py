"""Several interpreters: the main sandbox image's (bookworm, 3.11) and the companion images' (trixie, 3.13; bullseye,
3.9), chosen by the project's ``requires-python`` and classifiers; the main one whenever the project admits it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from app.settings import host_ca_bundle
from checks.models import TestRunResult, TestSpec
from sandbox.docker_sandbox import DockerSandbox, SetupOptions, interpreter_images
from sandbox.environment import choose_python
from sandbox.image import SUITES, build_image, companion_tag, image_exists
from sandbox.limits import SandboxLimits
from tests.gitfixture import RepoBuilder
from tests.sandbox.conftest import IMAGE
from tests.sandbox.index import one_package_index

COMPANION = companion_tag(IMAGE, SUITES["trixie"])
OLDER = companion_tag(IMAGE, SUITES["bullseye"])


def test_the_main_interpreter_is_preferred_whenever_the_project_admits_it() -> None:
    offered = ("3.11", "3.13")
    assert choose_python(None, offered, (), preferred="3.11") == ("3.11", None)
    assert choose_python(">=3.9", offered, (), preferred="3.11") == ("3.11", None)
    assert choose_python(">=3.12", offered, (), preferred="3.11") == ("3.13", None)
    assert choose_python("<3.12", offered, (), preferred="3.11") == ("3.11", None)
    only_new = ["Programming Language :: Python :: 3.13", "Programming Language :: Python :: 3.14"]
    assert choose_python(None, offered, only_new, preferred="3.11") == ("3.13", None)
    # classifiers naming nothing offered never refuse; requires-python admitting nothing does, naming both
    assert choose_python(None, offered, ["Programming Language :: Python :: 3.8"], preferred="3.11")[0] == "3.11"
    version, error = choose_python(">=3.14", offered, (), preferred="3.11")
    assert version is None and error is not None and "3.11, 3.13" in error


def test_a_companion_tag_adds_the_interpreter_to_the_main_tag() -> None:
    assert companion_tag("logomesh-sandbox:latest", "3.13") == "logomesh-sandbox:latest-python3.13"
    assert (companion_tag("registry.example:5000/lm/sandbox", "3.13")
            == "registry.example:5000/lm/sandbox:latest-python3.13")
    assert companion_tag("lm/sandbox:2026.11", "3.13") == "lm/sandbox:2026.11-python3.13"


@pytest.fixture(scope="module")
def companion(docker_engine: docker.DockerClient) -> Iterator[str]:
    for tag, suite in ((COMPANION, "trixie"), (OLDER, "bullseye")):
        if not image_exists(tag):
            build_image(tag, suite=suite)
    yield COMPANION


VERSION_SUITE = "import sys\n\ndef test_interpreter():\n    assert sys.version_info[:2] == ({0}, {1}), sys.version\n"


async def run_greeter(tmp_path: Path, client: docker.DockerClient, name: str, requires: str, suite: str
                      ) -> TestRunResult:
    """The tests of a project ``name`` for ``requires`` (requires-python) that imports a dependency from a local
    index: ``suite`` and a test of the dependency, run in the Docker sandbox with no configuration."""
    with one_package_index(tmp_path / "index", "lm-greet", "1.0.0", "def hello():\n    return 'hi'\n") as url:
        root = tmp_path / name
        RepoBuilder(root).commit(f"A project for Python {requires}", {
            "pyproject.toml": f'[project]\nname = "{name}"\nversion = "1"\nrequires-python = "{requires}"\n'
                              'dependencies = ["lm-greet==1.0.0"]\n',
            f"{name}/__init__.py": "from lm_greet import hello\n",
            f"tests/test_{name}.py": suite + f"\n\ndef test_dep():\n    import {name}\n\n"
                                     f"    assert {name}.hello() == 'hi'\n"})
        sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=180), IMAGE, client=client,
                                         setup=SetupOptions(index_url=url))
        return await sandbox.run_tests(TestSpec())


@pytest.mark.docker
async def test_a_project_that_needs_a_newer_python_runs_under_the_companion_image(
        tmp_path: Path, companion: str, docker_engine: docker.DockerClient) -> None:
    assert interpreter_images(docker_engine, IMAGE) == {"3.11": IMAGE, "3.13": companion, "3.9": OLDER}
    result = await run_greeter(tmp_path, docker_engine, "new", ">=3.12", VERSION_SUITE.format(3, 13))
    assert result.environment is not None and result.environment.python == "3.13"
    assert result.image == companion
    assert (result.status, result.passed, result.failed) == ("ran", 2, 0), (result.reason, result.output[-2000:])


@pytest.mark.docker
async def test_a_project_that_admits_the_main_python_stays_on_it_and_a_wrong_expectation_fails(
        tmp_path: Path, companion: str, docker_engine: docker.DockerClient) -> None:
    root = tmp_path / "old"
    RepoBuilder(root).commit("A project for 3.9 and later", {
        "pyproject.toml": '[project]\nname = "old"\nversion = "1"\nrequires-python = ">=3.9"\n',
        "tests/test_old.py": VERSION_SUITE.format(3, 11) + "\n" + VERSION_SUITE.format(3, 13).replace(
            "test_interpreter", "test_newest")})
    # its build backend comes from the package index, reached as the App reaches it: with this host's CA bundle
    sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=120), IMAGE, client=docker_engine,
                                     setup=SetupOptions(ca_bundle=host_ca_bundle()))
    result = await sandbox.run_tests(TestSpec())
    assert result.environment is not None and result.environment.python == "3.11" and result.image == IMAGE
    # the hostile half: the test that expects the other interpreter really fails (the run is not a rubber stamp)
    assert (result.status, result.passed, result.failed) == ("ran", 1, 1), result.output[-2000:]


@pytest.mark.docker
async def test_a_project_that_needs_an_older_python_runs_under_bullseye_s_with_a_current_pip(
        tmp_path: Path, companion: str, docker_engine: docker.DockerClient) -> None:
    # bullseye's own pip (20.3) has no --dry-run --report: the image's venvs get pip 26, so the environment is
    # resolved and installed by hash as on the other images
    result = await run_greeter(tmp_path, docker_engine, "older", ">=3.8,<3.10", VERSION_SUITE.format(3, 9)
                               + "\n\n" + VERSION_SUITE.format(3, 11).replace("test_interpreter", "test_main"))
    assert result.environment is not None and result.environment.python == "3.9" and result.image == OLDER
    assert result.setup is not None and result.setup.resolved, result.setup
    # and nothing but what the distributions installed (bullseye's venv module copies its debundled wheels)
    assert "no distribution installed" not in (result.setup.reason or ""), result.setup.reason
    # the hostile half: the test expecting the main interpreter fails under this one
    assert (result.status, result.passed, result.failed) == ("ran", 2, 1), (result.reason, result.output[-2000:])
