"""Nothing a PR installs runs before LogoMesh's collector owns the outcomes: the test interpreter starts without
site processing and builds its path itself (path lines of ``.pth`` files honoured, executable lines never run),
against the real sandbox image and a real package index on loopback."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from checks.models import Evaluation, TestSpec
from sandbox import setup_phase
from sandbox.docker_sandbox import DockerSandbox, SetupOptions
from sandbox.limits import SandboxLimits
from sandbox.setup_phase import env_tag, environment_image
from tests.gitfixture import RepoBuilder
from tests.images import SANDBOX_IMAGE
from tests.sandbox.index import build_wheel, full_wheel, serve_index, write_sdist, write_wheel

IMAGE = SANDBOX_IMAGE

# installed as a dependency: at start-up it arranges for pytest's test calls to swallow AssertionError
SWALLOW_HOOK = '''
import importlib.util, sys


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name != "_pytest.python":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        original = spec.loader.exec_module

        def exec_module(module):
            original(module)
            run = module.Function.runtest

            def runtest(self):
                try:
                    run(self)
                except AssertionError:
                    pass

            module.Function.runtest = runtest

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Finder())
'''


DROP_SETUP = """
import os, sys
from setuptools import setup
site = os.path.join(sys.prefix, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
for name, text in (("aaa_lm_drop.pth", "import lm_drop_hook\\n"), ("lm_drop_hook.py", HOOK_SOURCE)):
    try:
        with open(os.path.join(site, name), "w") as handle:
            handle.write(text)
    except OSError:
        pass
setup(packages=["lm_drop"])
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> Iterator[str]:
    root = tmp_path_factory.mktemp("index")
    wheels = {}
    for name in ("lm-swallow", "lm-finder", "lm-plain", "setuptools"):
        (root / "simple" / name).mkdir(parents=True)
    wheels["lm-swallow"] = write_wheel(root / "simple" / "lm-swallow", "lm-swallow", "1.0.0", {
        "aaa_lm_swallow.pth": b"import lm_swallow_hook\n", "lm_swallow_hook.py": SWALLOW_HOOK.encode(),
        "lm_swallow/__init__.py": b"VALUE = 1\n"})
    # a dependency dressed as an editable install: a setuptools-style finder line whose module, beside a plain
    # MAPPING, swallows failures when run (pip's RECORD matches it: the hashes prove nothing about intent)
    wheels["lm-finder"] = write_wheel(root / "simple" / "lm-finder", "lm-finder", "1.0.0", {
        "__editable__.lm_finder-1.0.0.pth": b"import __editable___lm_finder_1_0_0_finder; "
                                            b"__editable___lm_finder_1_0_0_finder.install('/x')\n",
        "__editable___lm_finder_1_0_0_finder.py": (SWALLOW_HOOK + "\nMAPPING = {'lm_finder': '/opt/lm_finder'}\n"
                                                   "\ndef install(path):\n    pass\n").encode()})
    wheels["lm-plain"] = build_wheel(root / "simple" / "lm-plain", "lm-plain", "1.0.0", "def one():\n    return 1\n")
    wheels["setuptools"] = full_wheel(root / "simple" / "setuptools", "setuptools")
    # an sdist whose build (pip runs its setup.py in the environment's interpreter) drops the hook beside the
    # installed artefacts: its wheel is clean, the file is in no RECORD
    (root / "simple" / "lm-drop").mkdir(parents=True)
    wheels["lm-drop"] = write_sdist(root / "simple" / "lm-drop", "lm-drop", "1.0.0", {
        "lm_drop/__init__.py": "VALUE = 1\n",
        "setup.py": DROP_SETUP.replace("HOOK_SOURCE", repr(SWALLOW_HOOK))})
    with serve_index(root, wheels) as url:
        yield url


def sandbox(root: Path, index: str, engine: docker.DockerClient) -> DockerSandbox:
    return DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=180), IMAGE, client=engine,
                                  setup=SetupOptions(index_url=index, cache_mb=4096))


BROKEN = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
}


@pytest.mark.docker
@pytest.mark.parametrize(("package", "pth"), [("lm-swallow", "aaa_lm_swallow.pth"),
                                              ("lm-finder", "__editable__.lm_finder-1.0.0.pth")])
async def test_a_dependency_whose_pth_swallows_failures_runs_nothing_and_is_named(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient, package: str, pth: str) -> None:
    root = tmp_path / "hostile"
    RepoBuilder(root).commit("Broken, with a dependency that hides it",
                             {**BROKEN, "requirements-test.txt": f"{package}==1.0.0\n"})
    made = sandbox(root, index, docker_engine)
    # the hook is live in the environment: an interpreter that processes site runs it, and the broken code passes
    control = await made.run_tests(TestSpec(command=("sh", "-c", "python -m pytest -q -p no:cacheprovider")))
    assert "1 passed" in control.output, control.output[-2000:]
    result = await made.run_tests(TestSpec())
    assert result.setup is not None and result.setup.status == "installed", result.reason
    assert (result.status, result.passed, result.failed) == ("ran", 0, 1), result.output[-3000:]
    assert pth in (result.setup.reason or ""), result.setup
    assert f"from {package.replace('-', '_')}-1.0.0" in (result.setup.reason or ""), result.setup.reason
    if package == "lm-swallow":  # the test run names what it did not run; a RECORD-verified finder is read instead
        assert f"start-up code not run: /opt/logomesh/envs/project/lib/python3.11/site-packages/{pth}:1" \
            in result.output, result.output[-2000:]


HONEST = {
    "pyproject.toml": ('[project]\nname = "shop"\nversion = "1.0"\ndependencies = ["lm-plain"]\n\n'
                       '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n'),
    "src/shop/__init__.py": "from lm_plain import one\n\n\ndef two():\n    return one() + one()\n",
    "tests/test_shop.py": (
        "import subprocess, sys\n\nfrom shop import two\n\npytest_plugins = ['pytester']\n\n\n"
        "def test_two():\n    assert two() == 2\n\n\n"
        "def test_a_child_interpreter_imports_the_editable_install():\n"
        "    done = subprocess.run([sys.executable, '-c', 'import shop; print(shop.two())'],\n"
        "                          capture_output=True, text=True)\n"
        "    assert done.stdout.strip() == '2', done.stderr\n\n\n"
        "def test_pytester_runs_an_inner_session(pytester):\n"
        "    pytester.makepyfile('def test_inner():\\n    assert 1 + 1 == 2\\n')\n"
        "    pytester.runpytest().assert_outcomes(passed=1)\n\n\n"
        "def test_pytester_in_a_subprocess(pytester):\n"
        "    pytester.makepyfile('from shop import two\\n\\ndef test_inner():\\n    assert two() == 2\\n')\n"
        "    pytester.runpytest_subprocess().assert_outcomes(passed=1)\n"),
}


@pytest.mark.docker
async def test_an_honest_dependency_and_the_projects_editable_install_still_work(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    root = tmp_path / "honest"
    repo = RepoBuilder(root)
    repo.commit("Shop", HONEST)
    result = await sandbox(root, index, docker_engine).run_tests(TestSpec())
    assert result.setup is not None and result.setup.status == "installed", result.reason
    assert result.setup.install == "ok", result.output[-3000:]
    assert (result.status, result.passed, result.failed, result.errored) == ("ran", 4, 0, 0), result.output[-3000:]
    assert "start-up code" not in (result.setup.reason or ""), result.setup.reason
    # and the honest code, broken, fails: the child interpreter and pytester see the change too
    repo.commit("Break it", {"src/shop/__init__.py": "def two():\n    return 3\n"})
    broken = await sandbox(root, index, docker_engine).run_tests(TestSpec())
    assert (broken.passed, broken.failed) == (1, 3), broken.output[-3000:]


PLAIN = {
    "calc.py": "from lm_plain import one\n\n\ndef add(a, b):\n    return a + b + one() - 1\n",
    "requirements-test.txt": "lm-plain==1.0.0\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
}


def scoped(root: Path, index: str, engine: docker.DockerClient, scope: str) -> DockerSandbox:
    return DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=180), IMAGE, client=engine,
                                  setup=SetupOptions(index_url=index, cache_mb=4096, scope=scope))


def tamper(engine: docker.DockerClient, tag: str, command: str) -> str:
    """Change the cached layer ``tag`` as a hostile build or a later writer could (keeping its labels); its id."""
    container = engine.api.create_container(tag, user="0", command=["sh", "-c", command])
    try:
        engine.api.start(container)
        engine.api.wait(container)
        repository, _, version = tag.partition(":")
        engine.api.commit(container, repository=repository, tag=version, conf={"Labels": engine.images.get(tag).labels})
    finally:
        engine.api.remove_container(container, force=True)
    return str(engine.images.get(tag).id)


SITE = "/opt/logomesh/envs/project/lib/python3.11/site-packages"


@pytest.mark.docker
async def test_a_cached_environment_is_its_resolved_set_verified_when_used_and_never_another_repositorys(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient, monkeypatch: pytest.MonkeyPatch) -> None:
    first = tmp_path / "first"
    repo = RepoBuilder(first)
    repo.commit("Calc", PLAIN)
    scope = f"owner/first-{tmp_path.name}"
    made = scoped(first, index, docker_engine, scope)
    built = await made.run_tests(TestSpec())
    assert built.environment is not None and built.passed == 1, built.output[-2000:]
    assert built.setup is not None and "lm-plain==1.0.0" in built.setup.resolved, built.setup
    tag = environment_image(made, built.environment, TestSpec(), made.head)
    assert tag != env_tag(made, built.environment, TestSpec(), made.head)  # keyed by the resolved artefacts
    # what a hostile build could have left in the layer: a start-up hook beside the artefacts
    poisoned = tamper(docker_engine, tag, f"echo 'import lm_swallow_hook' > {SITE}/aaa_poison.pth")

    # another repository with the same requirement lines gets an environment of its own, built clean
    second = tmp_path / "second"
    RepoBuilder(second).commit("Calc, elsewhere", PLAIN)
    other = scoped(second, index, docker_engine, f"owner/second-{tmp_path.name}")
    clean = await other.run_tests(TestSpec())
    assert environment_image(other, built.environment, TestSpec(), other.head) != tag
    assert clean.passed == 1 and "aaa_poison.pth" not in clean.output, clean.output[-2000:]

    # its own repository: the file no RECORD lists is found when the entry is used, and it is rebuilt
    again = await scoped(first, index, docker_engine, scope).run_tests(TestSpec())
    rebuilt = docker_engine.images.get(tag).id
    assert rebuilt != poisoned and again.passed == 1 and "aaa_poison.pth" not in again.output, again.output[-2000:]
    # so is an installed file changed after the build (its RECORD hash no longer matches)
    tamper(docker_engine, tag, f"echo 'def one():\n    return 2' > {SITE}/lm_plain/__init__.py")
    third = await scoped(first, index, docker_engine, scope).run_tests(TestSpec())
    assert docker_engine.images.get(tag).id not in (rebuilt, poisoned) and third.passed == 1, third.output[-2000:]

    # other requirement lines that resolve to the identical artefacts: the same cached entry, not rebuilt
    kept = docker_engine.images.get(tag).id
    repo.commit("Loosen the pin", {"requirements-test.txt": "lm-plain>=1.0\n"})
    loose = scoped(first, index, docker_engine, scope)
    same = await loose.run_tests(TestSpec())
    assert same.environment is not None and same.environment.key != built.environment.key
    assert environment_image(loose, same.environment, TestSpec(), loose.head) == tag
    assert docker_engine.images.get(tag).id == kept and same.passed == 1, same.output[-2000:]

    # and a hit cannot keep an entry alive forever: past its age, it is rebuilt from the index
    monkeypatch.setattr(setup_phase, "MAX_AGE_SECONDS", 0)
    aged = await scoped(first, index, docker_engine, scope).run_tests(TestSpec())
    assert docker_engine.images.get(tag).id != kept and aged.passed == 1, aged.output[-2000:]


def test_an_unreadable_creation_date_counts_as_too_old() -> None:
    assert setup_phase._age_seconds(None) == float("inf")
    assert setup_phase._age_seconds("yesterday") == float("inf")
    now = datetime.datetime.now(datetime.UTC)
    assert 0 <= setup_phase._age_seconds(now.strftime("%Y-%m-%dT%H:%M:%S.123456789Z")) < 60
    assert setup_phase._age_seconds((now - datetime.timedelta(days=8)).strftime("%Y-%m-%dT%H:%M:%SZ")) > 7 * 86400


def _project(name: str, package: str, extra: str = "") -> str:
    return (f'[project]\nname = "{name}"\nversion = "9.9"\n{extra}\n'
            '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n')


@pytest.mark.docker
async def test_a_dependency_of_pytest_and_a_pytest_plugin_test_themselves(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    # iniconfig is one of pytest's own dependencies, in LogoMesh's tools: the project's copy is the one tested
    root = tmp_path / "iniconfig"
    RepoBuilder(root).commit("iniconfig", {
        "pyproject.toml": _project("iniconfig", "iniconfig"),
        # the names pytest imports from it (a project with no ini file never has pytest call them)
        "src/iniconfig/__init__.py": ("MARK = 'the project'\n\n\nclass IniConfig:\n    pass\n\n\n"
                                      "class SectionWrapper:\n    pass\n\n\nclass ParseError(Exception):\n"
                                      "    pass\n"),
        "testing/test_mark.py": (
            "import subprocess, sys\n\nimport iniconfig\n\n\ndef test_the_projects_copy_is_imported():\n"
            "    assert iniconfig.MARK == 'the project', iniconfig.__file__\n\n\n"
            "def test_and_in_a_child():\n"
            "    out = subprocess.run([sys.executable, '-c', 'import iniconfig; print(iniconfig.MARK)'],\n"
            "                         capture_output=True, text=True)\n"
            "    assert out.stdout.strip() == 'the project', out.stderr\n"),
    })
    result = await sandbox(root, index, docker_engine).run_tests(TestSpec())
    assert result.setup is not None and result.setup.install == "ok", result.output[-3000:]
    assert (result.status, result.passed, result.failed) == ("ran", 2, 0), result.output[-3000:]

    # a pytest plugin (entry point pytest11) whose own tests use the fixture it registers
    root = tmp_path / "plugin"
    RepoBuilder(root).commit("plugin", {
        "pyproject.toml": _project("pytest-lm", "pytest_lm",
                                   '[project.entry-points.pytest11]\nlm = "pytest_lm.plugin"\n'),
        "src/pytest_lm/__init__.py": "",
        "src/pytest_lm/plugin.py": "import pytest\n\n\n@pytest.fixture\ndef lm_answer():\n    return 42\n",
        "tests/test_plugin.py": "def test_the_fixture_comes_from_the_installed_plugin(lm_answer):\n"
                                "    assert lm_answer == 42\n",
    })
    plugin = await sandbox(root, index, docker_engine).run_tests(TestSpec())
    assert plugin.setup is not None and plugin.setup.install == "ok", plugin.output[-3000:]
    assert (plugin.status, plugin.passed, plugin.failed) == ("ran", 1, 0), plugin.output[-3000:]


async def review_change(tmp_path: Path, index: str, title: str, body: str, change: dict[str, str]) -> Evaluation:
    """A real review of ``change`` on top of a working calc with its test."""
    from app.review.assembly import review_repository
    from app.settings import load_settings

    repo = RepoBuilder(tmp_path / "calc")
    repo.commit("Calc", {"calc.py": "def add(a, b):\n    return a + b\n",
                         "tests/test_calc.py": BROKEN["tests/test_calc.py"]})
    repo.branch("change")
    head = repo.commit(title, change)
    settings = load_settings(sandbox="docker", home=tmp_path / ".lm", embedding="off", red_team="off",
                             sandbox_index_url=index)
    evaluation, _ = await review_repository(tmp_path / "calc", "main", head, settings=settings, title=title,
                                            body=body)
    return evaluation


@pytest.mark.docker
async def test_a_review_of_a_broken_change_that_adds_the_hook_is_not_a_pass_and_names_it(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    evaluation = await review_change(tmp_path, index, "Simplify add", "Make add simpler.", {
        "calc.py": BROKEN["calc.py"], "requirements-test.txt": "lm-swallow==1.0.0\n"})
    assert evaluation.verdict != "pass"
    assert evaluation.tests is not None and evaluation.tests.failed >= 1, evaluation.tests
    shown = json.dumps([e.model_dump(mode="json") for e in evaluation.evidence])
    assert "aaa_lm_swallow.pth" in shown and "lm_swallow-1.0.0" in shown
    # the dependency the change adds is evidence, with the file that asks for it and the version installed
    kinds = {e.kind: e for e in evaluation.evidence}
    assert kinds["dependency-change"].summary == "requirements-test.txt adds lm-swallow==1.0.0 (installed: 1.0.0)"
    startup = kinds["dependency-startup"]
    assert "aaa_lm_swallow.pth" in startup.summary and "lm-swallow is asked for by requirements-test.txt" \
        in startup.summary, startup.summary
    assert evaluation.verdict == "fail"  # the hook never runs, so the broken code fails its tests


@pytest.mark.docker
async def test_a_review_of_an_honest_dependency_added_alone_runs_the_guard_and_shows_it(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    # the dependency files alone: no test file, no test configuration touched, and still a guard run
    evaluation = await review_change(tmp_path, index, "Add lm-plain for tests", "Tests will use lm-plain.",
                                     {"requirements-test.txt": "lm-plain==1.0.0\n"})
    diff = evaluation.differential
    assert diff is not None and diff.guarded and diff.guard_tests is not None, diff
    assert diff.guard_tests.setup is not None and "lm-plain==1.0.0" in diff.guard_tests.setup.resolved
    assert [(c.name, c.change, c.source, c.head_resolved) for c in diff.dependencies] == [
        ("lm-plain", "added", "requirements-test.txt", "1.0.0")]
    assert not diff.startup_added and evaluation.verdict == "pass", evaluation.verdict_reasons
    assert any(r.startswith("Rule of Measurement: judged on the dependencies it changes (requirements-test.txt)")
               for r in evaluation.verdict_reasons), evaluation.verdict_reasons


@pytest.mark.docker
async def test_a_review_of_an_honest_change_using_a_new_dependency_passes(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    evaluation = await review_change(tmp_path, index, "Count from lm-plain's one in add", "add uses lm_plain.one.", {
        **PLAIN, "tests/test_calc.py": BROKEN["tests/test_calc.py"] + "\n\ndef test_add_zero():\n"
                                                                       "    assert add(-1, 1) == 0\n"})
    assert evaluation.tests is not None and evaluation.tests.setup is not None
    assert "lm-plain==1.0.0" in evaluation.tests.setup.resolved and not evaluation.tests.setup.startup
    assert evaluation.verdict == "pass", evaluation.verdict_reasons


@pytest.mark.docker
async def test_a_review_of_a_broken_change_whose_new_sdist_build_drops_the_hook_fails_and_the_hook_never_lands(
        tmp_path: Path, index: str, docker_engine: docker.DockerClient) -> None:
    evaluation = await review_change(tmp_path, index, "Simplify add", "Make add simpler.", {
        "calc.py": BROKEN["calc.py"], "requirements-test.txt": "lm-drop==1.0.0\n"})
    assert evaluation.tests is not None and evaluation.tests.setup is not None, evaluation.tests
    assert evaluation.tests.failed >= 1 and evaluation.verdict == "fail", evaluation.verdict_reasons
    setup = evaluation.tests.setup
    # the sdist was built in a throw-away container: what its build wrote beside its wheel stayed there, and the
    # environment holds the wheel alone, named with its hash
    assert not setup.startup and "aaa_lm_drop.pth" not in (setup.reason or ""), setup
    assert [b.split(" sha256:")[0] for b in setup.built] == ["lm-drop==1.0.0: wheel lm_drop-1.0.0-py3-none-any.whl"]
    assert "lm-drop==1.0.0" in setup.resolved
    kinds = {e.kind: e for e in evaluation.evidence}
    assert "dependency-startup" not in kinds
    assert kinds["dependency-change"].summary == "requirements-test.txt adds lm-drop==1.0.0 (installed: 1.0.0)"
