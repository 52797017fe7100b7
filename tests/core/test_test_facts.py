"""The pure parts of T: the differential classification, T v2, mutant generation, harness evidence."""

from __future__ import annotations

import ast

import pytest

from checks import cis
from checks.detectives.harness import inspect
from checks.differential import classify
from checks.models import Case, ChangedFile, MutantResult, TestCaseResult, TestDiff, TestRunResult
from checks.mutation import mutants_for
from rubric import load_rubric

RUBRIC = load_rubric()


def run(*cases: tuple[str, str], errors: tuple[str, ...] = (), status: str = "ran",
        rewritten: tuple[str, ...] = ()) -> TestRunResult:
    tests = tuple(TestCaseResult(name=n, outcome=o, rewritten=n in rewritten) for n, o in cases)
    return TestRunResult(status=status, tests=tests, passed=sum(o == "passed" for _, o in cases),
                         collection_errors=tuple(TestCaseResult(name=e, outcome="error", message="ImportError")
                                                 for e in errors))


BASE = run(("t.py::a", "passed"), ("t.py::b", "passed"), ("t.py::c", "failed"), ("t.py::d", "passed"))


def test_classify_keys_every_test_by_node_id() -> None:
    head = run(("t.py::a", "passed"), ("t.py::b", "failed"), ("t.py::c", "failed"), ("t.py::e", "passed"),
               ("t.py::f", "failed"))
    # the change touched no test: its head run is the base's oracle, and a base test gone from it regressed
    diff = classify(BASE, head, None, changed_tests=())
    assert [c.name for c in diff.regressed] == ["t.py::b", "t.py::d"]
    assert diff.regressed[1].head == "missing"
    assert diff.pre_existing == ("t.py::c",)
    # the change deleted t.py::d, which still passes under the base's test files: removed, not regressed
    guard = run(("t.py::a", "passed"), ("t.py::b", "failed"), ("t.py::c", "failed"), ("t.py::d", "passed"))
    diff = classify(BASE, head, guard, changed_tests={"t.py"})
    assert [c.name for c in diff.regressed] == ["t.py::b"]
    assert diff.removed == ("t.py::d",)
    assert diff.new_passing == ("t.py::e",)
    assert [c.name for c in diff.new_failing] == ["t.py::f"]
    assert diff.unchanged_passing == 1


def test_the_base_oracle_catches_a_harness_that_forces_passes() -> None:
    forged_head = run(("t.py::a", "passed"), ("t.py::b", "passed"), ("t.py::c", "passed"), ("t.py::d", "passed"))
    guard = run(("t.py::a", "passed"), ("t.py::b", "failed"), ("t.py::c", "failed"), ("t.py::d", "passed"))
    diff = classify(BASE, forged_head, guard, changed_tests={"conftest.py"})
    assert [c.name for c in diff.tampered] == ["t.py::b"]
    assert [c.name for c in diff.regressed] == ["t.py::b"] and not diff.fixed
    # the same outcomes with the test file itself edited: the change rewrote an expectation
    honest = classify(BASE, forged_head, guard, changed_tests={"t.py"})
    assert honest.expectation_changed == ("t.py::b",) and not honest.tampered


def test_a_rewritten_outcome_is_tampering_and_a_deleted_test_still_counts_under_the_base_oracle() -> None:
    head = run(("t.py::a", "passed"), ("t.py::b", "passed"), rewritten=("t.py::b",))
    diff = classify(BASE, head, run(("t.py::a", "passed"), ("t.py::b", "failed"), ("t.py::d", "failed")),
                    changed_tests={"t.py"})
    assert {c.name for c in diff.tampered} == {"t.py::b"}
    assert [c.name for c in diff.regressed] == ["t.py::d"]  # deleted at head, failing under the base's file


def test_a_base_that_cannot_import_its_tests_is_an_environment_error() -> None:
    base = run(errors=("tests/test_x.py",), status="env_error")
    diff = classify(base, run(("t.py::a", "failed")), None, changed_tests=())
    assert diff.status == "env_error" and not diff.regressed


@pytest.mark.parametrize(("diff", "expected"), [
    (TestDiff(status="measured", unchanged_passing=9), 0.85),
    (TestDiff(status="measured", unchanged_passing=9, mutants=(
        MutantResult(id="1", path="p.py", line=1, description="d", status="survived"),)), 0.85 - 0.65 * 0.3),
    (TestDiff(status="measured"), 0.2),  # no tests: never above an all-failing suite
])
def test_t_v2(diff: TestDiff, expected: float) -> None:
    assert cis.testing_from_diff(RUBRIC, diff, None) == pytest.approx(expected)


def test_t_v2_regression_and_no_tests_never_beat_failing_tests() -> None:
    failing = TestDiff(status="measured", new_failing=tuple(classify(BASE, run(("t.py::z", "failed")), None,
                                                                     ()).new_failing))
    assert cis.testing_from_diff(RUBRIC, TestDiff(status="measured"), None) <= cis.testing_from_diff(
        RUBRIC, failing, None)
    regressed = classify(BASE, run(("t.py::a", "failed")), None, ())
    assert cis.testing_from_diff(RUBRIC, regressed, None) == RUBRIC.testing.regressed


SOURCE = '''def price(total, discount):
    """Docstrings are never mutated."""
    if total > 100 and discount:
        return total - total * discount / 100
    log(total)
    return total
'''


def case_with(source: str, added: tuple[int, ...], path: str = "shop/price.py") -> Case:
    return Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=(
        ChangedFile(path=path, status="modified", added_lines=added, content=source),))


def test_mutants_are_deterministic_valid_python_on_added_lines_only() -> None:
    first = mutants_for(case_with(SOURCE, (3, 4, 5)), 50)
    assert first == mutants_for(case_with(SOURCE, (3, 4, 5)), 50)
    assert {m.line for m in first} == {3, 4, 5}
    described = {(m.line, m.description) for m in first}
    assert (3, "changing `>` to `>=`") in described
    assert (3, "changing `and` to `or`") in described
    assert (3, "negating the condition") in described
    assert (4, "returning `None` instead") in described
    assert (4, "changing `-` to `+`") in described
    assert (5, "deleting the statement") in described
    for mutant in first:
        ast.parse(mutant.source)
        assert mutant.source != ast.unparse(ast.parse(SOURCE))
    assert len({m.id for m in first}) == len(first)


def test_the_mutant_budget_spreads_over_lines_and_skips_tests() -> None:
    picked = mutants_for(case_with(SOURCE, (3, 4, 5)), 3)
    assert sorted(m.line for m in picked) == [3, 4, 5]
    assert mutants_for(case_with(SOURCE, (3, 4), path="tests/test_price.py"), 10) == ()


def _harness_case(*files: ChangedFile) -> Case:
    return Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=files)


def test_harness_changes_are_located_evidence() -> None:
    conftest = ("import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
                "def pytest_runtest_makereport(item, call):\n    yield\n")
    compat = "def pytest_pyfunc_call(pyfuncitem):\n    return True\n"
    config = "[tool.pytest.ini_options]\naddopts = \"-p pkg._compat -k 'not slow'\"\n"
    skip = "import pytest\n\n@pytest.mark.skip\ndef test_a():\n    assert 0\n"
    evidence = inspect(_harness_case(
        ChangedFile(path="conftest.py", status="added", added_lines=(1, 2, 3, 4, 5), content=conftest),
        ChangedFile(path="pkg/_compat.py", status="added", added_lines=(1, 2), content=compat),
        ChangedFile(path="pyproject.toml", status="modified", added_lines=(2,), content=config),
        ChangedFile(path="tests/test_a.py", status="modified", added_lines=(3,), content=skip),
        ChangedFile(path="tests/test_gone.py", status="removed"),
        ChangedFile(path="subprocess.py", status="added", added_lines=(1,), content="x = 1\n"),
        ChangedFile(path="sitecustomize.py", status="added", added_lines=(1,), content="x = 1\n"),
    ))
    found = {(e.facts["mechanism"], str(e.location), e.severity) for e in evidence}
    assert ("hook", "conftest.py:4", "high") in found
    assert ("hook", "pkg/_compat.py:1", "high") in found
    assert ("config", "pyproject.toml:2", "high") in found
    assert ("skip", "tests/test_a.py:3", "medium") in found
    assert ("deleted-test", "tests/test_gone.py", "medium") in found
    assert ("stdlib-shadow", "subprocess.py", "high") in found
    assert ("startup-hook", "sitecustomize.py", "high") in found
    assert ("conftest", "conftest.py", "medium") in found


def test_an_ordinary_change_has_no_harness_evidence() -> None:
    code = "def add(a, b):\n    return a + b\n"
    test = "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    assert inspect(_harness_case(
        ChangedFile(path="calc.py", status="modified", added_lines=(1, 2), content=code),
        ChangedFile(path="tests/test_calc.py", status="added", added_lines=(1, 2, 3, 4), content=test))) == []


def test_a_rewritten_parametrised_expectation_is_not_a_regression_but_a_deleted_test_is() -> None:
    base = run(("t.py::test_x[1-one]", "passed"), ("t.py::test_y", "passed"))
    guard = run(("t.py::test_x[1-one]", "failed"), ("t.py::test_y", "failed"))
    # the change updated the expected value, which is part of the id; it deleted test_y outright
    head = run(("t.py::test_x[1-uno]", "passed"))
    diff = classify(base, head, guard, changed_tests={"t.py"})
    assert diff.expectation_changed == ("t.py::test_x[1-one]",)
    assert [c.name for c in diff.regressed] == ["t.py::test_y"]
