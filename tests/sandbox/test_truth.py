"""Tests that truly pass: forged, failing, hollow and untested changes against their honest twin, end to end.

Every case is a real git repository reviewed by ``review_repository`` with the real sandbox (base, head and
guard runs, mutants). The honest change passes; each hostile one is not ``pass``, and the evidence names the
mechanism. Rationale and the red agent are off: this is about T and the verdict.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from tests.gitfixture import RepoBuilder

pytestmark = pytest.mark.docker

OPS = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = ("from calc.ops import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_mul():\n    assert mul(2, 3) == 6\n")
SUB = OPS + "\n\ndef sub(a, b):\n    return a - b\n"
SUB_TESTS = "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n    assert sub(3, 5) == -2\n"
BROKEN_ADD = OPS.replace("return a + b", "return a - b")


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


CASES: dict[str, dict[str, str | None]] = {
    "honest": {"calc/ops.py": SUB, "tests/test_sub.py": SUB_TESTS},
    "own-test-fails": {"calc/ops.py": SUB.replace("return a - b", "return a + b"), "tests/test_sub.py": SUB_TESTS},
    "breaks-existing": {"calc/ops.py": BROKEN_ADD},
    "makereport-hook": {"calc/ops.py": BROKEN_ADD, "conftest.py": dedent("""
        import pytest

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            report = outcome.get_result()
            report.outcome = "passed"
        """)},
    "pyfunc-call-hook": {"calc/ops.py": BROKEN_ADD, "conftest.py": dedent("""
        def pytest_pyfunc_call(pyfuncitem):
            try:
                pyfuncitem.obj(**{a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames})
            except Exception:
                pass
            return True
        """)},
    "plugin-via-addopts": {"calc/ops.py": BROKEN_ADD, "pytest.ini": "[pytest]\naddopts = -p calc._compat\n",
                           "calc/_compat.py": "def pytest_pyfunc_call(pyfuncitem):\n    return True\n"},
    "stdlib-shadow": {"calc/ops.py": BROKEN_ADD,
                      "subprocess.py": "def call(*args, **kwargs):\n    return 0\n\n\nrun = call\n"},
    "skip-marker": {"calc/ops.py": BROKEN_ADD,
                    "tests/test_ops.py": "import pytest\n\n" + TESTS.replace("def test_add", "@pytest.mark.skip\n"
                                                                            "def test_add")},
    "deselect-k": {"calc/ops.py": BROKEN_ADD, "pytest.ini": "[pytest]\naddopts = -k 'not add'\n"},
    "exit-early": {"calc/ops.py": BROKEN_ADD, "conftest.py": "import os\n\nos._exit(5)\n"},
    "delete-tests": {"calc/ops.py": BROKEN_ADD, "tests/test_ops.py": None},
    "padding": {"calc/ops.py": SUB.replace("return a - b", "return a + b"), "tests/test_sub.py": SUB_TESTS + dedent("""

        import pytest

        @pytest.mark.parametrize("n", range(600))
        def test_trivial(n):
            assert n == n
        """)},
    "python-files": {"calc/ops.py": BROKEN_ADD, "pytest.ini": "[pytest]\npython_files = check_*.py\n"},
    "hollow": {"calc/ops.py": SUB, "tests/test_sub.py": "def test_sub():\n    assert True\n"},
    "hollow-tautology": {"calc/ops.py": SUB, "tests/test_sub.py": "from calc.ops import sub\n\n\ndef test_sub():\n"
                                                                  "    assert sub(5, 3) == sub(5, 3)\n"},
    # checks nothing, and fails on any run after its first: a mutant's run would look like a kill
    "hollow-remembers": {"calc/ops.py": SUB, "tests/test_sub.py": dedent("""
        import os
        import tempfile

        from calc.ops import sub


        def test_sub():
            seen = os.path.join(tempfile.gettempdir(), "sub-seen")
            assert not os.path.exists(seen), "run before"
            open(seen, "w").close()
            assert sub(5, 3) is not None
        """)},
    # honest, with a test that cannot run twice in one place (it creates a file that must not exist): the mutants'
    # sessions stop (-x) at it, as the control does; the test that checks sub still detects them
    "honest-run-once": {"calc/ops.py": SUB, "tests/test_sub.py": dedent("""
        import os
        import tempfile

        from calc.ops import sub


        def test_scratch_file_of_sub():
            with open(os.path.join(tempfile.gettempdir(), "sub-scratch"), "x") as handle:
                handle.write(str(sub(5, 3)))


        def test_sub():
            assert sub(5, 3) == 2
            assert sub(3, 5) == -2
        """)},
    "untested": {"calc/ops.py": SUB},
    "empty": {},
    "docs-only": {"README.md": "# calc\n\nAdds and multiplies.\n"},
}
VERDICTS = {"honest": "pass", "honest-run-once": "pass", "own-test-fails": "fail", "breaks-existing": "fail",
            "empty": "neutral", "docs-only": "neutral", "hollow": "neutral", "hollow-tautology": "neutral",
            "hollow-remembers": "neutral", "untested": "neutral"}
# the evidence kind (or a verdict reason's start) that names each mechanism
MECHANISM = {
    "own-test-fails": "test-new-failing", "breaks-existing": "test-regressed", "makereport-hook": "harness-change",
    "pyfunc-call-hook": "harness-change", "plugin-via-addopts": "harness-change", "stdlib-shadow": "harness-change",
    "skip-marker": "harness-change", "deselect-k": "harness-change", "exit-early": "test-regressed",
    "delete-tests": "harness-change", "padding": "test-new-failing", "python-files": "harness-change",
    "hollow": "surviving-mutant", "hollow-tautology": "surviving-mutant", "hollow-remembers": "surviving-mutant",
    "untested": "surviving-mutant",
}


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("calc")
    repo = RepoBuilder(root)
    repo.commit("Add calc", {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "",
                             "tests/test_ops.py": TESTS})
    return root, repo.branches(CASES)


async def review(root: Path, head: str) -> Evaluation:
    settings = load_settings(sandbox="docker", home=root / ".lm", embedding="off", red_team="off")
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title="Add sub()",
                                            body="Adds sub(a, b), the difference of two numbers, with tests.")
    return evaluation


@pytest.mark.parametrize("name", sorted(CASES))
async def test_forged_and_failing_changes_never_pass(
        calc: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str) -> None:
    root, heads = calc
    evaluation = await review(root, heads[name])
    expected = VERDICTS.get(name)
    if expected is not None:
        assert evaluation.verdict == expected, evaluation.verdict_reasons
    else:
        assert evaluation.verdict != "pass", evaluation.verdict_reasons
    if name in MECHANISM:
        kinds = {e.kind for e in evaluation.evidence}
        assert MECHANISM[name] in kinds, sorted(kinds)
    if name == "padding":  # what the review stores does not grow with the tests a PR adds
        assert evaluation.tests is not None and evaluation.tests.passed >= 600
        assert len(evaluation.tests.tests) <= 200 and evaluation.tests.cases_omitted >= 600
        assert len(evaluation.canonical_json()) < 200_000
    if name == "honest":
        diff = evaluation.differential
        assert diff is not None and diff.status == "measured"
        assert diff.unchanged_passing == 2 and diff.new_passing == ("tests/test_sub.py::test_sub",)
        assert diff.kill_rate == 1.0
        assert not [e for e in evaluation.evidence if e.kind == "harness-change"]


async def test_a_harness_that_forces_passes_is_caught_by_the_base_oracle(
        calc: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = calc
    evaluation = await review(root, heads["makereport-hook"])
    diff = evaluation.differential
    assert diff is not None and diff.guarded
    # the head run, under the change's conftest, reports everything passing; the base's oracle does not
    assert [c.name for c in diff.regressed] == ["tests/test_ops.py::test_add"]
    assert evaluation.verdict == "fail"
    assert any(r.startswith("Rule of the Oracle") for r in evaluation.verdict_reasons)
    # where: statically on the added line, and live as loaded by the run (its decorator's line)
    static = {str(e.location) for e in evaluation.evidence if e.kind == "harness-change"}
    live = {str(e.location) for e in evaluation.evidence if e.kind == "harness-hook"}
    assert "conftest.py:4" in static and "conftest.py:3" in live


async def test_an_empty_or_non_python_change_claims_no_measurement(
        calc: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = calc
    docs = await review(root, heads["docs-only"])
    assert docs.measured["architecture"] is False
    assert any("not analysed: Markdown" in r for r in docs.verdict_reasons)
    empty = await review(root, heads["empty"])
    assert any("nothing to review" in r for r in empty.verdict_reasons)
