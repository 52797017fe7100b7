"""Test verdicts that are never wrong outright: an unmeasurable base, an xfail removed, the environment's failures,
pytest 9's configuration files and ``.logomesh.yml`` ``test.environment`` reaching the sandbox."""

from __future__ import annotations

from pathlib import Path

from app.review.gitrepo import GitRepo, read_case
from checks.chief_justice import rules_of_tests
from checks.config import parse_repo_config
from checks.detectives.test_runner import diff_evidence
from checks.differential import apply_reruns, classify, environment_cause
from checks.models import (
    Brief,
    Case,
    ChangedFile,
    DeclaredRequirement,
    EnvironmentPlan,
    RedAnalysis,
    TestCaseResult,
    TestDiff,
    TestRunResult,
    TestSpec,
)
from checks.removed_names import renamed_tests
from checks.testpaths import holds_pytest_config, is_harness_path, is_test_path
from sandbox.redact import clean_test_output
from sandbox.results import MAX_TESTS, read_results
from sandbox.trees import pytest_config
from tests.gitfixture import RepoBuilder

PRODUCT = ChangedFile(path="pkg/calc.py", status="modified", added_lines=(1,), content="x = 1\n")
TEST_FILE = ChangedFile(path="tests/test_calc.py", status="modified", added_lines=(1,), content="x = 1\n")


def case(outcome: str, name: str, message: str | None = None) -> TestCaseResult:
    return TestCaseResult(name=name, outcome=outcome, message=message)


def run(*cases: TestCaseResult, status: str = "ran", reason: str | None = None) -> TestRunResult:
    return TestRunResult(status=status, tests=cases, reason=reason,
                         passed=sum(c.outcome == "passed" for c in cases),
                         failed=sum(c.outcome == "failed" for c in cases))


def verdict_of(diff: TestDiff, *files: ChangedFile, tests: TestRunResult | None = None) -> tuple[str, list[str]]:
    brief = Brief(case=Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=files or (PRODUCT,)),
                  evidence=(), tests=tests, semantic=None, red=RedAnalysis(), differential=diff,
                  components={"rationale": None, "architecture": 0.8, "testing": 0.85})
    reasons: list[str] = []
    return rules_of_tests(brief, "pass", reasons), reasons


# --- an unmeasurable base never switches the test rules off ---------------------------------------------------

CRASHED_BASE = TestRunResult(status="error", reason="pytest ended (exit code 137) before LogoMesh's collector "
                             "could report")
HEAD_254 = run(*(case("failed", f"tests/test_old.py::test_{i}", "AssertionError") for i in range(254)),
               case("passed", "tests/test_old.py::test_ok"))


def test_a_crashed_base_with_254_failing_tests_at_head_is_not_a_pass() -> None:
    diff = classify(CRASHED_BASE, HEAD_254, None, changed_tests=(), changed_paths=("pkg/calc.py",))
    assert diff.status == "not_measured" and len(diff.unattributed) == 200 and not diff.new_failing
    verdict, reasons = verdict_of(diff)
    assert verdict == "neutral"
    assert any("Rule of the Unmeasured Base" in r and "exit code 137" in r for r in reasons)


def test_with_an_unmeasurable_base_the_change_s_own_failing_test_still_fails_it() -> None:
    base = TestRunResult(status="env_error", reason="the tests could not import what they need")
    head = run(case("failed", "tests/test_calc.py::test_new", "assert 2 == 3"),
               case("passed", "tests/test_other.py::test_ok"))
    diff = classify(base, head, None, changed_tests={"tests/test_calc.py"}, changed_paths={"pkg/calc.py"})
    assert diff.status == "env_error" and [c.name for c in diff.new_failing] == ["tests/test_calc.py::test_new"]
    verdict, reasons = verdict_of(diff, PRODUCT, TEST_FILE)
    assert verdict == "fail" and "Rule of New Failures" in reasons[-1]
    # honest twin: nothing fails at head, nothing is charged or withheld
    green = classify(base, run(case("passed", "tests/test_calc.py::test_new")), None, {"tests/test_calc.py"})
    assert verdict_of(green, PRODUCT, TEST_FILE)[0] == "pass"


def test_with_an_unmeasurable_base_its_own_breakage_at_head_is_not_the_change_s() -> None:
    """pyyaml#363: the base's install leaves ``yaml`` unimportable, so every test module fails to import at base;
    the change's test module fails the same way at head. That is the base's breakage, not the change's."""
    missing = "ModuleNotFoundError: No module named 'yaml'"
    base = TestRunResult(status="ran", collection_errors=tuple(
        case("error", f"tests/lib3/test_{i}.py", missing) for i in range(12)))
    head = run(case("failed", "tests/lib3/test_constructor.py::test_new", missing),
               case("failed", "tests/lib3/test_constructor.py::test_values", "assert 2 == 3"))
    diff = classify(base, head, None, changed_tests={"tests/lib3/test_constructor.py"},
                    changed_paths={"lib3/yaml/constructor.py"})
    assert [c.name for c in diff.environmental] == ["tests/lib3/test_constructor.py::test_new"]
    # hostile twin: the change's own assertion in the same file is still its failure
    assert [c.name for c in diff.new_failing] == ["tests/lib3/test_constructor.py::test_values"]
    assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == "fail"
    # a Python 2 test module the change edits fails to compile at head as it did at base: pre-existing; one the
    # change broke (another error, or none at base) is the change's
    py2 = "exec code | ^^^^^^^^^ | SyntaxError: Missing parentheses in call to 'exec'. Did you mean exec(...)?"
    base = base.model_copy(update={"collection_errors": (*base.collection_errors,
                                                         case("error", "tests/lib/test_constructor.py", py2))})
    for message, charged in ((py2, False), ("SyntaxError: invalid syntax", True)):
        head = run(case("failed", "tests/lib3/test_constructor.py::test_new", missing)).model_copy(
            update={"collection_errors": (case("error", "tests/lib/test_constructor.py", message),)})
        diff = classify(base, head, None, changed_tests={"tests/lib/test_constructor.py"})
        assert [c.name for c in diff.new_failing] == (["tests/lib/test_constructor.py"] if charged else [])
        assert diff.pre_existing == (() if charged else ("tests/lib/test_constructor.py",))
        assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == ("fail" if charged else "neutral")


# --- every failing test at head is classified ------------------------------------------------------------------

def test_removing_an_xfail_mark_without_a_fix_is_a_new_failure() -> None:
    name = "tests/test_calc.py::test_bug"
    base = run(case("skipped", name, "xfail: bug 12"), case("passed", "tests/test_calc.py::test_ok"))
    head = run(case("failed", name, "assert 1 == 2"), case("passed", "tests/test_calc.py::test_ok"))
    guard = base  # the base's test file still marks it xfail
    diff = classify(base, head, guard, changed_tests={"tests/test_calc.py"})
    assert [(c.name, c.base, c.head) for c in diff.new_failing] == [(name, "xfailed", "failed")]
    assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == "fail"
    # the honest twin: the fix lands with the mark removed, the test passes
    fixed = classify(base, run(case("passed", name), case("passed", "tests/test_calc.py::test_ok")), guard,
                     changed_tests={"tests/test_calc.py"})
    assert not fixed.new_failing and verdict_of(fixed, PRODUCT, TEST_FILE)[0] == "pass"


def test_a_failure_is_pre_existing_only_when_it_failed_the_same_way() -> None:
    base = run(case("failed", "t.py::a", "assert x"), case("error", "t.py::b", "fixture"),
               case("skipped", "t.py::c", "needs linux"))
    head = run(case("failed", "t.py::a", "assert y"), case("failed", "t.py::b", "assert"),
               case("failed", "t.py::c", "assert"))
    diff = classify(base, head, None, changed_tests=())
    assert diff.pre_existing == ("t.py::a",)
    assert sorted(c.name for c in diff.new_failing) == ["t.py::b", "t.py::c"]
    # a test failing at base that still fails at head is never 'fixed' because the oracle passed it
    guard = run(case("passed", "t.py::a"), case("error", "t.py::b"), case("skipped", "t.py::c"))
    assert "t.py::a" not in classify(base, head, guard, changed_tests={"t.py"}).fixed


# --- the environment's failures are named, never charged, never a pass -------------------------------------------

def test_failures_caused_by_the_sandbox_are_neutral_with_the_cause_named() -> None:
    base = run(case("passed", "tests/test_cli.py::test_pager"), case("passed", "tests/test_net.py::test_fetch"))
    head = run(case("failed", "tests/test_cli.py::test_pager",
                    "FileNotFoundError: [Errno 2] No such file or directory: 'less'"),
               case("failed", "tests/test_net.py::test_fetch",
                    "socket.gaierror: [Errno -3] Temporary failure in name resolution"))
    diff = classify(base, head, None, changed_tests=(), changed_paths={"pkg/calc.py"})
    assert not diff.regressed and len(diff.environmental) == 2
    assert "'less'" in (diff.environmental[0].cause or "")
    verdict, reasons = verdict_of(diff)
    assert verdict == "neutral" and "Rule of the Environment" in reasons[-1] and "less" in reasons[-1]


LOCALE_DATA = ("/sandbox/repo/babel/localedata.py:{n}: FileNotFoundError\n"
               "FileNotFoundError: [Errno 2] No such file or directory: '/sandbox/repo/babel/locale-data/{name}.dat'")


def test_a_new_test_failing_as_many_base_tests_already_fail_is_the_environment_s() -> None:
    """babel#1318: the checkout lacks babel's generated CLDR files, so 606 tests fail at base and head alike; the
    change's two new tests fail with the same error and were charged as new failing (`fail`)."""
    base = run(*(case("failed", f"tests/test_dates.py::test_{i}", LOCALE_DATA.format(n=100 + i, name=f"l{i}"))
                 for i in range(12)), case("passed", "tests/test_pofile.py::test_write"))
    head = run(*base.tests, case("failed", "tests/test_pofile.py::test_new_plural_forms",
                                 LOCALE_DATA.format(n=7, name="de_DE")))
    diff = classify(base, head, None, changed_tests={"tests/test_pofile.py"}, changed_paths={"babel/messages.py"})
    assert not diff.new_failing and [c.name for c in diff.environmental] == ["tests/test_pofile.py::"
                                                                             "test_new_plural_forms"]
    assert "fails as 12 tests already fail at base" in (diff.environmental[0].cause or "")
    verdict, reasons = verdict_of(diff)
    assert verdict == "neutral" and "Rule of the Environment" in reasons[-1]


def test_a_new_test_failing_its_own_way_or_by_assertion_still_fails_the_change() -> None:
    """Hostile twins: a new test whose assertion fails (as base tests' assertions do), one that fails with another
    error than the base's, and one sharing an error with too few base tests are the change's."""
    base = run(*(case("failed", f"tests/test_dates.py::test_{i}", LOCALE_DATA.format(n=100 + i, name=f"l{i}"))
                 for i in range(12)),
               *(case("failed", f"tests/test_old.py::test_{i}", "tests/test_old.py:3: AssertionError\n"
                      "AssertionError: assert 1 == 2") for i in range(12)),
               *(case("failed", f"tests/test_io.py::test_{i}", "OSError: [Errno 5] Input/output error")
                 for i in range(3)))
    new = {"tests/test_pofile.py::test_asserts": "tests/test_pofile.py:9: AssertionError\nAssertionError: "
                                                  "assert 1 == 2",
           "tests/test_pofile.py::test_other_error": "KeyError: 'plural_forms'",
           "tests/test_pofile.py::test_rare_error": "OSError: [Errno 5] Input/output error"}
    head = run(*base.tests, *(case("failed", name, message) for name, message in new.items()))
    diff = classify(base, head, None, changed_tests={"tests/test_pofile.py"}, changed_paths={"babel/messages.py"})
    assert sorted(c.name for c in diff.new_failing) == sorted(new) and not diff.environmental
    assert verdict_of(diff)[0] == "fail"
    # babel#1309: a test that passed at base and now fails as 12 base tests already do (the change reaches the
    # locale data the checkout lacks) is the environment's: neutral, never pass; an assertion, or an error fewer
    # base tests share, is still the change's regression
    base = run(*base.tests[:12], *base.tests[24:], case("passed", "tests/test_dates.py::test_format"),
               case("passed", "tests/test_io.py::test_read"), case("passed", "tests/test_dates.py::test_parse"))
    head = run(*base.tests[:12], *base.tests[12:15],
               case("failed", "tests/test_dates.py::test_format", LOCALE_DATA.format(n=1, name="en")),
               case("failed", "tests/test_io.py::test_read", "OSError: [Errno 5] Input/output error"),
               case("failed", "tests/test_dates.py::test_parse", "tests/test_dates.py:9: AssertionError\n"
                    "AssertionError: assert 1 == 2"))
    diff = classify(base, head, None, changed_tests=(), changed_paths={"babel/core.py"})
    assert [c.name for c in diff.environmental] == ["tests/test_dates.py::test_format"]
    assert sorted(c.name for c in diff.regressed) == ["tests/test_dates.py::test_parse", "tests/test_io.py::test_read"]
    assert verdict_of(diff)[0] == "fail"
    alone = classify(run(*base.tests[:-2]), run(*head.tests[:16]), None, changed_tests=(),
                     changed_paths={"babel/core.py"})
    assert not alone.regressed and verdict_of(alone)[0] == "neutral"


def _with_release(result: TestRunResult, wheel: str | None = "babel-2.18.0-py3-none-any.whl") -> TestRunResult:
    return result.model_copy(update={"environment": EnvironmentPlan(python="3.11", release_data=wheel)})


def test_a_regression_under_release_data_the_base_already_fails_with_is_the_environment_s() -> None:
    """babel#1309 with its tables filled from babel 2.18 (CLDR 47) while its tests expect CLDR 48: 35 tests fail at
    base and head alike, and the change's new plural rules (from CLDR 48.1) name a locale the stand-in lacks: a
    test that passed at base fails. The stand-in is not the base's own data: neutral, named, never pass."""
    stale = [case("failed", f"tests/test_units.py::test_{i}", "tests/test_units.py:65: AssertionError\n"
                  "AssertionError: assert '3 pixely' == '3 px'") for i in range(35)]
    base = _with_release(run(*stale, case("passed", "tests/messages/test_checkers.py::test_4_num_plurals")))
    head = _with_release(run(*stale, case("failed", "tests/messages/test_checkers.py::test_4_num_plurals",
                                          "babel.core.UnknownLocaleError: unknown locale 'kw'")))
    diff = classify(base, head, None, changed_tests=(), changed_paths={"babel/messages/plurals.py"})
    assert not diff.regressed and [c.name for c in diff.environmental] == [
        "tests/messages/test_checkers.py::test_4_num_plurals"]
    assert "35 tests already fail at base with the data of babel-2.18.0-py3-none-any.whl" in (
        diff.environmental[0].cause or "")
    verdict, reasons = verdict_of(diff)
    assert verdict == "neutral" and "Rule of the Environment" in reasons[-1]


def test_a_regression_under_release_data_the_base_passes_with_is_the_change_s() -> None:
    """Hostile twins: the same regression where the stand-in is whole (every base test passes with it), where it
    stood in at head only, or with no release data at all, fails the change."""
    base = run(case("passed", "tests/test_units.py::test_ok"), case("passed", "tests/test_plurals.py::test_kw"))
    head = run(case("passed", "tests/test_units.py::test_ok"),
               case("failed", "tests/test_plurals.py::test_kw", "babel.core.UnknownLocaleError: unknown locale 'kw'"))
    stale_base = run(case("failed", "tests/test_units.py::test_ok", "AssertionError: assert 1 == 2"),
                     case("passed", "tests/test_plurals.py::test_kw"))
    for before, after in ((_with_release(base), _with_release(head)), (stale_base, _with_release(head)),
                          (_with_release(stale_base, None), head), (stale_base, head)):
        diff = classify(before, after, None, changed_tests=(), changed_paths={"babel/messages/plurals.py"})
        assert [c.name for c in diff.regressed] == ["tests/test_plurals.py::test_kw"] and not diff.environmental
        assert verdict_of(diff)[0] == "fail"


def test_an_environment_error_inside_a_warns_block_is_the_environment_s() -> None:
    """babel#1302: the new test's ``pytest.warns`` block raised the missing-data error, which pytest reports with
    its own "DID NOT WARN" last: the error is one of the failure's parts, and 12 base tests fail with it."""
    data = ("/sandbox/repo/babel/core.py:{n}: RuntimeError: The babel data files are not available. Just make sure "
            "to run \"python setup.py import_cldr\" before installing the library.")
    base = run(*(case("failed", f"tests/test_dates.py::test_{i}", data.format(n=61)) for i in range(12)))
    warns = ("/sandbox/repo/tests/test_units.py:36: RuntimeError: The babel data files are not available. Just make "
             "sure to run \"python setup.py import_cldr\" before installing the library. | Failed: DID NOT WARN. "
             "No warnings of type (<class 'DeprecationWarning'>,) were emitted. | Emitted warnings: [].")
    head = run(*base.tests, case("failed", "tests/test_units.py::test_deprecated_unit_ids", warns))
    diff = classify(base, head, None, changed_tests={"tests/test_units.py"}, changed_paths={"babel/units.py"})
    assert [c.name for c in diff.environmental] == ["tests/test_units.py::test_deprecated_unit_ids"]
    assert not diff.new_failing and verdict_of(diff)[0] == "neutral"
    # hostile twin: "DID NOT WARN" alone is the test's own expectation, charged
    head = run(*base.tests, case("failed", "tests/test_units.py::test_deprecated_unit_ids",
                                 "Failed: DID NOT WARN. No warnings of type (<class 'DeprecationWarning'>,) were "
                                 "emitted. | Emitted warnings: []."))
    diff = classify(base, head, None, changed_tests={"tests/test_units.py"}, changed_paths={"babel/units.py"})
    assert [c.name for c in diff.new_failing] == ["tests/test_units.py::test_deprecated_unit_ids"]


def test_a_regression_that_looks_environmental_still_fails() -> None:
    base = run(case("passed", "tests/test_io.py::test_load"), case("passed", "tests/test_srv.py::test_local"),
               case("passed", "tests/test_imp.py::test_it"))
    head = run(case("failed", "tests/test_io.py::test_load",
                    "FileNotFoundError: [Errno 2] No such file or directory: 'config.json'"),
               case("failed", "tests/test_srv.py::test_local",
                    "ConnectionRefusedError: [Errno 111] Connection refused"))
    # the change deleted pkg/util.py: an untouched test file that imports it is its regression, not the sandbox's
    broken = TestCaseResult(name="tests/test_imp.py", outcome="error",
                            message="ModuleNotFoundError: No module named 'pkg.util'")
    head = head.model_copy(update={"collection_errors": (broken,)})
    diff = classify(base, head, None, changed_tests=(), changed_paths={"pkg/util.py"})
    assert not diff.environmental
    assert sorted(c.name for c in diff.regressed) == ["tests/test_imp.py::test_it", "tests/test_io.py::test_load",
                                                      "tests/test_srv.py::test_local"]
    assert verdict_of(diff)[0] == "fail"
    # and a real regression next to an environmental failure still fails the change
    mixed = classify(base, run(case("failed", "tests/test_io.py::test_load", "assert 1 == 2"),
                               case("failed", "tests/test_srv.py::test_local", "/bin/sh: 1: pg_ctl: not found"),
                               case("passed", "tests/test_imp.py::test_it")), None, changed_tests=())
    assert [c.name for c in mixed.environmental] == ["tests/test_srv.py::test_local"]
    assert verdict_of(mixed)[0] == "fail"


def test_environment_cause_names_each_kind_and_refuses_look_alikes() -> None:
    def cause(message: str, outcome: str = "failed", name: str = "tests/test_a.py::t") -> str | None:
        return environment_cause(TestCaseResult(name=name, outcome=outcome, message=message),
                                 {"pkg/calc.py"})
    assert "git" in (cause("FileNotFoundError: [Errno 2] No such file or directory: 'git'") or "")
    assert "libGL.so.1" in (cause("ImportError: libGL.so.1: cannot open shared object file: No such file") or "")
    assert "network" in (cause("OSError: [Errno 101] Network is unreachable") or "")
    assert "yaml" in (cause("ModuleNotFoundError: No module named 'yaml'", "error", "tests/test_a.py") or "")
    assert cause("FileNotFoundError: [Errno 2] No such file or directory: 'data/x.csv'") is None
    assert cause("FileNotFoundError: [Errno 2] No such file or directory: 'x.json'") is None
    assert cause("ModuleNotFoundError: No module named 'pkg.calc'", "error", "tests/test_a.py") is None
    assert cause("ConnectionRefusedError: [Errno 111] Connection refused") is None
    assert cause("AssertionError: assert 'less' == 'more'") is None


AZURE = DeclaredRequirement(requirement="azure-keyvault-secrets>=4.7",
                            source="pyproject.toml [project.optional-dependencies] azure-key-vault")


def test_a_module_of_an_optional_extra_the_environment_left_out_is_the_environment_s() -> None:
    """pydantic-settings#924: a dependency bump; a documentation example imports ``azure``, which only the
    ``azure-key-vault`` extra installs, and LogoMesh installs the test extras only. That failure names the extra."""
    example = "tests/test_docs.py::test_docs_examples[docs/index.md:1290-1340]"
    message = "docs/index.md:1294: ModuleNotFoundError: No module named 'azure'"
    base = run(case("passed", "tests/test_settings.py::test_env"))
    base = base.model_copy(update={"environment": EnvironmentPlan(python="3.11", left_out=(AZURE,))})
    head = run(case("passed", "tests/test_settings.py::test_env"), case("failed", example, message))
    diff = classify(base, head, None, changed_tests=(), changed_paths={"pyproject.toml", "uv.lock"})
    assert not diff.new_failing and [c.name for c in diff.environmental] == [example]
    assert "azure-key-vault" in (diff.environmental[0].cause or "")
    assert verdict_of(diff)[0] == "neutral"
    # hostile twins: the same failure where the base declares no such extra, or where the extra is only the
    # change's own (the head's plan is never asked), is the change's
    undeclared = base.model_copy(update={"environment": EnvironmentPlan(python="3.11")})
    diff = classify(undeclared, head.model_copy(update={"environment": EnvironmentPlan(
        python="3.11", left_out=(AZURE,))}), None, changed_tests=(), changed_paths={"pyproject.toml"})
    assert [c.name for c in diff.new_failing] == [example] and verdict_of(diff)[0] == "fail"
    # a regression importing a module the change touched is the change's even when an extra is named after it
    own = DeclaredRequirement(requirement="pkg-plugins", source="setup.cfg extras_require plugins")
    base = run(case("passed", "tests/test_calc.py::test_add")).model_copy(
        update={"environment": EnvironmentPlan(python="3.11", left_out=(own,))})
    head = run(case("failed", "tests/test_calc.py::test_add", "ModuleNotFoundError: No module named 'pkg.calc'"))
    diff = classify(base, head, None, changed_tests=(), changed_paths={"pkg/calc.py"})
    assert [c.name for c in diff.regressed] == ["tests/test_calc.py::test_add"] and verdict_of(diff)[0] == "fail"


def test_a_requirement_provides_its_module_by_name_namespace_or_py_prefix_only() -> None:
    from checks.differential import provides
    assert provides("azure-identity>=1", "azure") and provides("PyYAML>=6", "yaml")
    assert provides("python-dateutil", "dateutil.tz") and provides("Babel>=2.7", "babel")
    assert not provides("azure-identity", "identity") and not provides("pyyaml", "py")
    assert not provides("requests", "requests_mock") and not provides("", "x")


# --- pytest 9's configuration files ---------------------------------------------------------------------------

def test_pytest_9_native_table_and_pytest_toml_are_the_configuration() -> None:
    native = '[project]\nname = "p"\n\n[tool.pytest]\ntestpaths = ["tests"]\nxfail_strict = true\n'
    files = {"pyproject.toml": native, "tox.ini": "[pytest]\ntestpaths = other\n"}
    assert pytest_config(files.get) == ("pyproject.toml", native)
    assert holds_pytest_config("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-q"\n')
    assert holds_pytest_config("pyproject.toml", 'tool.pytest.addopts = ["-q"]\n')
    # a pyproject.toml without pytest's table is not the configuration: tox.ini is
    files["pyproject.toml"] = '[tool.pytest-cov]\nx = 1\n[tool.ruff]\nline-length = 1\n'
    assert pytest_config(files.get) == ("tox.ini", files["tox.ini"])
    # pytest.toml comes first, even when empty
    files["pytest.toml"] = ""
    assert pytest_config(files.get) == ("pytest.toml", "")
    assert is_harness_path("pytest.toml") and is_harness_path(".pytest.toml")
    assert not holds_pytest_config("setup.cfg", "[metadata]\nname = tool:pytest\n")


# --- .logomesh.yml test.environment reaches the sandbox -----------------------------------------------------------

def test_the_repository_s_environment_override_reaches_the_test_spec(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "r")
    repo.commit("Start", {"pkg/__init__.py": ""})
    repo.branch("pr")
    repo.commit("Add a function", {"pkg/calc.py": "def f():\n    return 1\n"})
    config = parse_repo_config('test:\n  environment:\n    python: "3.12"\n    requirements: ["numpy==2.1.0"]\n')
    spec = read_case(GitRepo.open(repo.path), "main", "pr", config=config).test_spec
    assert spec.environment is not None and spec.environment.python == "3.12"
    assert spec.environment.requirements == ("numpy==2.1.0",)
    plain = read_case(GitRepo.open(repo.path), "main", "pr", config=parse_repo_config(None)).test_spec
    assert plain.environment is None


# --- a suite above the cap: tests past it are not measured, never 'removed' ---------------------------------------

def test_tests_past_the_cap_are_not_measured_and_a_real_removal_still_counts() -> None:
    spec = TestSpec()
    ids = [f"tests/test_big.py::test_{i}" for i in range(MAX_TESTS + 5)]
    base = read_results({"record": {"collected": ids[5:], "collected_total": MAX_TESTS, "tests": [
        {"id": n, "outcome": "passed"} for n in ids[5:]]}}, spec, {})
    # the change adds five tests first in the order: five base tests fall past the cap at head
    head = read_results({"record": {"collected": ids, "collected_total": MAX_TESTS + 5, "tests": [
        {"id": n, "outcome": "passed"} for n in ids]}}, spec, {})
    assert head.past_cap == 5 and "not measured" in (head.reason or "") and base.past_cap == 0
    diff = classify(base, head, None, changed_tests={"tests/test_big.py"})
    assert len(diff.past_cap) == 5 and not diff.removed and not diff.regressed
    assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == "pass"
    assert any(e.kind == "tests-past-cap" and "not measured" in e.summary for e in diff_evidence(diff))
    # hostile twin: below the cap, a test the change deselects is still removed
    small_base = run(case("passed", "t.py::a"), case("passed", "t.py::b"))
    gone = classify(small_base, run(case("passed", "t.py::a")), small_base, changed_tests={"conftest.py"})
    assert gone.removed == ("t.py::b",) and not gone.past_cap


# --- a run that did not complete: the tests it never reached are not measured, never regressed ---------------------

def test_tests_a_stopped_run_never_reached_are_unreached_and_a_real_regression_still_fails() -> None:
    base = run(case("passed", "t.py::a"), case("passed", "t.py::b"), case("passed", "t.py::c"))
    timeout = "killed: wall-clock timeout after 300 s"
    # the run of the change's code under the base's tests timed out after t.py::a
    guard = run(case("passed", "t.py::a"), status="timeout", reason=timeout)
    head = run(case("passed", "t.py::a"), case("passed", "t.py::b"), case("passed", "t.py::c"))
    diff = classify(base, head, guard, changed_tests={"tests/test_calc.py"})
    assert diff.unreached == ("t.py::b", "t.py::c") and not diff.regressed and not diff.removed
    verdict, reasons = verdict_of(diff, PRODUCT, TEST_FILE)
    assert verdict == "neutral" and any(r.startswith("Rule of Completion") and timeout in r for r in reasons)
    # the head's own run stopped (it is the oracle when the change touched no test): the same
    diff = classify(base, run(case("passed", "t.py::a"), status="error", reason="crashed"), None, changed_tests=())
    assert diff.unreached == ("t.py::b", "t.py::c") and not diff.regressed and not diff.removed
    # hostile twins: a test that failed before the stop is a regression, under the oracle or at head
    diff = classify(base, run(case("failed", "t.py::a"), status="timeout", reason=timeout), None, changed_tests=())
    assert [c.name for c in diff.regressed] == ["t.py::a"] and verdict_of(diff)[0] == "fail"
    head = run(case("passed", "t.py::a"), case("failed", "t.py::b"), case("passed", "t.py::c"))
    diff = classify(base, head, guard, changed_tests={"tests/test_calc.py"})
    assert [c.name for c in diff.regressed] == ["t.py::b"] and diff.unreached == ("t.py::c",)
    assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == "fail"
    # and a complete run that lost a test still regressed it
    diff = classify(base, run(case("passed", "t.py::a"), case("passed", "t.py::b")), None, changed_tests=())
    assert [c.name for c in diff.regressed] == ["t.py::c"] and not diff.unreached


def test_a_head_run_that_did_not_complete_is_never_pass_when_the_base_did_not_complete_either() -> None:
    timeout = "killed: wall-clock timeout after 300 s"
    stopped = run(status="timeout", reason=timeout)
    diff = classify(stopped, stopped, None, changed_tests=())
    assert diff.status == "not_measured"

    found, reasons = verdict_of(diff, tests=stopped)
    assert found == "neutral" and any(r.startswith("Rule of Completion") and timeout in r for r in reasons)
    # hostile twins: a test that failed before the head's stop is not passed over with no base to compare, and
    # in a test file the change touched it is charged
    head = run(case("failed", "tests/test_calc.py::t"), status="timeout", reason=timeout)
    found, reasons = verdict_of(classify(stopped, head, None, ()), tests=head)
    assert found == "neutral" and any(r.startswith("Rule of the Unmeasured Base") for r in reasons)
    touched = classify(stopped, head, None, {"tests/test_calc.py"})
    assert verdict_of(touched, PRODUCT, TEST_FILE, tests=head)[0] == "fail"


# --- a run that ended before the collector could report says why ------------------------------------------------

def test_an_early_end_names_the_likely_cause_and_pytest_s_last_lines() -> None:
    output = "\n".join(f"tests/test_{i}.py ........" for i in range(40)) + "\nKilled\n"
    result = read_results({"exit_code": -9, "record": None}, TestSpec(), {"output": output})
    assert result.status == "error"
    reason = result.reason or ""
    assert "memory limit" in reason and "tests/test_39.py" in reason and "Killed" in reason
    assert "tests/test_0.py" not in reason  # trimmed to the last lines
    # a secret printed by a test reaches the reason redacted, and a forged 'all passed' line changes nothing
    token = "ghp_" + "a" * 36
    forged = read_results({"exit_code": 3, "record": None}, TestSpec(),
                          {"output": clean_test_output(f"token={token}\n== 500 passed ==\n".encode(), 10_000)})
    assert forged.status == "error" and token not in (forged.reason or "")
    assert "stopped the process early" in (forged.reason or "") and "500 passed" in (forged.reason or "")


def test_a_conftest_that_will_not_load_is_a_run_that_did_not_complete_never_no_tests() -> None:
    output = ("ImportError while loading conftest '/sandbox/repo/tests/conftest.py'.\n"
              "tests/conftest.py:5: in <module>\n    from jinja2 import loaders\n"
              "E   ModuleNotFoundError: No module named 'markupsafe'\n")
    empty: dict[str, list[dict[str, str]]] = {"collected": [], "tests": [], "errors": []}
    result = read_results({"exit_code": 4, "record": empty}, TestSpec(), {"output": output})
    assert result.status == "error"
    reason = result.reason or ""
    assert "exit code 4" in reason and "No module named 'markupsafe'" in reason and "requirements" in reason
    # at head, the court never passes it (Rule of Completion), and as the base it leaves the head judged alone
    base = run(case("passed", "t.py::a"))
    diff = classify(result, run(case("failed", "t.py::a")), None, changed_tests=())
    assert diff.status == "not_measured" and diff.reason and "exit code 4" in diff.reason
    diff = classify(base, result, None, changed_tests=())
    assert diff.unreached == ("t.py::a",) and not diff.regressed
    found, reasons = verdict_of(diff, tests=result)
    assert found == "neutral"
    assert any(r.startswith("Rule of Completion") and "markupsafe" in r for r in reasons)
    # hostile twins: no test collected (exit 5) or nothing but skips (exit 0) is still 'no tests'; a run with
    # tests keeps its outcomes whatever the exit code
    assert read_results({"exit_code": 5, "record": empty}, TestSpec(), {"output": output}).status == "no_tests"
    skipped = {**empty, "tests": [{"id": "t.py::s", "outcome": "skipped"}]}
    assert read_results({"exit_code": 0, "record": skipped}, TestSpec(), {}).status == "no_tests"
    failing = {**empty, "tests": [{"id": "t.py::a", "outcome": "failed"}]}
    assert read_results({"exit_code": 1, "record": failing}, TestSpec(), {}).failed == 1


# --- re-runs: only reproducible failures are charged ---------------------------------------------------------

def test_re_runs_move_unreproduced_failures_to_flaky_and_nothing_else() -> None:
    base = run(case("passed", "t.py::reg"), case("passed", "t.py::hook"), case("passed", "t.py::shaky"))
    head = run(case("failed", "t.py::reg", "assert"), case("passed", "t.py::hook"),
               case("failed", "t.py::shaky", "timeout"), case("failed", "t.py::new", "assert"),
               case("failed", "t.py::det", "assert"))
    guard = run(case("failed", "t.py::reg", "assert"), case("failed", "t.py::hook", "assert"),
                case("failed", "t.py::shaky", "timeout"))
    diff = classify(base, head, guard, changed_tests={"conftest.py"})
    assert {c.name for c in diff.regressed} == {"t.py::reg", "t.py::hook", "t.py::shaky"}
    assert {c.name for c in diff.new_failing} == {"t.py::new", "t.py::det"}
    after = apply_reruns(
        diff,
        # at head: 'new' passes once; 'det' fails each time; a re-run reported passing although it raised proves
        # nothing, and neither does a skip
        at_head=[run(case("passed", "t.py::new"), case("failed", "t.py::det")),
                 run(case("failed", "t.py::new"), TestCaseResult(name="t.py::det", outcome="passed", rewritten=True))],
        under_oracle=[run(case("failed", "t.py::reg"), case("passed", "t.py::hook"), case("skipped", "t.py::shaky"))],
        at_base=[run(case("passed", "t.py::reg"), case("passed", "t.py::hook"), case("failed", "t.py::shaky"))])
    assert {c.name: c.cause for c in after.flaky} == {
        "t.py::new": "passed on 1 of 2 re-run(s)", "t.py::shaky": "failed on 1 of 1 re-run(s) at base"}
    assert [c.name for c in after.new_failing] == ["t.py::det"]
    # t.py::hook passes at head only under the change's harness: tampered stays regressed whatever a re-run says
    assert {c.name for c in after.regressed} == {"t.py::reg", "t.py::hook"}
    assert verdict_of(after)[0] == "fail"
    only_flaky = apply_reruns(classify(base, head.model_copy(update={"tests": head.tests[:3]}), None, ()),
                              at_head=[], under_oracle=[run(case("passed", "t.py::reg"),
                                                            case("passed", "t.py::shaky"))], at_base=[])
    verdict, reasons = verdict_of(only_flaky)
    assert not only_flaky.regressed and verdict == "neutral" and "Rule of Reproduction" in reasons[-1]


def test_a_submodule_absent_from_the_clone_is_named_and_cannot_cover_a_regression() -> None:
    def cause(message: str, changed: set[str], name: str = "tests/test_a.py") -> str | None:
        return environment_cause(TestCaseResult(name=name, outcome="error", message=message), changed,
                                 ("vendor/fastlib",))
    assert "vendor/fastlib" in (cause("ModuleNotFoundError: No module named 'fastlib'", {"pkg/calc.py"}) or "")
    assert "vendor/fastlib" in (cause("FileNotFoundError: '/sandbox/repo/vendor/fastlib/data.bin'",
                                      {"pkg/calc.py"}) or "")
    # a module the change itself touched is the change's, whatever the submodule is called
    assert cause("ModuleNotFoundError: No module named 'fastlib'", {"fastlib/__init__.py"}) is None
    assert cause("ModuleNotFoundError: No module named 'pkg'", {"pkg/calc.py"}) is None


def test_with_an_unmeasurable_base_the_change_s_failing_test_is_re_run_too() -> None:
    base = TestRunResult(status="env_error", reason="the tests could not import what they need")
    head = run(case("failed", "tests/test_calc.py::test_new", "timeout"), case("failed", "tests/test_calc.py::t2"))
    diff = classify(base, head, None, changed_tests={"tests/test_calc.py"})
    after = apply_reruns(diff, at_head=[run(case("passed", "tests/test_calc.py::test_new"),
                                            case("failed", "tests/test_calc.py::t2"))], under_oracle=[], at_base=[])
    assert [c.name for c in after.flaky] == ["tests/test_calc.py::test_new"]
    assert [c.name for c in after.new_failing] == ["tests/test_calc.py::t2"]
    assert verdict_of(after, PRODUCT, TEST_FILE)[0] == "fail"  # the reproduced one still fails the change
    only = apply_reruns(classify(base, head.model_copy(update={"tests": head.tests[:1]}), None,
                                 changed_tests={"tests/test_calc.py"}),
                        at_head=[run(case("passed", "tests/test_calc.py::test_new"))], under_oracle=[], at_base=[])
    assert not only.new_failing and verdict_of(only, PRODUCT, TEST_FILE)[0] == "neutral"


# --- a test deleted with the API it tested; a documentation example renumbered by the change ---------------------

REMOVAL_DIFF = """diff --git a/src/pkg/__init__.py b/src/pkg/__init__.py
--- a/src/pkg/__init__.py
+++ b/src/pkg/__init__.py
@@ -1,3 +1,2 @@
 from ._native import soft_str as soft_str
-from ._native import soft_unicode  # noqa: F401
 VERSION = 2
diff --git a/src/pkg/_native.py b/src/pkg/_native.py
--- a/src/pkg/_native.py
+++ b/src/pkg/_native.py
@@ -1,6 +1,2 @@
 def soft_str(s):
     return str(s)
-
-
-def soft_unicode(s):
-    return soft_str(s)
diff --git a/tests/test_pkg.py b/tests/test_pkg.py
--- a/tests/test_pkg.py
+++ b/tests/test_pkg.py
@@ -1,5 +1,2 @@
 def test_soft_str():
     assert True
-
-def test_soft_unicode_deprecated():
-    assert True
"""


def test_removed_names_reads_definitions_and_re_exports_of_product_code_only() -> None:
    from checks.removed_names import removed_names
    from checks.testpaths import is_test_path
    assert removed_names(REMOVAL_DIFF, is_test_path) == {"soft_unicode"}
    # a name moved to another module (removed here, defined there) is not removed; test files do not count
    moved = REMOVAL_DIFF + """diff --git a/src/pkg/compat.py b/src/pkg/compat.py
--- a/src/pkg/compat.py
+++ b/src/pkg/compat.py
@@ -1,1 +1,3 @@
 import os
+def soft_unicode(s):
+    return s
"""
    assert removed_names(moved, is_test_path) == set()
    assert removed_names("not a diff", is_test_path) == set()


def test_a_test_deleted_with_the_name_it_tested_is_retired_and_a_deleted_test_of_a_broken_name_regresses() -> None:
    from checks.removed_names import removed_names
    from checks.testpaths import is_test_path
    removed = removed_names(REMOVAL_DIFF, is_test_path)
    gone = "tests/test_pkg.py::test_soft_unicode_deprecated"
    base = run(case("passed", "tests/test_pkg.py::test_soft_str"), case("passed", gone))
    head = run(case("passed", "tests/test_pkg.py::test_soft_str"))
    guard = run(case("passed", "tests/test_pkg.py::test_soft_str"),
                case("error", gone, "AttributeError: module 'pkg._native' has no attribute 'soft_unicode'"))
    product = ChangedFile(path="src/pkg/_native.py", status="modified", removed_count=4)
    tests = ChangedFile(path="tests/test_pkg.py", status="modified", removed_count=3)
    diff = classify(base, head, guard, {"tests/test_pkg.py"}, {"src/pkg/_native.py"}, removed)
    assert [c.name for c in diff.retired] == [gone] and not diff.regressed
    assert "soft_unicode" in (diff.retired[0].cause or "")
    assert verdict_of(diff, product, tests)[0] == "pass"
    assert any(e.kind == "test-retired" and e.severity == "info" for e in diff_evidence(diff))
    # hostile: the deleted test fails under the base's tests for another reason (the code it tested broke)
    broken = run(case("passed", "tests/test_pkg.py::test_soft_str"),
                 case("failed", gone, "AssertionError: assert 'a' == 'b'"))
    hidden = classify(base, head, broken, {"tests/test_pkg.py"}, {"src/pkg/_native.py"}, removed)
    assert [c.name for c in hidden.regressed] == [gone] and not hidden.retired
    assert verdict_of(hidden, product, tests)[0] == "fail"
    # hostile: the message names a missing attribute the change did not remove (it broke, not retired, it)
    other = run(case("passed", "tests/test_pkg.py::test_soft_str"),
                case("error", gone, "AttributeError: module 'pkg' has no attribute 'soft_str'"))
    assert classify(base, head, other, {"tests/test_pkg.py"}, (), removed).regressed
    # hostile: the test still exists at head: a missing name there is a regression, whatever was removed
    kept = run(case("passed", "tests/test_pkg.py::test_soft_str"),
               case("error", gone, "AttributeError: module 'pkg._native' has no attribute 'soft_unicode'"))
    assert [c.name for c in classify(base, kept, kept, {"tests/test_pkg.py"}, (), removed).regressed] == [gone]


def test_a_failing_documentation_example_renumbered_by_the_change_is_pre_existing() -> None:
    was = "tests/test_docs.py::test_docs_examples[docs/index.md:1287-1324]"
    now = "tests/test_docs.py::test_docs_examples[docs/index.md:1301-1338]"
    message = "docs/index.md:1290: ModuleNotFoundError: No module named 'boto3'"
    ok = case("passed", "tests/test_docs.py::test_docs_examples[docs/index.md:10-20]")
    base = run(ok, case("failed", was, message))
    head = run(ok, case("failed", now, "docs/index.md:1304: ModuleNotFoundError: No module named 'boto3'"))
    diff = classify(base, head, None, (), {"docs/index.md"})
    assert not diff.new_failing and now in diff.pre_existing
    assert verdict_of(diff, ChangedFile(path="docs/index.md", status="modified", added_lines=(1,)), PRODUCT)[0] \
        == "pass"
    # hostile: the renumbered example now fails another way — the change's failure
    broke = run(ok, case("failed", now, "docs/index.md:1304: AssertionError: assert 3 == 4"))
    assert [c.name for c in classify(base, broke, None, (), {"docs/index.md"}).new_failing] == [now]
    # hostile: a passing example at base gone and a failing one with a shifted id: not a pre-existing failure
    fresh = run(case("failed", "tests/test_docs.py::test_docs_examples[docs/index.md:11-21]", "boom"))
    assert classify(run(ok), fresh, None, (), {"docs/index.md"}).new_failing
    # each base failure covers one head case only
    two = run(ok, case("failed", now, message), case("failed", now.replace("1301", "1401"), message))
    assert len(classify(base, two, None, (), {"docs/index.md"}).new_failing) == 1


def test_a_project_that_does_not_build_is_told_how_to_pin_its_build_never_to_install_itself() -> None:
    # PyYAML's setup.py under Cython 3: the editable install fails, so every test misses ``yaml``, its own module
    errors = [{"id": f"tests/test_{i}.py", "message": "E   ModuleNotFoundError: No module named 'yaml'"}
              for i in range(3)]
    loaded = {"install": {"status": "failed", "reason": "AttributeError: 'build_ext' object has no attribute "
                                                       "'cython_sources'"},
              "record": {"collected": [], "tests": [], "errors": errors}}
    result = read_results(loaded, TestSpec(), {})
    reason = result.reason or ""
    assert result.status == "env_error" and "cython_sources" in reason and "build" in reason
    assert 'requirements: ["yaml"]' not in reason
    # hostile twin: a missing third-party module with the project installed still names that module
    missing = {"install": {"status": "ok"}, "record": {"collected": [], "tests": [], "errors": [
        {"id": "tests/test_a.py", "message": "E   ModuleNotFoundError: No module named 'freezegun'"}]}}
    named = read_results(missing, TestSpec(), {})
    assert named.status == "env_error" and 'requirements: ["freezegun"]' in (named.reason or "")


# --- a test renamed where it stands, its expectation rewritten with the code (requests#7315) ---------------------

RENAME_DIFF = '''diff --git a/tests/test_adapters.py b/tests/test_adapters.py
index 6c55d5a1..303e4cc3 100644
--- a/tests/test_adapters.py
+++ b/tests/test_adapters.py
@@ -1,8 +1,8 @@
 import requests.adapters


-def test_request_url_trims_leading_path_separators():
+def test_request_url_handles_leading_path_separators():
     """See also https://github.com/psf/requests/issues/6643."""
     a = requests.adapters.HTTPAdapter()
     p = requests.Request(method="GET", url="http://127.0.0.1:10000//v:h").prepare()
-    assert "/v:h" == a.request_url(p, {})
+    assert "//v:h" == a.request_url(p, {})
'''
OLD = "tests/test_adapters.py::test_request_url_trims_leading_path_separators"
NEW = "tests/test_adapters.py::test_request_url_handles_leading_path_separators"
ADAPTERS = ChangedFile(path="tests/test_adapters.py", status="modified", added_lines=(4, 8), content="x = 1\n")


def test_a_test_renamed_where_it_stands_with_its_expectation_is_an_expectation_change_not_a_regression() -> None:
    renamed = renamed_tests(RENAME_DIFF, is_test_path)
    assert renamed == {OLD: NEW}
    base = run(case("passed", OLD), case("passed", "tests/test_adapters.py::test_other"))
    guard = run(case("failed", OLD, "AssertionError: assert '/v:h' == '//v:h'"),
                case("passed", "tests/test_adapters.py::test_other"))
    head = run(case("passed", NEW), case("passed", "tests/test_adapters.py::test_other"))
    diff = classify(base, head, guard, {"tests/test_adapters.py"}, {"src/requests/adapters.py"}, (), renamed)
    assert diff.expectation_changed == (OLD,) and not diff.regressed
    assert verdict_of(diff, ADAPTERS, PRODUCT)[0] == "pass"
    # hostile: the renamed test fails at head — the rename covers nothing
    failing = run(case("failed", NEW, "assert '/v:h' == '//v:h'"), case("passed", "tests/test_adapters.py::test_other"))
    broke = classify(base, failing, guard, {"tests/test_adapters.py"}, {"src/requests/adapters.py"}, (), renamed)
    assert [c.name for c in broke.regressed] == [OLD] and verdict_of(broke, ADAPTERS, PRODUCT)[0] == "fail"
    # hostile: the same outcomes without a rename in the diff (the test deleted, another added elsewhere)
    deleted = classify(base, head, guard, {"tests/test_adapters.py"}, {"src/requests/adapters.py"}, (), {})
    assert [c.name for c in deleted.regressed] == [OLD] and verdict_of(deleted, ADAPTERS, PRODUCT)[0] == "fail"


def test_only_a_hunk_that_replaces_as_many_test_definitions_as_it_removes_renames() -> None:
    two_for_one = RENAME_DIFF.replace('-def test_request_url_trims_leading_path_separators():\n',
                                      '-def test_request_url_trims_leading_path_separators():\n-def test_b():\n')
    assert renamed_tests(two_for_one, is_test_path) == {}
    # a deletion in one hunk and an addition in another are not a rename
    apart = RENAME_DIFF.replace("+def test_request_url_handles_leading_path_separators():\n", " \n") + \
        "@@ -40,2 +40,4 @@\n+def test_request_url_handles_leading_path_separators():\n+    assert True\n"
    assert renamed_tests(apart, is_test_path) == {}
    # product code is never read for renames
    assert renamed_tests(RENAME_DIFF.replace("tests/test_adapters.py", "src/requests/adapters.py"),
                         is_test_path) == {}


# --- tests named after the data files the change renamed (html-encoding-sniffer c77e7e4) ---------------------------

SNIFF = "test/tests.js"
TESTS_JS = ChangedFile(path=SNIFF, status="modified", added_lines=(18,), content="x = 1\n")
SNIFFER = ChangedFile(path="lib/html-encoding-sniffer.js", status="modified", added_lines=(3,), content="x = 1\n")
BOM = ("test/fixtures/bom/UTF-16BE.html", "test/fixtures/bom/utf-16be.html")
KOI = ("test/fixtures/normal/charset_KOI8-R.html", "test/fixtures/normal/charset_koi8-r.html")


def test_a_test_named_after_a_data_file_the_change_renamed_is_renamed_with_it() -> None:
    from checks.removed_names import rename_by_data, renamed_data

    pairs = renamed_data([BOM, KOI])
    assert pairs[0] == ("charset_KOI8-R.html", "charset_koi8-r.html") and ("KOI8-R", "koi8-r") in pairs
    assert ("charset", "charset") not in pairs  # a piece the rename kept is no pair
    assert renamed_data([("test/fixtures/a.txt", "test/fixtures/b.txt")]) == (("a.txt", "b.txt"),)  # 'a' too short
    old = [f"{SNIFF}::UTF-16BE.html > should sniff as UTF-16BE, given no options",
           f"{SNIFF}::charset_KOI8-R.html > should sniff as KOI8-R, given no options",
           f"{SNIFF}::charset_KOI8-R.html > should sniff as the transport layer encoding, given that"]
    new = [f"{SNIFF}::" + rename_by_data(name.split("::", 1)[1], pairs) for name in old]
    assert new[0].endswith("::utf-16be.html > should sniff as utf-16be, given no options")
    assert new[1].endswith("::charset_koi8-r.html > should sniff as koi8-r, given no options")
    # the base's expectations fail against the change's code (the outputs are lower-case labels now); the change
    # renamed the data files and rewrote the tests, which pass under the new names
    base = run(*(case("passed", n) for n in old))
    guard = run(*(case("failed", n, "AssertionError: 'utf-16be' !== 'UTF-16BE'") for n in old))
    head = run(*(case("passed", n) for n in new))
    diff = classify(base, head, guard, {SNIFF, *BOM, *KOI}, {SNIFF, SNIFFER.path, *BOM, *KOI}, data_renames=pairs)
    assert diff.expectation_changed == tuple(sorted(old)) and not diff.regressed
    verdict, reasons = verdict_of(diff, TESTS_JS, SNIFFER)
    # neutral here only because this brief records no JavaScript run ("not analysed"); no test rule holds it back
    assert verdict != "fail" and not [r for r in reasons if "Rule of Regression" in r], reasons
    # hostile: a renamed test that fails at head covers nothing — still regressed
    failing = run(*(case("failed", n, "AssertionError") for n in new))
    broke = classify(base, failing, guard, {SNIFF, *BOM, *KOI}, {SNIFF, SNIFFER.path}, data_renames=pairs)
    assert len(broke.regressed) == 3 and verdict_of(broke, TESTS_JS, SNIFFER)[0] == "fail"
    # hostile: the same outcomes without the renames (another test that merely passes at head) are regressions
    plain = classify(base, head, guard, {SNIFF}, {SNIFF, SNIFFER.path})
    assert len(plain.regressed) == 3 and verdict_of(plain, TESTS_JS, SNIFFER)[0] == "fail"
    # hostile: renamed data, a test file the change did not edit, its tests passing under the new names — the
    # harness made them pass: tampered, and regressed
    untouched = classify(base, head, guard, {*BOM, *KOI}, {SNIFFER.path, *BOM, *KOI}, data_renames=pairs)
    assert len(untouched.tampered) == 3 and len(untouched.regressed) == 3


# --- pytest's own INTERNALERROR mid-run (pydantic-settings#924) -------------------------------------------------

INTERNAL = ("INTERNALERROR>   File \"/usr/lib/python3.11/traceback.py\", line 416, in _extract_from_extended\n"
            "INTERNALERROR>     for f, (lineno, end_lineno, colno, end_colno) in frame_gen:\n"
            "INTERNALERROR> RuntimeError: generator raised StopIteration\n")


def internal_run(outcomes: list[tuple[int, str]], collected: int, code: int = 3) -> TestRunResult:
    loaded = {"exit_code": code, "record": {
        "collected": [f"tests/test_s.py::test_{i}" for i in range(collected)],
        "tests": [{"id": f"tests/test_s.py::test_{i}", "outcome": outcome, "message": None if outcome == "passed"
                   else "AssertionError: assert 1 == 2"} for i, outcome in outcomes]}}
    return read_results(loaded, TestSpec(), {"output": "tests/test_s.py ..F\n" + INTERNAL})


def test_a_run_pytest_broke_off_with_an_internal_error_did_not_complete_and_charges_no_unreached_test() -> None:
    base = run(*(case("passed", f"tests/test_s.py::test_{i}") for i in range(10)))
    broken = internal_run([(0, "passed"), (1, "passed")], collected=10)
    assert broken.status == "error" and "internal error after 2 of 10 tests" in (broken.reason or "")
    assert "generator raised StopIteration" in (broken.reason or "")
    diff = classify(base, broken, broken, {"tests/test_s.py"}, {"pkg/calc.py"})
    assert not diff.regressed and len(diff.unreached) == 8
    verdict, reasons = verdict_of(diff, PRODUCT, TEST_FILE, tests=broken)
    assert verdict == "neutral" and any("Rule of Completion" in r for r in reasons), reasons
    # hostile: a test that failed before the break is still the change's
    failed_first = internal_run([(0, "passed"), (1, "failed")], collected=10)
    charged = classify(base, failed_first, failed_first, {"tests/test_s.py"}, {"pkg/calc.py"})
    assert [c.name for c in charged.regressed] == ["tests/test_s.py::test_1"]
    assert verdict_of(charged, PRODUCT, TEST_FILE, tests=failed_first)[0] == "fail"
    # an internal error after every test ran (at session end) leaves a complete run
    assert internal_run([(i, "passed") for i in range(10)], collected=10).status == "ran"


def test_a_test_the_change_parametrised_whose_cases_pass_is_an_expectation_change() -> None:
    # markupsafe#115: ``def test_adding():`` became ``def test_adding(escape):`` over a parametrised fixture
    base = run(case("passed", "tests/test_m.py::test_adding"), case("passed", "tests/test_m.py::test_mul"))
    guard = run(case("failed", "tests/test_m.py::test_adding"), case("passed", "tests/test_m.py::test_mul"))
    head = run(case("passed", "tests/test_m.py::test_adding[markupsafe._native]"),
               case("passed", "tests/test_m.py::test_adding[markupsafe._speedups]"),
               case("passed", "tests/test_m.py::test_mul"))
    diff = classify(base, head, guard, {"tests/test_m.py"}, {"src/markupsafe/__init__.py"})
    assert diff.expectation_changed == ("tests/test_m.py::test_adding",) and not diff.regressed
    # hostile: one of its cases fails at head — the function no longer passes as a whole
    broke = run(case("passed", "tests/test_m.py::test_adding[markupsafe._native]"),
                case("failed", "tests/test_m.py::test_adding[markupsafe._speedups]"),
                case("passed", "tests/test_m.py::test_mul"))
    assert [c.name for c in classify(base, broke, guard, {"tests/test_m.py"}, {"src/m.py"}).regressed] == [
        "tests/test_m.py::test_adding"]
    # hostile: the test file is not the change's: its cases passing is the harness's doing, not a new expectation
    forged = classify(base, head, guard, {"conftest.py"}, {"conftest.py"})
    assert [c.name for c in forged.tampered] == ["tests/test_m.py::test_adding"]
