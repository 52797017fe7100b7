"""Dependency drift: a base that today's releases broke is measured among the releases of its own day, and nothing
a change does can ask for that.

Friendly: werkzeug's removed ``url_quote`` at base → the Python runs again with ``dependencies_as_of`` the base
commit's date, and the dated runs are kept when they measure more. Hostile: the same removed name imported by the
change alone (the base is fine) → no dated run; an ImportError of the repository's own package or of the standard
library → no dated run; dated runs that measure less → today's runs stay.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from checks.dependency_drift import (
    better,
    drift,
    interpreter_broke,
    older_interpreter,
    other_interpreter,
    stale_failures,
    stdlib_drift,
)
from checks.detectives.test_runner import TestRunner
from checks.models import (
    Case,
    ChangedFile,
    EnvironmentPlan,
    SetupReport,
    TestCaseResult,
    TestRunResult,
    TestSpec,
)
from rubric.loader import load_rubric
from sandbox.environment import plan_key, undated_lines
from sandbox.resolve import DATED_PIP, UPLOADED_BEFORE, resolve_script

URL_QUOTE = ("ImportError while loading conftest '/sandbox/repo/tests/conftest.py'.\nsrc/flask/app.py:28: in <module>\n"
             "    from werkzeug.urls import url_quote\nE   ImportError: cannot import name 'url_quote' from "
             "'werkzeug.urls' (/opt/logomesh/envs/venv/lib/python3.11/site-packages/werkzeug/urls.py)")
BASE_DATE = "2023-04-12T09:30:00+02:00"


def ran(*cases: TestCaseResult, status: str = "ran", reason: str | None = None) -> TestRunResult:
    return TestRunResult(status=status, reason=reason, tests=cases,
                         passed=sum(c.outcome == "passed" for c in cases),
                         failed=sum(c.outcome == "failed" for c in cases))


def failing(name: str, message: str) -> TestCaseResult:
    return TestCaseResult(name=name, outcome="failed", message=message)


def passing(name: str) -> TestCaseResult:
    return TestCaseResult(name=name, outcome="passed")


BROKEN = ran(status="error", reason="pytest stopped before running any test (exit code 4): " + URL_QUOTE)
CLEAN = ran(passing("tests/test_app.py::test_index"), passing("tests/test_app.py::test_quote"))


def test_drift_is_a_name_or_attribute_a_third_party_module_no_longer_has() -> None:
    assert drift(BROKEN, own={"flask"}) == "cannot import name 'url_quote' from 'werkzeug.urls'"
    gone = ran(failing("tests/test_basic.py::test_session", "AttributeError: module 'werkzeug' has no attribute "
                       "'__version__'"))
    assert drift(gone, own={"flask"}) == "module 'werkzeug' has no attribute '__version__'"
    moved = ran(status="env_error", reason="ModuleNotFoundError: No module named 'attr.validators_v2'")
    assert drift(moved, own=set()) == "No module named 'attr.validators_v2'"
    build = ran(status="env_error", reason="the tests could not import what they need: No module named 'yaml'; "
                "the project's editable install failed: AttributeError: cython_sources")
    assert drift(build, own={"yaml"}) == "the project's editable install failed"


def test_the_repository_s_own_code_the_standard_library_and_plain_failures_are_not_drift() -> None:
    own = ran(status="error", reason="ImportError: cannot import name 'url_quote' from 'flask.helpers'")
    assert drift(own, own={"flask"}) is None
    stdlib = ran(failing("tests/test_a.py::test_a", "AttributeError: module 'collections' has no attribute "
                         "'Mapping'"))
    assert drift(stdlib, own=set()) is None
    missing = ran(status="env_error", reason="ModuleNotFoundError: No module named 'werkzeug'")  # not installed
    assert drift(missing, own=set()) is None
    assert drift(ran(failing("tests/test_a.py::test_a", "assert 2 == 3")), own=set()) is None
    assert drift(CLEAN, own=set()) is None


def test_dated_runs_are_kept_only_when_the_base_measures_more_and_the_head_no_less() -> None:
    regression = ran(passing("tests/test_app.py::test_index"), failing("tests/test_app.py::test_quote", "assert"))
    assert better((CLEAN, CLEAN), (BROKEN, BROKEN))
    assert better((CLEAN, regression), (BROKEN, BROKEN))  # a real regression is measured, not hidden
    assert not better((CLEAN, BROKEN), (BROKEN, CLEAN))  # the head measured today: no worse head for a base
    assert not better((BROKEN, BROKEN), (BROKEN, BROKEN))
    assert not better((ran(status="env_error"), CLEAN), (BROKEN, CLEAN))


def test_a_dated_environment_is_its_own_cache_entry_resolved_by_a_pip_that_knows_the_date() -> None:
    assert plan_key("3.11", ["werkzeug"]) == plan_key("3.11", ["werkzeug"], None)
    assert plan_key("3.11", ["werkzeug"], BASE_DATE) != plan_key("3.11", ["werkzeug"])
    script = resolve_script("python3", "/r.txt", dated=True)
    # pip itself comes from today's index (the date would pick a pip without the option); the set from the date's
    assert f"env -u {UPLOADED_BEFORE} " in script and f"'{DATED_PIP}'" in script
    assert script.index(DATED_PIP) < script.index("--dry-run")
    assert DATED_PIP not in resolve_script("python3", "/r.txt")


class RecordedSandbox:
    """Answers each run from a table by (tree, dated?), recording the specs it was asked for."""

    def __init__(self, today: dict[str, TestRunResult], dated: dict[str, TestRunResult]) -> None:
        self.today, self.dated = today, dated
        self.asked: list[TestSpec] = []

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        self.asked.append(spec)
        table = self.dated if spec.dependencies_as_of else self.today
        return table[spec.tree].model_copy(update={"tree": spec.tree})

    async def run_probe(self, *args: object, **kwargs: object) -> object:  # pragma: no cover - not asked here
        raise AssertionError("no probe here")


APP = ChangedFile(path="src/flask/app.py", status="modified", added_lines=(1,), content="x = 1\n")


def review_tests(sandbox: RecordedSandbox, *, base_date: str | None = BASE_DATE,
                 spec: TestSpec | None = None) -> tuple[object, list[TestSpec]]:
    case = Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=(APP,), base_committed_at=base_date,
                head_paths=("src/flask/__init__.py", "src/flask/app.py", "tests/test_app.py"),
                test_spec=spec or TestSpec())
    rubric = load_rubric()
    rubric = rubric.model_copy(update={"testing": rubric.testing.model_copy(update={"reruns": 0})})
    report = asyncio.run(TestRunner(sandbox).investigate(case, rubric))  # type: ignore[arg-type]
    return report, sandbox.asked


def test_a_base_broken_by_today_s_releases_is_measured_among_its_day_s_releases() -> None:
    sandbox = RecordedSandbox({"head": BROKEN, "base": BROKEN}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    assert [s.dependencies_as_of for s in asked] == [None, None, BASE_DATE, BASE_DATE]
    assert report.differential.status == "measured" and report.tests.passed == 2  # type: ignore[attr-defined]
    drifted = [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]
    assert len(drifted) == 1 and BASE_DATE in drifted[0].summary and "url_quote" in drifted[0].summary


def test_a_change_that_itself_imports_a_removed_name_gets_no_dated_environment() -> None:
    # the base runs clean today; only the head (the change) imports what today's release removed
    sandbox = RecordedSandbox({"head": BROKEN, "base": CLEAN}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    assert all(s.dependencies_as_of is None for s in asked)
    assert not [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]


def test_no_dated_environment_without_a_date_an_operator_s_environment_or_a_better_measure() -> None:
    assert all(s.dependencies_as_of is None for s in review_tests(
        RecordedSandbox({"head": BROKEN, "base": BROKEN}, {"head": CLEAN, "base": CLEAN}), base_date=None)[1])
    configured = TestSpec.model_validate({"environment": {"requirements": ["werkzeug<3"]}})
    assert all(s.dependencies_as_of is None for s in review_tests(
        RecordedSandbox({"head": BROKEN, "base": BROKEN}, {"head": CLEAN, "base": CLEAN}), spec=configured)[1])
    worse = ran(status="env_error", reason="installing the environment failed: nothing could be downloaded")
    report, asked = review_tests(RecordedSandbox({"head": BROKEN, "base": BROKEN}, {"head": worse, "base": worse}))
    # the base runs first in the other environment; it helps not, so the head is not run again
    assert [(s.dependencies_as_of, s.tree) for s in asked] == [(None, "head"), (None, "base"), (BASE_DATE, "base")]
    assert report.tests.status == "error"  # type: ignore[attr-defined]
    assert not [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]


# --- pytest broke inside itself under the chosen interpreter: another one the project admits --------------------

def planned(python: str, requires: str | None = ">=3.9") -> EnvironmentPlan:
    return EnvironmentPlan(python=python, offered=("3.11", "3.13"), requires_python=requires)


BROKE = ran(status="error", reason="pytest stopped with an internal error after 56 of 700 tests: RuntimeError: "
            "generator raised StopIteration").model_copy(update={"environment": planned("3.11")})


def test_another_interpreter_only_for_pytest_s_own_break_and_only_one_the_project_admits() -> None:
    assert other_interpreter(BROKE) == "3.13"
    assert other_interpreter(BROKE.model_copy(update={"environment": planned("3.11", "<3.12")})) is None
    assert other_interpreter(BROKE.model_copy(update={"environment": planned("3.13")})) == "3.11"
    timeout = BROKE.model_copy(update={"status": "timeout", "reason": "killed: wall-clock timeout after 300 s"})
    assert other_interpreter(timeout) is None
    assert other_interpreter(CLEAN.model_copy(update={"environment": planned("3.11")})) is None


class InterpreterSandbox(RecordedSandbox):
    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        self.asked.append(spec)
        table = self.dated if spec.python == "3.13" else self.today
        return table[spec.tree].model_copy(update={"tree": spec.tree})


def test_a_base_pytest_broke_under_one_interpreter_runs_under_another_and_says_so() -> None:
    sandbox = InterpreterSandbox({"head": BROKE, "base": BROKE}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    assert [s.python for s in asked] == [None, None, "3.13", "3.13"]
    said = [e for e in report.evidence if e.kind == "interpreter-fallback"]  # type: ignore[attr-defined]
    assert len(said) == 1 and "Python 3.13" in said[0].summary and "internal error" in said[0].summary
    assert report.differential.status == "measured"  # type: ignore[attr-defined]


def test_a_change_that_breaks_pytest_itself_gets_no_other_interpreter() -> None:
    sandbox = InterpreterSandbox({"head": BROKE, "base": CLEAN}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    assert all(s.python is None for s in asked)
    assert report.tests.status == "error"  # type: ignore[attr-defined]


def broke_in(innermost: str) -> TestRunResult:
    return BROKE.model_copy(update={"reason": (
        "pytest stopped with an internal error after 56 of 696 tests: RuntimeError: generator raised StopIteration; "
        "pytest's last lines:\nINTERNALERROR>   File \"/opt/logomesh/envs/project/lib/python3.11/site-packages/_pytest/"
        "_code/code.py\", line 219, in get_python_framesummary\nINTERNALERROR>     stack_summary = extract_tb(self."
        f"_rawentry, limit=1)\nINTERNALERROR>   File \"{innermost}\", line 74, in extract_tb\n"
        "INTERNALERROR>     return StackSummary._extract_from_extended_frame_gen(")})


def test_pytest_breaking_inside_the_interpreter_at_head_runs_under_another_interpreter() -> None:
    """pydantic-settings#924: Debian's Python 3.11.2 ``traceback.extract_tb`` raises inside pytest's report of a
    failing documentation example at head; under 3.13 the run completes."""
    stdlib = broke_in("/usr/lib/python3.11/traceback.py")
    assert interpreter_broke(stdlib)
    assert not interpreter_broke(broke_in("/opt/logomesh/envs/project/lib/python3.11/site-packages/pytest_x/p.py"))
    assert not interpreter_broke(broke_in("/sandbox/repo/conftest.py"))
    assert not interpreter_broke(BROKE)  # no frame: nothing says the interpreter
    sandbox = InterpreterSandbox({"head": stdlib, "base": CLEAN}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    assert [s.python for s in asked] == [None, None, "3.13", "3.13"]
    said = [e for e in report.evidence if e.kind == "interpreter-fallback"]  # type: ignore[attr-defined]
    assert len(said) == 1 and "at the head commit" in said[0].summary and said[0].facts["broke_at"] == "head"
    assert report.tests.status == "ran"  # type: ignore[attr-defined]
    # hostile twins: the change's own conftest breaking pytest gets no other interpreter; and where the other
    # interpreter breaks the base (or does not mend the head), today's runs stand, the head's break charged
    own = InterpreterSandbox({"head": broke_in("/sandbox/repo/conftest.py"), "base": CLEAN},
                             {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(own)
    assert all(s.python is None for s in asked) and report.tests.status == "error"  # type: ignore[attr-defined]
    for dated in ({"head": CLEAN, "base": BROKE}, {"head": stdlib, "base": CLEAN}):
        report, asked = review_tests(InterpreterSandbox({"head": stdlib, "base": CLEAN}, dated))
        assert len(asked) == 4 and report.tests.status == "error"  # type: ignore[attr-defined]
        assert not [e for e in report.evidence if e.kind == "interpreter-fallback"]  # type: ignore[attr-defined]


# --- an old base with failing tests: its day's releases are tried, kept only when they measure more --------------

OLD_FAILING = ran(passing("testing/test_a.py::test_ok"),
                  failing("testing/acceptance_test.py::TestGroupScope::test_by_class", "assert {} == {'gw0': 3}"))


def test_failures_at_an_old_base_are_tried_with_its_day_s_releases_and_a_recent_base_s_are_not() -> None:
    now = datetime(2026, 11, 26, tzinfo=UTC)
    said = stale_failures(OLD_FAILING, "2025-05-12T22:33:00+02:00", now)
    assert said is not None and said.startswith("1 test(s) fail at the base commit, 562 days old")
    assert stale_failures(OLD_FAILING, "2026-10-01T00:00:00+00:00", now) is None  # recent: today's releases are its
    assert stale_failures(CLEAN, "2025-05-12T22:33:00+02:00", now) is None  # nothing fails
    assert stale_failures(OLD_FAILING, None, now) is None and stale_failures(OLD_FAILING, "not a date", now) is None


def test_an_old_base_s_failures_that_its_day_s_releases_fix_are_measured_with_them() -> None:
    old = "2025-05-12T22:33:00+02:00"
    sandbox = RecordedSandbox({"head": OLD_FAILING, "base": OLD_FAILING}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox, base_date=old)
    assert [s.dependencies_as_of for s in asked] == [None, None, old, old]
    assert [e.kind for e in report.evidence][:1] == ["dependency-drift"]  # type: ignore[attr-defined]
    # hostile: the same releases do not help (the failure is the code's): today's runs stay, the failure charged
    same = RecordedSandbox({"head": OLD_FAILING, "base": OLD_FAILING}, {"head": OLD_FAILING, "base": OLD_FAILING})
    report, asked = review_tests(same, base_date=old)
    assert len(asked) == 3 and not [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]


def test_nothing_installed_from_an_index_is_never_dated() -> None:
    bare = OLD_FAILING.model_copy(update={"environment": EnvironmentPlan(python="3.11", requirements=())})
    sandbox = RecordedSandbox({"head": bare, "base": bare}, {"head": CLEAN, "base": CLEAN})
    _report, asked = review_tests(sandbox, base_date="2025-05-12T22:33:00+02:00")
    assert all(s.dependencies_as_of is None for s in asked) and len(asked) == 2


# --- pytest's own stack pinned to releases that do not start under the sandbox's interpreter --------------------

# markupsafe#224's base: requirements/tests.txt pins pytest and py of 2020; py's apipkg fails on Python 3.11
APIPKG = ("pytest ended (exit code 1) before LogoMesh's collector could report: something the run loaded stopped the "
          "process early (os._exit, a plugin's exit, a crash); pytest's last lines:\n  File \"/sandbox/logomesh/"
          "collector.py\", line 25, in <module>\n    import pytest\n  File \"/opt/logomesh/envs/project/lib/python3.11/"
          "site-packages/_pytest/fixtures.py\", line 11, in <module>\n    from py._code.code import FormattedExcinfo\n"
          "  File \"<frozen importlib._bootstrap>\", line 1178, in _find_and_load\n  File \"/opt/logomesh/envs/project"
          "/lib/python3.11/site-packages/py/_vendored_packages/apipkg/__init__.py\", line 150, in __makeattr\n    "
          "raise AttributeError(name)\nAttributeError: __spec__")
PINNED = EnvironmentPlan(python="3.11", requirements=("pytest==6.1.2", "py==1.9.0", "pytest-cov>=2.8", "pluggy",
                                                      "attrs==20.2.0", "-e ."))
TOOLING_BROKE = ran(status="error", reason=APIPKG).model_copy(update={"environment": PINNED})


class ToolingSandbox(RecordedSandbox):
    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        self.asked.append(spec)
        table = self.dated if spec.unpinned else self.today
        return table[spec.tree].model_copy(update={"tree": spec.tree})


def test_pins_that_keep_pytest_from_starting_are_lifted_for_pytest_s_own_stack_only() -> None:
    from checks.dependency_drift import broken_tooling

    # pytest-cov is pinned by a lower bound: lifted too; pluggy is not pinned, attrs is not pytest's: kept
    assert broken_tooling(TOOLING_BROKE) == ("py", "pytest", "pytest-cov")
    # hostile twins: the project's own code, a plugin of its own or the standard library breaking: nothing lifted
    for innermost in ("/sandbox/repo/conftest.py", "/usr/lib/python3.11/traceback.py",
                      "/opt/logomesh/envs/project/lib/python3.11/site-packages/attr/_make.py"):
        other = TOOLING_BROKE.model_copy(update={"reason": APIPKG.replace(
            "/opt/logomesh/envs/project/lib/python3.11/site-packages/py/_vendored_packages/apipkg/__init__.py",
            innermost)})
        assert broken_tooling(other) == (), innermost
    # a run that reported tests is not pytest failing to start; nothing pinned: nothing to lift
    assert broken_tooling(TOOLING_BROKE.model_copy(update={"tests": CLEAN.tests})) == ()
    bare = EnvironmentPlan(python="3.11", requirements=("pytest", "py"))
    unpinned = TOOLING_BROKE.model_copy(update={"environment": bare})
    assert broken_tooling(unpinned) == ()


def test_a_base_whose_pinned_pytest_cannot_start_runs_with_today_s_pytest_and_says_so() -> None:
    sandbox = ToolingSandbox({"head": TOOLING_BROKE, "base": TOOLING_BROKE}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox, base_date=None)
    assert [s.unpinned for s in asked] == [(), (), ("py", "pytest", "pytest-cov"), ("py", "pytest", "pytest-cov")]
    said = [e for e in report.evidence if e.kind == "test-tooling-fallback"]  # type: ignore[attr-defined]
    assert len(said) == 1 and "py, pytest, pytest-cov" in said[0].summary and "__spec__" in said[0].summary
    assert report.differential.status == "measured"  # type: ignore[attr-defined]
    # hostile: a change that pins a broken pytest itself (the base starts) gets nothing lifted, its break charged
    own = ToolingSandbox({"head": TOOLING_BROKE, "base": CLEAN}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(own, base_date=None)
    assert all(not s.unpinned for s in asked) and report.tests.status == "error"  # type: ignore[attr-defined]
    # and lifted pins that measure no more leave today's runs standing
    report, asked = review_tests(ToolingSandbox({"head": TOOLING_BROKE, "base": TOOLING_BROKE},
                                                {"head": TOOLING_BROKE, "base": TOOLING_BROKE}), base_date=None)
    assert len(asked) == 3 and not [e for e in report.evidence  # type: ignore[attr-defined]
                                    if e.kind == "test-tooling-fallback"]


def test_lifting_pins_keeps_extras_markers_and_other_requirements() -> None:
    from sandbox.environment import lift_pins

    lines = ("pytest==6.1.2; python_version >= '3'", "Py>=1.8,<1.10", "pytest-cov[toml]~=2.8", "attrs==20.2.0",
             "pytest-x @ https://example.invalid/x.tar.gz", "-e .")
    assert lift_pins(lines, ("pytest", "py", "pytest-cov", "pytest-x")) == (
        'pytest; python_version >= "3"', "Py", "pytest-cov[toml]", "attrs==20.2.0",
        "pytest-x @ https://example.invalid/x.tar.gz", "-e .")


# --- the day's releases of pytest's own stack cannot start either (markupsafe#64, alembic#825) -------------------

# markupsafe#64's base (May 2018): today's releases do not install it, its day's give pytest 3.5 and py 1.5, whose
# apipkg fails under Python 3.11 — nothing of the stack is pinned by a version, the date pins it
DATED = EnvironmentPlan(python="3.11", requirements=("pytest", "py", "pytest-cov", "attrs"), uploaded_before=BASE_DATE)
DATED_BROKE = ran(status="error", reason=APIPKG).model_copy(update={"environment": DATED})
STACK = ("iniconfig", "pluggy", "py", "pytest", "pytest-cov")


class DatedToolingSandbox(RecordedSandbox):
    """Today's releases break the base; the day's break pytest itself; the day's with the stack undated run."""

    def __init__(self, undated: dict[str, TestRunResult]) -> None:
        super().__init__({"head": BROKEN, "base": BROKEN}, {"head": DATED_BROKE, "base": DATED_BROKE})
        self.undated = undated

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        if spec.dependencies_as_of and spec.unpinned:
            self.asked.append(spec)
            return self.undated[spec.tree].model_copy(update={"tree": spec.tree})
        return await super().run_tests(spec)


def test_in_an_environment_of_the_base_s_day_pytest_s_own_stack_is_pinned_by_the_date() -> None:
    from checks.dependency_drift import broken_tooling

    # the whole stack, listed or brought in by another requirement, and the plugins listed; attrs is not pytest's
    assert broken_tooling(DATED_BROKE) == STACK
    # already taken among today's releases: nothing more to lift (no loop)
    done = DATED_BROKE.model_copy(update={"environment": DATED.model_copy(update={"undated": STACK})})
    assert broken_tooling(done) == ()
    # what the undated resolution is asked for: the lines naming the stack, and the bare names of the rest
    assert undated_lines(DATED.model_copy(update={"undated": STACK})) == (
        "pytest", "py", "pytest-cov", "iniconfig", "pluggy")
    # the same stack, undated and unpinned: today's releases are what it ran with
    assert broken_tooling(DATED_BROKE.model_copy(update={"environment": DATED.model_copy(
        update={"uploaded_before": None})})) == ()
    assert plan_key("3.11", ["pytest"], BASE_DATE, ("pytest",)) != plan_key("3.11", ["pytest"], BASE_DATE)
    assert plan_key("3.11", ["pytest"], None, ("pytest",)) == plan_key("3.11", ["pytest"])


def test_a_base_whose_day_s_pytest_cannot_start_runs_with_today_s_stack_and_the_day_s_rest() -> None:
    sandbox = DatedToolingSandbox({"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    # the day's base breaks as today's did: its head is not run; the base with the stack undated measures more
    assert [(s.dependencies_as_of, s.unpinned, s.tree) for s in asked] == [
        (None, (), "head"), (None, (), "base"), (BASE_DATE, (), "base"), (BASE_DATE, STACK, "base"),
        (BASE_DATE, STACK, "head")]
    said = [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]
    assert len(said) == 1 and BASE_DATE in said[0].summary and "py, pytest, pytest-cov from today's releases" in \
        said[0].summary and "__spec__" in said[0].summary and said[0].facts["undated"] == list(STACK)
    assert report.differential.status == "measured" and report.tests.passed == 2  # type: ignore[attr-defined]
    # hostile: the undated stack measures no more (the change's own break) — the dated runs stand, nothing said of it
    report, asked = review_tests(DatedToolingSandbox({"head": DATED_BROKE, "base": DATED_BROKE}))
    assert len(asked) == 4
    said = [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]
    assert all("today's releases" not in e.summary for e in said)
    # a base that starts with its day's releases is never given today's stack
    sandbox = DatedToolingSandbox({"head": CLEAN, "base": CLEAN})
    sandbox.dated = {"head": CLEAN, "base": CLEAN}
    _report, asked = review_tests(sandbox)
    assert all(not s.unpinned for s in asked) and len(asked) == 4


# alembic#825's base (March 2021): the day's pytest 6.2.2 and py 1.10.0 cannot start under Python 3.11; pytest 6.2.5
# (the newest of its line) with py 1.11.0 does, and still collects from SQLAlchemy 1.4's plugin — pytest 7.2, the
# stack of a while after 3.11's release, collects nothing from it
DAY_SETUP = SetupReport(status="installed", resolved=("pytest==6.2.2", "py==1.10.0", "pluggy==0.13.1",
                                                     "pytest-cov==2.11.1", "attrs==20.3.0"))
LINES = ("pluggy>=0.13.1,<0.14", "py>=1.10.0,<2", "pytest>=6.2.2,<7", "pytest-cov>=2.11.1,<3")
COLLECTED_NOTHING = ran()


def test_the_day_s_stack_is_bounded_to_its_release_lines() -> None:
    from checks.dependency_drift import within_lines
    from sandbox.environment import lift_pins

    day = DATED_BROKE.model_copy(update={"setup": DAY_SETUP})
    # iniconfig was not installed that day: nothing to bound it by; attrs is not in the stack
    assert within_lines(STACK, day) == LINES
    assert within_lines(STACK, DATED_BROKE) == ()  # no resolved set: the whole stack is lifted instead
    # a bounded entry names its project: its pin is lifted, and the undated resolution is given the bound
    assert lift_pins(("pytest==6.2.2", "attrs==20.3.0"), LINES) == ("pytest", "attrs==20.3.0")
    plan = DATED.model_copy(update={"undated": LINES})
    assert undated_lines(plan) == ("pytest<7,>=6.2.2", "py<2,>=1.10.0", "pytest-cov<3,>=2.11.1",
                                   "pluggy<0.14,>=0.13.1")


class LinesSandbox(RecordedSandbox):
    """Today's releases break the base; the day's break pytest itself; the day's lines' newest (``>=`` bounds) and
    the stack of a while later (bare names) give what the tables say."""

    def __init__(self, lines: dict[str, TestRunResult], later: dict[str, TestRunResult]) -> None:
        dated = DATED_BROKE.model_copy(update={"setup": DAY_SETUP})
        super().__init__({"head": BROKEN, "base": BROKEN}, {"head": dated, "base": dated})
        self.lines, self.later = lines, later

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        if spec.dependencies_as_of and spec.unpinned:
            self.asked.append(spec)
            table = self.lines if any(">=" in entry for entry in spec.unpinned) else self.later
            return table[spec.tree].model_copy(update={"tree": spec.tree})
        return await super().run_tests(spec)


def test_the_newest_releases_of_the_day_s_lines_are_tried_before_a_later_stack() -> None:
    sandbox = LinesSandbox({"head": CLEAN, "base": CLEAN}, {"head": COLLECTED_NOTHING, "base": COLLECTED_NOTHING})
    report, asked = review_tests(sandbox)
    assert [(s.unpinned, s.tree) for s in asked[2:]] == [((), "base"), (LINES, "base"), (LINES, "head")]
    said = [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]
    assert len(said) == 1 and said[0].facts["undated"] == list(LINES) and "pytest>=6.2.2,<7" in said[0].summary
    assert report.differential.status == "measured" and report.tests.passed == 2  # type: ignore[attr-defined]
    # the lines' newest cannot start pytest either: the later stack is tried, and kept when it measures more
    sandbox = LinesSandbox({"head": DATED_BROKE, "base": DATED_BROKE}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    assert [(s.unpinned, s.tree) for s in asked[2:]] == [((), "base"), (LINES, "base"), (STACK, "base"),
                                                          (STACK, "head")]
    assert report.tests.passed == 2  # type: ignore[attr-defined]
    # hostile (markupsafe#64 of 2018: the newest pytest 3 starts under Python 3.11, then its assertion rewriting
    # breaks every test module): a stack under which no test passes at base is not kept, however fewer its errors —
    # else the head would be judged alone on the stack's own failures; the later stack is tried, and when it measures
    # no more either, the day's runs stand
    broke = 'TypeError: required field "lineno" missing from alias'
    rewrite = ran(failing("tests/test_escape.py", broke), failing("tests/test_markupsafe.py", broke))
    sandbox = LinesSandbox({"head": rewrite, "base": rewrite}, {"head": DATED_BROKE, "base": DATED_BROKE})
    report, asked = review_tests(sandbox)
    assert [(s.unpinned, s.tree) for s in asked[2:]] == [((), "base"), (LINES, "base"), (LINES, "head"),
                                                          (STACK, "base")]
    assert report.tests.status == "error"  # type: ignore[attr-defined]
    assert not [e for e in report.evidence if e.kind == "dependency-drift"  # type: ignore[attr-defined]
                and "undated" in e.facts]


def test_the_dated_resolution_takes_the_undated_stack_from_local_files_named_by_their_index_urls(
        tmp_path: object) -> None:
    import json
    import subprocess
    import sys
    from pathlib import Path

    from sandbox.resolve import CONDENSE, parse_resolved

    script = resolve_script("python3", "/r.txt", dated=True, undated_file="/u.txt")
    undated_at = script.index("--report /tmp/logomesh-resolve/undated.json")
    # today's releases of the stack are resolved and downloaded without the date, before the dated resolution,
    # which is offered them as local files
    assert script.rfind("env -u", 0, undated_at) > script.index(DATED_PIP)
    assert "pip download --quiet --dest /tmp/logomesh-resolve/undated -r /u.txt" in script
    assert "--find-links /tmp/logomesh-resolve/undated" in script.split("--report /tmp/logomesh-resolve/report.json")[1]
    assert "--find-links" not in resolve_script("python3", "/r.txt", dated=True)
    assert "undated" not in resolve_script("python3", "/r.txt", undated_file="/u.txt")  # nothing dated: moot
    index = "https://files.example/packages/pytest-9.0.1-py3-none-any.whl"
    dated = {"install": [
        {"metadata": {"name": "pytest", "version": "9.0.1"}, "download_info": {
            "url": "file:///tmp/logomesh-resolve/undated/pytest-9.0.1-py3-none-any.whl",
            "archive_info": {"hashes": {"sha256": "1" * 64}}}},
        {"metadata": {"name": "attrs", "version": "18.1.0"}, "download_info": {
            "url": "https://files.example/packages/attrs-18.1.0-py2.py3-none-any.whl",
            "archive_info": {"hash": "sha256=" + "2" * 64}}},
        {"metadata": {"name": "local", "version": "1"}, "download_info": {
            "url": "file:///elsewhere/local-1-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "3" * 64}}}}]}
    today = {"install": [{"metadata": {"name": "pytest", "version": "9.0.1"}, "download_info": {
        "url": index, "archive_info": {"hashes": {"sha256": "4" * 64}}}}]}
    root = Path(str(tmp_path))
    (root / "report.json").write_text(json.dumps(dated))
    (root / "undated.json").write_text(json.dumps(today))
    out = subprocess.run([sys.executable, "-I", "-S", "-c", CONDENSE, str(root / "report.json"),
                          str(root / "undated.json"), str(root / "missing.json")],
                         capture_output=True, text=True, check=True).stdout
    found = {a.name: a for a in parse_resolved(out) or ()}
    assert (found["pytest"].url, found["pytest"].sha256) == (index, "4" * 64)  # the index's file, by its hash
    assert found["attrs"].sha256 == "2" * 64
    assert found["local"].url.startswith("file:")  # a local file nobody resolved from the index stays as it was


def test_the_stack_is_taken_as_of_some_weeks_after_the_interpreter_s_first_release() -> None:
    from sandbox.resolve import TOOLING_GRACE_DAYS, tooling_before

    assert TOOLING_GRACE_DAYS == 60
    # markupsafe#64's day (2018): pytest's stack of late 2022 for Python 3.11 — not today's, whose pytest 9
    # refuses the plugins of that time (SQLAlchemy 1.4's type="string" options)
    assert tooling_before("3.11", "2018-05-04T08:06:23-07:00") == "2022-12-23T00:00:00+00:00"
    assert tooling_before("3.13", "2021-03-29T16:44:36-04:00") == "2024-12-06T00:00:00+00:00"
    # a day later than that keeps the day; an interpreter not in the table, or no date: today's releases
    assert tooling_before("3.11", "2023-06-01T00:00:00+00:00") == "2023-06-01T00:00:00+00:00"
    assert tooling_before("3.99", BASE_DATE) is None and tooling_before("3.11", "not a date") is None
    script = resolve_script("python3", "/r.txt", dated=True, undated_file="/u.txt",
                            undated_before="2022-12-23T00:00:00+00:00")
    first = script.split("--report /tmp/logomesh-resolve/undated")[0]
    assert f"env {UPLOADED_BEFORE}=2022-12-23T00:00:00+00:00 " in first


# --- a base whose code calls what the standard library has since removed: an older interpreter -------------------

def offered_three(python: str, requires: str | None = None) -> EnvironmentPlan:
    return EnvironmentPlan(python=python, offered=("3.9", "3.11", "3.13"), requires_python=requires)


MAPPING = "AttributeError: module 'collections' has no attribute 'Mapping'"
REMOVED = ran(failing("tests/test_markupsafe.py::test_markup_operations", MAPPING),
              failing("tests/test_escape.py::test_escape", MAPPING)).model_copy(
    update={"environment": offered_three("3.11")})


def test_stdlib_drift_is_a_name_or_module_the_standard_library_removed_and_nothing_else() -> None:
    assert stdlib_drift(REMOVED) == "module 'collections' has no attribute 'Mapping'"
    imported = ran(status="error", reason="ImportError while importing test module '/sandbox/repo/tests/t.py'.\n"
                   "E   ImportError: cannot import name 'Mapping' from 'collections' (/usr/lib/python3.11/collections/"
                   "__init__.py)")
    assert stdlib_drift(imported) == "cannot import name 'Mapping' from 'collections'"
    gone = ran(status="env_error", reason="ModuleNotFoundError: No module named 'distutils'")
    assert stdlib_drift(gone) == "No module named 'distutils'"
    # a third-party module's drift, the project's own names, a module never installed and plain failures are not
    assert stdlib_drift(BROKEN) is None
    assert stdlib_drift(ran(status="error", reason="ImportError: cannot import name 'x' from 'flask.helpers'")) is None
    assert stdlib_drift(ran(status="env_error", reason="ModuleNotFoundError: No module named 'yaml'")) is None
    assert stdlib_drift(ran(failing("tests/test_a.py::test_a", "assert 2 == 3"))) is None
    assert stdlib_drift(CLEAN) is None


def test_the_older_interpreter_is_the_oldest_offered_one_the_project_admits() -> None:
    assert older_interpreter(REMOVED) == "3.9"
    assert older_interpreter(REMOVED.model_copy(update={"environment": offered_three("3.13")})) == "3.9"
    assert older_interpreter(REMOVED.model_copy(update={"environment": offered_three("3.13", ">=3.10")})) == "3.11"
    assert older_interpreter(REMOVED.model_copy(update={"environment": offered_three("3.11", ">=3.10")})) is None
    assert older_interpreter(REMOVED.model_copy(update={"environment": offered_three("3.9")})) is None
    assert older_interpreter(ran(failing("t.py::t", MAPPING))) is None  # no plan: nothing to choose among


class OlderSandbox(RecordedSandbox):
    """Answers from ``older`` under Python 3.9, from ``dated``/``today`` otherwise."""

    def __init__(self, today: dict[str, TestRunResult], dated: dict[str, TestRunResult],
                 older: dict[str, TestRunResult]) -> None:
        super().__init__(today, dated)
        self.older = older

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        if spec.python == "3.9":
            self.asked.append(spec)
            return self.older[spec.tree].model_copy(update={"tree": spec.tree})
        return await super().run_tests(spec)


def test_a_base_calling_what_the_standard_library_removed_runs_under_an_older_interpreter() -> None:
    regression = ran(passing("tests/test_markupsafe.py::test_markup_operations"),
                     failing("tests/test_escape.py::test_escape", "assert '&lt;' == '<'"))
    sandbox = OlderSandbox({"head": REMOVED, "base": REMOVED}, {"head": REMOVED, "base": REMOVED},
                           {"head": regression, "base": CLEAN})
    report, asked = review_tests(sandbox, base_date=None)
    assert [(s.python, s.tree) for s in asked] == [(None, "head"), (None, "base"), ("3.9", "base"), ("3.9", "head")]
    said = [e for e in report.evidence if e.kind == "interpreter-fallback"]  # type: ignore[attr-defined]
    assert len(said) == 1 and said[0].facts["removed"] == "module 'collections' has no attribute 'Mapping'"
    assert "Python 3.9" in said[0].summary and "standard library" in said[0].summary
    # the head's real failure under the base's interpreter is measured, not hidden by the environment
    assert report.differential.status == "measured"  # type: ignore[attr-defined]
    assert report.tests.failed == 1  # type: ignore[attr-defined]


def test_a_change_that_itself_calls_a_removed_name_gets_no_older_interpreter() -> None:
    sandbox = OlderSandbox({"head": REMOVED, "base": CLEAN.model_copy(update={"environment": offered_three("3.11")})},
                           {"head": CLEAN, "base": CLEAN}, {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox, base_date=None)
    assert all(s.python is None for s in asked)
    assert report.tests.failed == 2  # type: ignore[attr-defined]
    assert not [e for e in report.evidence if e.kind == "interpreter-fallback"]  # type: ignore[attr-defined]


def test_the_day_s_releases_are_tried_under_the_day_s_interpreter_when_the_standard_library_moved_on() -> None:
    """markupsafe#64 (2018): today's releases cannot install it, its day's cannot start pytest under 3.11, and the
    stacks that start there meet its ``collections.Mapping``: the day's releases under 3.9 measure it."""
    dated_removed = REMOVED.model_copy(update={"setup": DAY_SETUP})
    sandbox = OlderSandbox({"head": BROKEN, "base": BROKEN}, {"head": dated_removed, "base": dated_removed},
                           {"head": CLEAN, "base": CLEAN})
    report, asked = review_tests(sandbox)
    assert [(s.dependencies_as_of, s.python, s.tree) for s in asked[2:]] == [
        (BASE_DATE, None, "base"), (BASE_DATE, None, "head"), (BASE_DATE, "3.9", "base"), (BASE_DATE, "3.9", "head")]
    said = [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]
    assert len(said) == 1 and said[0].facts["python"] == "3.9" and "Python 3.9" in said[0].summary
    assert report.differential.status == "measured" and report.tests.passed == 2  # type: ignore[attr-defined]
    # hostile: under the older interpreter no test passes at base either: nothing is kept, the day's break stands
    sandbox = OlderSandbox({"head": BROKEN, "base": BROKEN}, {"head": dated_removed, "base": dated_removed},
                           {"head": CLEAN, "base": REMOVED})
    report, asked = review_tests(sandbox)
    assert [(s.python, s.tree) for s in asked[2:]] == [(None, "base"), (None, "head"), ("3.9", "base")]
    assert not [e for e in report.evidence if e.facts.get("python") == "3.9"]  # type: ignore[attr-defined]


class OlderLinesSandbox(LinesSandbox):
    """As :class:`LinesSandbox`, and under Python 3.9 every tree runs clean."""

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        if spec.python == "3.9":
            self.asked.append(spec)
            return CLEAN.model_copy(update={"tree": spec.tree})
        return await super().run_tests(spec)


def test_a_removed_standard_library_name_met_by_a_later_stack_sends_the_day_s_releases_to_an_older_interpreter(
        ) -> None:
    """markupsafe#64 as it runs: the day's pytest cannot start under 3.11 (apipkg), the day's lines' newest start and
    break on assertion rewriting, the later stack starts and meets ``collections.Mapping``: the environments are
    tried again under 3.9, the day's releases first, and those are kept."""
    broke = 'TypeError: required field "lineno" missing from alias'
    rewrite = ran(failing("tests/test_escape.py", broke), failing("tests/test_markupsafe.py", broke))
    sandbox = OlderLinesSandbox({"head": rewrite, "base": rewrite}, {"head": REMOVED, "base": REMOVED})
    report, asked = review_tests(sandbox)
    assert [(s.unpinned, s.python, s.tree) for s in asked[2:]] == [
        ((), None, "base"), (LINES, None, "base"), (LINES, None, "head"), (STACK, None, "base"),
        (STACK, None, "head"), ((), "3.9", "base"), ((), "3.9", "head")]
    said = [e for e in report.evidence if e.kind == "dependency-drift"]  # type: ignore[attr-defined]
    assert len(said) == 1 and said[0].facts["python"] == "3.9" and "Mapping" in said[0].summary
    assert report.differential.status == "measured" and report.tests.passed == 2  # type: ignore[attr-defined]
