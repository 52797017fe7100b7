"""A requirement that cannot be installed does not sink the environment, and the result names it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from checks.models import TestRunResult, TestSpec
from sandbox.docker_sandbox import DockerSandbox, SetupOptions
from sandbox.environment import install_script, not_installed
from sandbox.limits import SandboxLimits
from tests.gitfixture import RepoBuilder
from tests.images import SANDBOX_IMAGE
from tests.sandbox.index import full_wheel, one_package_index, serve_index, vendored_wheel, write_sdist

IMAGE = SANDBOX_IMAGE
TESTS = "from lm_rates import rate\n\n\ndef test_rate():\n    assert rate('TEN') == 10\n"


@pytest.fixture(scope="module")
def rates_index(tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> Iterator[str]:
    source = "def rate(code):\n    return {'TEN': 10}.get(code, 0)\n"
    with one_package_index(tmp_path_factory.mktemp("index"), "lm-rates", "1.0.0", source) as url:
        yield url


def test_the_script_reports_each_failed_requirement_with_pips_reason() -> None:
    script = install_script("python3.11", "/env", "/setup/requirements.txt")
    assert "-r /setup/requirements.txt" in script and 'while IFS= read -r requirement' in script
    output = ("LOGOMESH-NOT-INSTALLED lm-missing==9.9\n"
              "ERROR: No matching distribution found for lm-missing==9.9\n"
              "LOGOMESH-NOT-INSTALLED broken-build\n")
    assert not_installed(output) == ("lm-missing==9.9 (ERROR: No matching distribution found for lm-missing==9.9)",
                                     "broken-build")
    assert not_installed("ERROR: whatever\n") == ()


async def run(tmp_path: Path, index: str, requirements: str, engine: docker.DockerClient) -> TestRunResult:
    root = tmp_path / "proj"
    RepoBuilder(root).commit("Project", {"requirements-test.txt": requirements, "tests/test_rates.py": TESTS})
    sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=180), IMAGE, client=engine,
                                     setup=SetupOptions(index_url=index, timeout_seconds=300))
    return await sandbox.run_tests(TestSpec())


@pytest.mark.docker
async def test_one_uninstallable_requirement_is_named_and_the_rest_installed(
        tmp_path: Path, rates_index: str, docker_engine: docker.DockerClient) -> None:
    result = await run(tmp_path, rates_index, "lm-rates==1.0.0\nlm-nowhere-to-be-found==9.9\n", docker_engine)
    assert result.setup is not None and result.setup.status == "installed", result.reason
    reason = result.setup.reason or ""
    assert "lm-nowhere-to-be-found==9.9" in reason and "lm-rates" not in reason
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output[-2000:]


@pytest.mark.docker
async def test_when_nothing_installs_the_environment_fails_and_says_so(
        tmp_path: Path, rates_index: str, docker_engine: docker.DockerClient) -> None:
    result = await run(tmp_path, rates_index, "lm-nowhere-to-be-found==9.9\nlm-rates==77.0\n", docker_engine)
    assert result.setup is not None and result.setup.status == "failed"
    assert result.status == "env_error"
    assert "lm-nowhere-to-be-found==9.9" in result.output and "lm-rates==77.0" in result.output


def test_a_resolved_set_that_fails_whole_is_installed_artefact_by_artefact_each_still_hash_checked() -> None:
    from sandbox.resolve import locked_install_script

    script = locked_install_script("python3.11", "/env", "/setup/locked.txt")
    pip_calls = [line for line in script.splitlines() if "-m pip install" in line]
    assert len(pip_calls) == 2 and all("--require-hashes --no-deps" in line for line in pip_calls)
    assert "-r /setup/locked.txt" in pip_calls[0] and "-r /tmp/logomesh-one.txt" in pip_calls[1]
    # one line (with its hash) per file: a hashed requirement is never split from its hash
    assert "printf '%s\\n' \"$requirement\" > /tmp/logomesh-one.txt" in script


@pytest.fixture(scope="module")
def legacy_index(tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> Iterator[str]:
    """An old-style release (a ``setup.py``, no ``pyproject.toml``, no wheel), as cffi's and psutil's pins of
    older projects are, beside the build requirements pip asks the index for (setuptools and ``wheel``)."""
    root = tmp_path_factory.mktemp("legacy-index")
    wheels = {}
    for name in ("lm-legacy", "setuptools", "wheel"):
        (root / "simple" / name).mkdir(parents=True)
    wheels["lm-legacy"] = write_sdist(root / "simple" / "lm-legacy", "lm-legacy", "1.0.0", {
        "lm_rates/__init__.py": "def rate(code):\n    return {'TEN': 10}.get(code, 0)\n",
        "setup.py": "from setuptools import setup\n\nsetup(name='lm-legacy', version='1.0.0', packages=['lm_rates'])\n",
    }, legacy=True)
    wheels["setuptools"] = full_wheel(root / "simple" / "setuptools", "setuptools")
    # pip asks for 'wheel' beside setuptools for a setup.py-only project: the copy setuptools vendors, packed
    wheels["wheel"] = vendored_wheel(root / "simple" / "wheel", "wheel")
    with serve_index(root, wheels) as url:
        yield url


@pytest.mark.docker
async def test_a_setup_py_only_sdist_is_built_into_a_wheel_so_the_environment_verifies_and_is_cached(
        tmp_path: Path, legacy_index: str, docker_engine: docker.DockerClient) -> None:
    """werkzeug#2413: the image's pip (23.0) installs a setup.py-only sdist by running ``setup.py install``, which
    writes no RECORD: every file of cffi was 'listed by no installed distribution's RECORD', the environment was
    never cached and the report named an honest dependency's files as unexplained."""
    result = await run(tmp_path, legacy_index, "lm-legacy==1.0.0\n", docker_engine)
    assert result.setup is not None and result.setup.status == "installed", result.output
    assert "no distribution installed" not in (result.setup.reason or ""), result.setup.reason
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output[-2000:]
