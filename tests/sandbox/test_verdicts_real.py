"""Failures blamed on the change only when they are its own, end to end in the real sandbox.

Each case is a real git repository reviewed by ``review_repository`` (base, head, guard runs and the re-runs of
failing tests). Honest cases are not failed; hostile twins are never ``pass``.
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from tests.gitfixture import RepoBuilder

pytestmark = pytest.mark.docker

OPS = "def add(a, b):\n    return a + b\n\n\nSEEN = []\n"
TESTS = ("import pytest\n\nfrom calc.ops import SEEN, add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_nothing_seen():\n    assert SEEN == []\n\n\n"
         "@pytest.mark.xfail(reason='negative numbers')\ndef test_neg():\n    assert add(-2, -3) == -4\n")
# the change adds a test that leaves state behind: an existing test fails after it, never alone (a flaky test)
POLLUTER = "from calc.ops import SEEN\n\n\ndef test_a_first():\n    SEEN.append(1)\n"
# a test of the change that fails in the whole run and passes alone: a re-run is something a test can detect
RERUN_FORGERY = "def test_sub(request):\n    assert len(request.session.items) == 1\n"

GITMODULES = '[submodule "fastlib"]\n\tpath = fastlib\n\turl = https://example.invalid/fastlib.git\n'

CASES: dict[str, dict[str, str | None]] = {
    # the xfail mark removed without the fix: the test fails at head
    "xfail-removed": {"tests/test_ops.py": TESTS.replace("@pytest.mark.xfail(reason='negative numbers')\n", "")},
    # the honest twin: the mark removed with a test that holds
    "xfail-fixed": {"tests/test_ops.py": TESTS.replace(
        "@pytest.mark.xfail(reason='negative numbers')\ndef test_neg():\n    assert add(-2, -3) == -4\n",
        "def test_neg():\n    assert add(-2, -3) == -5\n")},
    "order-dependent": {"tests/test_a_first.py": POLLUTER},
    "rerun-forgery": {"tests/test_sub.py": RERUN_FORGERY},
    "submodule": {"tests/test_fast.py": "import fastlib\n\n\ndef test_fast():\n    assert fastlib.VERSION\n"},
    "missing-program": {"tests/test_pager.py": "import subprocess\n\n\ndef test_pager():\n"
                                               "    subprocess.run(['logomesh-no-such-pager', '-V'], check=True)\n"},
}


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("calc")
    repo = RepoBuilder(root)
    repo.commit("Add calc", {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "",
                             "tests/test_ops.py": TESTS, ".gitmodules": GITMODULES})
    return root, repo.branches(CASES)


async def review(root: Path, head: str, base: str = "main") -> Evaluation:
    settings = load_settings(sandbox="docker", home=root / ".lm", embedding="off", red_team="off")
    evaluation, _ = await review_repository(root, base, head, settings=settings, title="Change calc",
                                            body="Changes calc and its tests.")
    return evaluation


async def test_removing_an_xfail_mark_without_the_fix_fails_and_with_the_fix_passes(
        calc: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = calc
    removed = await review(root, heads["xfail-removed"])
    diff = removed.differential
    assert diff is not None and diff.status == "measured"
    assert [(c.name, c.base) for c in diff.new_failing] == [("tests/test_ops.py::test_neg", "xfailed")]
    assert removed.verdict == "fail", removed.verdict_reasons
    fixed = await review(root, heads["xfail-fixed"])
    assert fixed.differential is not None and not fixed.differential.new_failing
    assert fixed.verdict != "fail", fixed.verdict_reasons


async def test_a_failure_its_re_runs_do_not_reproduce_is_flaky_never_a_pass(
        calc: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = calc
    honest = await review(root, heads["order-dependent"])
    diff = honest.differential
    assert diff is not None and not diff.new_failing and not diff.regressed
    assert [c.name for c in diff.flaky] == ["tests/test_ops.py::test_nothing_seen"]
    assert "re-run" in (diff.flaky[0].cause or "")
    assert honest.verdict == "neutral" and any(r.startswith("Rule of Reproduction") for r in honest.verdict_reasons)
    assert any(e.kind == "test-flaky" for e in honest.evidence)
    # hostile twin: a test that fails in the whole run and passes when run alone is not charged, never a pass
    forged = await review(root, heads["rerun-forgery"])
    assert forged.differential is not None and [c.name for c in forged.differential.flaky] == [
        "tests/test_sub.py::test_sub"]
    assert forged.verdict == "neutral", forged.verdict_reasons


async def test_a_missing_program_is_the_environment_s_failure_named(
        calc: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = calc
    evaluation = await review(root, heads["missing-program"])
    diff = evaluation.differential
    assert diff is not None and not diff.new_failing
    assert [c.name for c in diff.environmental] == ["tests/test_pager.py::test_pager"]
    assert "logomesh-no-such-pager" in (diff.environmental[0].cause or "")
    assert evaluation.verdict == "neutral"
    assert any("Rule of the Environment" in r and "logomesh-no-such-pager" in r for r in evaluation.verdict_reasons)


async def test_a_submodule_absent_from_the_clone_is_named_not_charged(
        calc: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = calc
    evaluation = await review(root, heads["submodule"])
    diff = evaluation.differential
    assert diff is not None and not diff.new_failing, diff
    assert [c.name for c in diff.environmental] == ["tests/test_fast.py"]
    assert "git submodule 'fastlib'" in (diff.environmental[0].cause or "")
    assert evaluation.verdict == "neutral", evaluation.verdict_reasons


async def test_a_base_that_crashes_leaves_the_head_judged_on_its_own(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    repo = RepoBuilder(tmp_path / "r")
    repo.commit("Start", {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "",
                          "tests/test_ops.py": TESTS,
                          "tests/test_zz_crash.py": "import os\n\n\ndef test_zz():\n    os._exit(3)\n"})
    repo.branch("pr")
    head = repo.commit("Remove the crashing test, break add()", {
        "tests/test_zz_crash.py": None, "calc/ops.py": OPS.replace("a + b", "a - b")})
    evaluation = await review(repo.path, head, base="main")
    diff = evaluation.differential
    assert diff is not None and diff.status != "measured"
    assert diff.base_tests is not None and "exit code 3" in (diff.base_tests.reason or "")
    assert "..x" in (diff.base_tests.reason or "")  # pytest's own last lines, not a bare sentence
    assert "tests/test_ops.py::test_add" in [c.name for c in diff.unattributed]
    assert evaluation.verdict == "neutral", evaluation.verdict_reasons
    assert any(r.startswith("Rule of the Unmeasured Base") for r in evaluation.verdict_reasons)


async def test_the_repository_s_environment_override_reaches_the_sandbox(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    repo = RepoBuilder(tmp_path / "r")
    repo.commit("Start", {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "",
                          "tests/test_ops.py": TESTS, "requirements.txt": "logomesh-no-such-distribution==9.9\n",
                          ".logomesh.yml": "test:\n  environment:\n    requirements: []\n"})
    repo.branch("pr")
    head = repo.commit("Add sub", {"calc/ops.py": OPS + "\n\ndef sub(a, b):\n    return a - b\n"})
    evaluation = await review(repo.path, head)
    tests = evaluation.tests
    # the override replaces the detected requirement (which no index has): the tests run instead of failing setup
    assert tests is not None and tests.environment is not None and tests.environment.overridden
    assert tests.environment.requirements == () and tests.status == "ran" and tests.passed == 2
    environment = next(e for e in evaluation.evidence if e.kind == "test-environment")
    assert "set in .logomesh.yml" in environment.summary
