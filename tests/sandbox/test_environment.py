"""Environments with zero configuration: detection, a real package index on loopback, egress limited to it,
caching, and an environment that cannot run the tests reported as such (not charged to the change)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import SetupReport, TestSpec
from rubric import load_rubric
from sandbox.docker_sandbox import DockerSandbox, SetupOptions
from sandbox.environment import choose_python, plan_environment
from sandbox.limits import SandboxCeiling, SandboxLimits
from sandbox.setup_phase import REFUSED_LABEL, environment_image
from tests.gitfixture import RepoBuilder
from tests.images import SANDBOX_IMAGE
from tests.sandbox.index import one_package_index

IMAGE = SANDBOX_IMAGE


def reader(files: dict[str, str]) -> Callable[[str], str | None]:
    return lambda path: files.get(path)


def test_detection_reads_pep621_extras_groups_requirements_and_tox() -> None:
    files = {
        "pyproject.toml": ('[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
                           '[project]\nname = "p"\nrequires-python = ">=3.9"\ndependencies = ["attrs>=22"]\n'
                           '[project.optional-dependencies]\ntests = ["freezegun"]\ndocs = ["sphinx"]\n'
                           '[dependency-groups]\ntest = ["pytest-mock", {include-group = "base"}]\nbase = ["six"]\n'),
        "requirements/tests.txt": "pytest==8.3.5\n-r common.txt\n--hash=sha256:abc\n",
        "requirements/tests.in": "pytest\n",
        "requirements/common.txt": "idna==3.7  # via requests\n",
        "tox.ini": "[testenv]\ndeps =\n    coverage\n    -r requirements/tests.txt\nextras = tests\n",
        "src/p/__init__.py": "",
    }
    plan = plan_environment(reader(files), sorted(files), ("3.11",))
    assert plan.python == "3.11" and plan.layout == "src" and plan.import_roots == ("src",)
    assert plan.install_project
    assert list(plan.requirements) == ["hatchling", "hatch-vcs", "editables", "attrs>=22", "freezegun",
                                       "pytest-mock", "six", "pytest==8.3.5", "idna==3.7", "coverage"]
    assert "pyproject.toml [project.optional-dependencies] tests" in plan.sources
    assert "sphinx" not in plan.requirements
    # an extra left out is kept as declared, so a test that needs it fails for the environment, not the change
    assert [(d.requirement, d.source) for d in plan.left_out] == [
        ("sphinx", "pyproject.toml [project.optional-dependencies] docs")]
    assert plan.key == plan_environment(reader(files), sorted(files), ("3.11",)).key


def test_a_setup_py_s_literal_requirements_are_read_never_run() -> None:
    # the shape of jinja's setup.py (metadata in setup.cfg, dependencies in setup.py): the project installs with
    # --no-deps, so MarkupSafe missing from the plan made every test fail to import
    setup = ('from setuptools import setup\n\nTESTS = ["pytest-timeout"]\n'
             'setup(\n    name="Jinja2",\n    install_requires=["MarkupSafe>=2.0"],\n'
             '    extras_require={"i18n": ["Babel>=2.7"], "testing": TESTS},\n    python_requires=">=3.7",\n)\n')
    files = {"setup.py": setup, "setup.cfg": "[metadata]\nname = Jinja2\n", "src/jinja2/__init__.py": ""}
    plan = plan_environment(reader(files), sorted(files), ("3.11",))
    assert list(plan.requirements) == ["setuptools>=61", "wheel", "MarkupSafe>=2.0", "pytest-timeout"]
    assert plan.requires_python == ">=3.7" and plan.install_project
    assert "setup.py install_requires" in plan.sources and "Babel>=2.7" not in plan.requirements
    # hostile twin: computed values are not evaluated (the file is never run), only literals are read
    hostile = ('import setuptools, os\nsetuptools.setup(name="x", install_requires=os.system("touch /tmp/pwn") '
               'or open("requirements.txt").read().split(), python_requires=">=3.99")\n')
    plan = plan_environment(reader({"setup.py": hostile}), ["setup.py"], ("3.11",))
    assert list(plan.requirements) == ["setuptools>=61", "wheel"] and plan.error is not None


def test_no_configuration_at_all_is_a_plain_flat_project() -> None:
    plan = plan_environment(reader({"calc.py": "", "test_calc.py": ""}), ["calc.py", "test_calc.py"], ("3.11",))
    assert plan.requirements == () and not plan.install_project and plan.layout == "flat"


def test_requires_python_picks_the_interpreter_or_says_none_fits() -> None:
    assert choose_python(">=3.8", ("3.10", "3.11")) == ("3.11", None)
    assert choose_python("<3.11", ("3.10", "3.11")) == ("3.10", None)
    version, error = choose_python(">=3.12", ("3.11",))
    assert version is None and error is not None and "3.11" in error


def test_a_repository_may_raise_limits_up_to_the_operators_ceiling() -> None:
    rubric = load_rubric(overrides={"sandbox": {"pids": 4096, "memory_mb": 1024}})
    limits = SandboxLimits.from_rubric(rubric, 300, ceiling=SandboxCeiling(memory_mb=2048, pids=1024))
    assert (limits.pids, limits.memory_mb) == (1024, 1024)
    # and the defaults fit a real suite that starts a hundred threads
    assert SandboxLimits.from_rubric(load_rubric()).pids >= 256


# --- a real index on loopback ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_index(tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> Iterator[str]:
    source = "def rate(code):\n    return {'TEN': 10}.get(code, 0)\n"
    with one_package_index(tmp_path_factory.mktemp("index"), "lm-discounts", "1.0.0", source) as url:
        yield url


SHOP = {
    "requirements-test.txt": "lm-discounts==1.0.0\n",
    "src/shop/__init__.py": "",
    "src/shop/cart.py": "from lm_discounts import rate\n\n\ndef total(price, code):\n"
                        "    return price * (100 - rate(code)) / 100\n",
    "tests/test_cart.py": "from shop.cart import total\n\n\ndef test_total():\n    assert total(200, 'TEN') == 180\n",
}


@pytest.mark.docker
async def test_a_dependency_from_a_local_index_installs_and_other_hosts_are_refused(
        tmp_path: Path, local_index: str, docker_engine: docker.DockerClient) -> None:
    root = tmp_path / "shop"
    RepoBuilder(root).commit("Shop", SHOP)
    setup = SetupOptions(index_url=local_index, cache_mb=4096)
    sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=120), IMAGE, client=docker_engine,
                                     setup=setup)
    result = await sandbox.run_tests(TestSpec())
    assert result.setup is not None and result.setup.status == "installed", result.reason
    assert result.environment is not None and "lm-discounts==1.0.0" in result.environment.requirements
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output[-2000:]

    # a setup command that reaches for another host is refused by the proxy, and a direct route does not exist
    probe = ("python3 -c \"import os, socket, urllib.request\n"
             "try:\n    urllib.request.urlopen('http://example.org/', timeout=5); print('PROXY-OPEN')\n"
             "except Exception as e: print('proxy refused', e)\n"
             "os.environ.pop('HTTP_PROXY', None); os.environ.pop('http_proxy', None)\n"
             "try:\n    socket.create_connection(('93.184.215.14', 80), timeout=5); print('ROUTE-OPEN')\n"
             "except OSError as e: print('no route', e)\n\" && exit 3")
    refused = await sandbox.run_tests(TestSpec(setup_command=("sh", "-c", probe)))
    assert refused.status == "env_error" and refused.setup is not None
    assert "example.org:80" in refused.setup.refused
    assert "PROXY-OPEN" not in refused.output and "ROUTE-OPEN" not in refused.output
    assert "proxy refused" in refused.output and "no route" in refused.output


@pytest.mark.docker
async def test_the_environment_is_cached_across_runs_and_reported_alike(tmp_path: Path, local_index: str,
                                                                       docker_engine: docker.DockerClient) -> None:
    root = tmp_path / "shop"
    RepoBuilder(root).commit("Shop", SHOP)
    setup = SetupOptions(index_url=local_index)

    def sandbox() -> DockerSandbox:
        return DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=120), IMAGE, client=docker_engine,
                                      setup=setup)

    made = sandbox()
    first = await made.run_tests(TestSpec())
    assert first.environment is not None and first.passed == 1, first.output[-2000:]
    tag = environment_image(made, first.environment, TestSpec(), made.head)
    image = docker_engine.images.get(tag)
    second = await sandbox().run_tests(TestSpec())
    assert docker_engine.images.get(tag).id == image.id, "the cached environment was built again"
    # built or found in the cache, the result says the same: the cache's state is no fact about the change
    assert first.setup is not None and "lm-discounts==1.0.0" in first.setup.resolved, first.setup
    assert first.setup == second.setup == SetupReport(status="installed", install="skipped",
                                                      resolved=first.setup.resolved)
    assert second.passed == 1

    # a hit reports what the build was refused (kept in the image's label), as the build itself did
    container = docker_engine.api.create_container(tag)
    try:
        repository, _, version = tag.partition(":")
        docker_engine.api.commit(container, repository=repository, tag=version, conf={"Labels": {
            **image.labels, REFUSED_LABEL: json.dumps(["example.org:80", "evil.example:443"])}})
    finally:
        docker_engine.api.remove_container(container, force=True)
    third = await sandbox().run_tests(TestSpec())
    assert third.setup == SetupReport(status="installed", refused=("evil.example:443", "example.org:80"),
                                      install="skipped", resolved=first.setup.resolved)
    assert third.passed == 1


@pytest.mark.docker
async def test_an_environment_that_cannot_import_is_not_the_changes_fault(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    repo = RepoBuilder(tmp_path / "app")
    test = "import not_installed_anywhere\n\n\ndef test_x():\n    assert not_installed_anywhere.f() == 1\n"
    repo.commit("App", {"app.py": "def f():\n    return 1\n", "tests/test_app.py": test})
    repo.branch("change")
    head = repo.commit("Make f return one explicitly", {"app.py": "def f():\n    one = 1\n    return one\n"})
    settings = load_settings(sandbox="docker", home=tmp_path / ".lm", embedding="off", red_team="off")
    evaluation, _ = await review_repository(tmp_path / "app", "main", head, settings=settings,
                                            title="Return one explicitly", body="Refactor f.")
    assert evaluation.tests is not None and evaluation.tests.status == "env_error"
    assert "No module named 'not_installed_anywhere'" in (evaluation.tests.reason or "")
    assert "requirements: [\"not_installed_anywhere\"]" in (evaluation.tests.reason or "")
    assert evaluation.measured["testing"] is False
    assert evaluation.verdict == "neutral"
    assert evaluation.differential is not None and evaluation.differential.status == "env_error"
    summaries = " ".join(e.summary for e in evaluation.evidence)
    assert "not the change's fault" in summaries



def test_poetry_and_pipfile_projects_are_read_too() -> None:
    poetry = ('[tool.poetry]\nname = "p"\n[tool.poetry.dependencies]\npython = "^3.9"\nrequests = "^2.31"\n'
              'attrs = {version = "~23.1", optional = false}\nlocal = {path = "../local"}\n'
              '[tool.poetry.group.test.dependencies]\npytest = "*"\nfreezegun = "1.4.0"\n')
    plan = plan_environment(reader({"pyproject.toml": poetry, "poetry.lock": ""}), ["pyproject.toml", "poetry.lock"],
                            ("3.11",))
    assert list(plan.requirements) == ["requests>=2.31", "attrs>=23.1", "pytest", "freezegun==1.4.0"]
    assert plan.lock_files == ("poetry.lock",)
    pipfile = '[packages]\nflask = "*"\n[dev-packages]\npytest = ">=8"\n'
    plan = plan_environment(reader({"Pipfile": pipfile}), ["Pipfile"], ("3.11",))
    assert list(plan.requirements) == ["flask", "pytest>=8"]
