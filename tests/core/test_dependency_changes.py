"""Dependency changes are evidence: requirements added, removed and re-pinned with the file declaring them and the
versions installed, and start-up code the change brings into the environment holds the verdict back from pass."""

from __future__ import annotations

from checks.chief_justice import rules_of_tests
from checks.dependencies import dependency_changes, project_name, startup_key, startup_severity
from checks.detectives.test_runner import dependency_evidence
from checks.differential import classify
from checks.models import (
    Brief,
    Case,
    ChangedFile,
    DeclaredRequirement,
    EnvironmentPlan,
    RedAnalysis,
    SetupReport,
    TestCaseResult,
    TestRunResult,
)
from sandbox.environment import plan_environment

HOOK = "executable .pth line aaa_lm_swallow.pth:1 (from lm_swallow-1.0.0): import lm_swallow_hook"
COV = "executable .pth line pytest-cov.pth:1 (from pytest_cov-4.1.0): import os, sys;exec('...')"


def plan(*declared: tuple[str, str]) -> EnvironmentPlan:
    return EnvironmentPlan(python="3.11", requirements=tuple(r for r, _ in declared),
                           declared=tuple(DeclaredRequirement(requirement=r, source=s) for r, s in declared))


def ran(environment: EnvironmentPlan, *, startup: tuple[str, ...] = (), resolved: tuple[str, ...] = ()
        ) -> TestRunResult:
    return TestRunResult(status="ran", environment=environment, passed=1,
                         tests=(TestCaseResult(name="tests/test_calc.py::test_add", outcome="passed"),),
                         setup=SetupReport(status="installed", startup=startup, resolved=resolved))


def test_the_plan_names_the_file_declaring_each_requirement() -> None:
    files = {"requirements-test.txt": "lm-plain==1.0.0\n-r requirements.txt\n", "requirements.txt": "attrs>=23\n",
             "pyproject.toml": '[project]\nname = "x"\nversion = "1"\ndependencies = ["attrs>=23", "idna"]\n'}
    found = plan_environment(files.get, sorted(files), ("3.11",))
    sources = {d.requirement: d.source for d in found.declared}
    assert sources["idna"] == "pyproject.toml [project] dependencies"
    assert sources["attrs>=23"] == "pyproject.toml [project] dependencies"  # the first file that asks for it
    assert sources["lm-plain==1.0.0"] == "requirements-test.txt"
    assert [d.requirement for d in found.declared] == list(found.requirements)


def test_added_removed_and_repinned_requirements_with_their_files_and_installed_versions() -> None:
    base = ran(plan(("attrs>=23", "requirements.txt"), ("Idna==3.6", "requirements.txt"),
                    ("six", "requirements.txt")), resolved=("attrs==23.2.0", "idna==3.6", "six==1.16.0"))
    head = ran(plan(("attrs >= 23", "requirements.txt"), ("idna==3.7", "requirements.txt"),
                    ("lm-plain==1.0.0", "requirements-test.txt")),
               resolved=("attrs==23.2.0", "idna==3.7", "lm-plain==1.0.0"))
    changes, startup = dependency_changes(base, head)
    assert startup == ()
    assert [(c.name, c.change, c.source) for c in changes] == [
        ("idna", "repinned", "requirements.txt"), ("lm-plain", "added", "requirements-test.txt"),
        ("six", "removed", "requirements.txt")]
    assert (changes[0].base_resolved, changes[0].head_resolved) == ("3.6", "3.7")
    diff = classify(base, head, None, ()).model_copy(update={"dependencies": changes})
    shown = [e.summary for e in dependency_evidence(diff)]
    assert shown == ["requirements.txt re-pins idna: Idna==3.6 → idna==3.7 (installed: 3.6 → 3.7)",
                     "requirements-test.txt adds lm-plain==1.0.0 (installed: 1.0.0)",
                     "requirements.txt no longer asks for six (installed: 1.16.0)"]
    assert {e.kind for e in dependency_evidence(diff)} == {"dependency-change"}
    assert project_name("Foo_Bar[x]>=1") == "foo-bar"


def verdict_of(base: TestRunResult, head: TestRunResult) -> tuple[str, list[str], list[str]]:
    changes, startup = dependency_changes(base, head)
    diff = classify(base, head, None, ()).model_copy(update={"dependencies": changes, "startup_added": startup})
    brief = Brief(case=Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=(
        ChangedFile(path="calc.py", status="modified", added_lines=(1,), content="x = 1\n"),)),
        evidence=(), tests=head, semantic=None, red=RedAnalysis(), differential=diff,
        components={"rationale": None, "architecture": 0.8, "testing": 0.85})
    reasons: list[str] = []
    return rules_of_tests(brief, "pass", reasons), reasons, [e.summary for e in dependency_evidence(diff)
                                                            if e.kind == "dependency-startup"]


def test_a_pth_line_the_change_brings_in_is_named_but_not_held_against_it() -> None:
    # LogoMesh's test interpreter never runs an executable .pth line (-I -S): shown with package and file
    base = ran(plan(("attrs", "requirements.txt")), resolved=("attrs==23.2.0",))
    head = ran(plan(("attrs", "requirements.txt"), ("lm-swallow==1.0.0", "requirements-test.txt")),
               startup=(HOOK,), resolved=("attrs==23.2.0", "lm-swallow==1.0.0"))
    verdict, reasons, shown = verdict_of(base, head)
    assert verdict == "pass" and not any("Rule of Start-up Code" in r for r in reasons)
    assert shown == [f"start-up code this change brings into the test environment: {HOOK} — lm-swallow is asked "
                     "for by requirements-test.txt (lm-swallow==1.0.0)"]
    assert startup_severity(HOOK) == "medium"


def test_a_sitecustomize_the_change_brings_in_is_not_a_pass_and_names_package_and_file() -> None:
    custom = "sitecustomize.py (from lm_swallow-1.0.0)"
    base = ran(plan(("attrs", "requirements.txt")), resolved=("attrs==23.2.0",))
    head = ran(plan(("attrs", "requirements.txt"), ("lm-swallow==1.0.0", "requirements-test.txt")),
               startup=(custom,), resolved=("attrs==23.2.0", "lm-swallow==1.0.0"))
    verdict, reasons, shown = verdict_of(base, head)
    assert verdict == "neutral"
    assert any("Rule of Start-up Code" in r and "sitecustomize.py (from lm_swallow-1.0.0)" in r for r in reasons)
    assert shown == [f"start-up code this change brings into the test environment: {custom} — lm-swallow is asked "
                     "for by requirements-test.txt (lm-swallow==1.0.0)"]
    assert startup_severity(custom) == "high"


def test_start_up_code_the_base_already_had_is_no_news_even_re_pinned() -> None:
    base = ran(plan(("pytest-cov==4.0", "requirements.txt")), startup=(COV.replace("4.1.0", "4.0.0"),))
    head = ran(plan(("pytest-cov==4.1", "requirements.txt")), startup=(COV,))
    verdict, _reasons, shown = verdict_of(base, head)
    assert (verdict, shown) == ("pass", [])
    assert startup_key(COV) == startup_key(COV.replace("4.1.0", "4.0.0"))
    # without it at base, the same plugin is news, also when it comes in with another requirement
    verdict, _, shown = verdict_of(ran(plan()), ran(plan(("pytest-extras", "requirements.txt")), startup=(COV,)))
    assert verdict == "pass" and len(shown) == 1 and "it comes with the change's dependencies" in shown[0]


def dependency_only_verdict(base: TestRunResult, head: TestRunResult, *paths: str, guarded: bool = True
                            ) -> tuple[str, list[str]]:
    changes, startup = dependency_changes(base, head)
    diff = classify(base, head, None, ()).model_copy(update={"dependencies": changes, "startup_added": startup,
                                                              "guarded": guarded})
    brief = Brief(case=Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=tuple(
        ChangedFile(path=p, status="modified", added_lines=(1,), content="x\n") for p in paths)),
        evidence=(), tests=head, semantic=None, red=RedAnalysis(), differential=diff,
        components={"rationale": None, "architecture": None, "testing": 0.85})
    reasons: list[str] = []
    return rules_of_tests(brief, "pass", reasons), reasons


def test_a_change_to_a_dependency_file_alone_is_judged_on_what_it_installs() -> None:
    base = ran(plan(("attrs", "requirements.txt")), resolved=("attrs==23.2.0",))
    head = ran(plan(("attrs", "requirements.txt"), ("lm-plain==1.0.0", "requirements-test.txt")),
               resolved=("attrs==23.2.0", "lm-plain==1.0.0"))
    verdict, reasons = dependency_only_verdict(base, head, "requirements-test.txt")
    assert verdict == "pass", reasons
    assert reasons == ["Rule of Measurement: judged on the dependencies it changes (requirements-test.txt): "
                       "resolved, installed, verified and tested under the base's tests"]
    # a pyproject.toml's dependency table is named by its file
    pyproject = ran(plan(("attrs", "requirements.txt"), ("lm-plain", "pyproject.toml [project] dependencies")))
    assert dependency_only_verdict(base, pyproject, "pyproject.toml")[0] == "pass"
    # a text file beside it is not read, and does not keep the change from being judged on what was
    assert dependency_only_verdict(base, head, "requirements-test.txt", "NOTES.txt")[0] == "pass"


def test_a_dependency_file_logomesh_did_not_measure_is_not_analysed() -> None:
    base = ran(plan(("attrs", "requirements.txt")), resolved=("attrs==23.2.0",))
    head = ran(plan(("attrs", "requirements.txt"), ("lm-plain==1.0.0", "requirements-test.txt")))
    # a text file that declares nothing the environment installs: nothing of it was measured
    verdict, reasons = dependency_only_verdict(base, head, "requirements-docs.txt")
    assert verdict == "neutral" and reasons[-1].startswith("Rule of Measurement: not analysed: text"), reasons
    # the head's environment was not built (its setup failed): what the file asks for was never measured
    failed = head.model_copy(update={"setup": SetupReport(status="failed", reason="pip failed")})
    assert dependency_only_verdict(base, failed, "requirements-test.txt")[0] == "neutral"
    # no run of the change's code under the base's tests: the requirements were not tested against the base
    assert dependency_only_verdict(base, head, "requirements-test.txt", guarded=False)[0] == "neutral"
    # the same requirements, only re-spaced: no requirement changed, so the file was read but nothing measured
    same = ran(plan(("attrs", "requirements.txt")))
    assert dependency_only_verdict(base, same, "requirements.txt")[0] == "neutral"
