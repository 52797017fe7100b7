"""The Go plug-in's pure parts: test paths, the harness inventory, the plan from go.mod, the event stream read.

The events are what ``go test -json`` (Go 1.23, in the sandbox image) printed for a package with a failing test
that prints a forged ``--- PASS`` line, a skipped test with a passing subtest, and a package that does not build.
"""

from __future__ import annotations

import json

import pytest

from checks.languages import GO, PYTHON, go, language_of_test, languages_of, merge_runs
from checks.models import Case, ChangedFile, TestCaseResult, TestRunResult, ToolchainPlan
from checks.testpaths import is_environment_path, is_test_path
from sandbox.languages.go import GoModule, choose_toolchain, parse_go_mod, plan_go, read_events


def event(action: str, package: str = "example.com/tally/calc", test: str | None = None,
          output: str | None = None) -> bytes:
    found: dict[str, object] = {"Time": "2026-11-25T23:19:43.58Z", "Action": action, "Package": package}
    if test is not None:
        found["Test"] = test
    if output is not None:
        found["Output"] = output
    return json.dumps(found).encode()


STREAM = b"\n".join([
    event("start"),
    event("run", test="TestAdd"),
    event("output", test="TestAdd", output="=== RUN   TestAdd\n"),
    event("output", test="TestAdd", output="--- PASS: TestFake (0.00s)\n"),  # the test's own text, not an outcome
    event("output", test="TestAdd", output="    calc_test.go:8: Add(2, 3) = 6, want 5\n"),
    event("output", test="TestAdd", output="--- FAIL: TestAdd (0.00s)\n"),
    event("fail", test="TestAdd"),
    event("run", test="TestSub"),
    event("run", test="TestSub/zero"),
    event("pass", test="TestSub/zero"),
    event("output", test="TestSub", output="    calc_test.go:14: later\n"),
    event("skip", test="TestSub"),
    event("output", output="FAIL\texample.com/tally/calc\t0.005s\n"),
    event("fail"),
    b'{"Action": "pass", "Package": "example.com/tally/calc", "Test": "TestForged"',  # a torn line: dropped
    b"not json at all",
    event("output", package="example.com/tally/broken", output="FAIL\texample.com/tally/broken [build failed]\n"),
    event("fail", package="example.com/tally/broken"),
    event("output", package="example.com/other", test="TestElse", output="ok\n"),
    event("pass", package="example.com/other", test="TestElse"),  # not this module's package: ignored
])
STDERR = ("# example.com/tally/broken\nbroken/broken.go:4:9: undefined: missing\n"
          "# example.com/tally/fine\nnothing to see\n")
FILES = {"go.mod": "module example.com/tally\n\ngo 1.21\n",
         "calc/calc_test.go": "package calc\n\nfunc TestAdd(t *testing.T) {}\n\nfunc TestSub(t *testing.T) {}\n",
         "broken/broken.go": "package broken\n"}
MODULE = GoModule(dir="", path="example.com/tally", go=(1, 21), requires=(), vendored=False)


def test_outcomes_come_from_the_events_and_a_forged_line_is_only_output() -> None:
    tests, errors, cut = read_events(STREAM, STDERR, MODULE, FILES.get, sorted(FILES))
    by_name = {t.name: t for t in tests}
    assert sorted(by_name) == ["calc/calc_test.go::TestAdd", "calc/calc_test.go::TestSub",
                               "calc/calc_test.go::TestSub/zero"]
    assert by_name["calc/calc_test.go::TestAdd"].outcome == "failed"
    assert by_name["calc/calc_test.go::TestAdd"].location == "calc/calc_test.go:8"
    assert "Add(2, 3) = 6, want 5" in (by_name["calc/calc_test.go::TestAdd"].message or "")
    assert by_name["calc/calc_test.go::TestSub"].outcome == "skipped"
    assert by_name["calc/calc_test.go::TestSub/zero"].outcome == "passed"
    assert "TestForged" not in " ".join(by_name) and "TestFake" not in " ".join(by_name)
    # the package that did not build is one error, with the compiler's words from standard error
    assert [e.name for e in errors] == ["broken::(package)"]
    assert "undefined: missing" in (errors[0].message or "") and "nothing to see" not in (errors[0].message or "")
    assert cut == 0
    assert language_of_test("calc/calc_test.go::TestAdd") == GO and language_of_test("broken::(package)") == GO
    assert language_of_test("tests/test_ops.py::test_add") == PYTHON


def test_a_test_that_never_reported_an_outcome_counts_as_failed() -> None:
    stream = b"\n".join([event("run", test="TestAdd"), event("output", test="TestAdd", output="=== RUN TestAdd\n")])
    tests, _errors, _cut = read_events(stream, "", MODULE, FILES.get, sorted(FILES))
    assert [(t.name, t.outcome) for t in tests] == [("calc/calc_test.go::TestAdd", "failed")]
    assert "did not report an outcome" in (tests[0].message or "")


GO_MOD = """module example.com/app

go 1.22.3 // a comment

require (
\texample.com/greeting v1.0.0
\texample.com/local v0.0.0 // indirect
)

require example.com/single v2.1.0

replace example.com/local => ./third_party/local
"""


def test_go_mod_is_read_for_its_go_line_and_its_requirements() -> None:
    module = parse_go_mod("", GO_MOD, vendored=False)
    assert module.path == "example.com/app" and module.go == (1, 22)
    assert module.requires == ("example.com/greeting v1.0.0", "example.com/single v2.1.0")


@pytest.mark.parametrize(("wanted", "chosen"), [((1, 19), "1.21"), ((1, 21), "1.21"), ((1, 22), "1.23"),
                                                ((1, 23), "1.23"), ((1, 24), None), (None, "1.21")])
def test_the_oldest_toolchain_the_go_line_allows_is_chosen(wanted: tuple[int, int] | None,
                                                           chosen: str | None) -> None:
    assert choose_toolchain(wanted, ("1.23", "1.21")) == chosen


def test_a_requirement_that_is_not_vendored_is_named_and_a_vendored_one_is_not() -> None:
    files = {"go.mod": GO_MOD, "main.go": "package main\n"}
    plan, modules = plan_go(files.get, sorted(files), ("1.21", "1.23"))
    assert plan.version == "1.23" and plan.wanted == "1.22" and [m.dir for m in modules] == [""]
    assert plan.missing == ("example.com/greeting v1.0.0", "example.com/single v2.1.0")
    assert plan.error is not None and "example.com/greeting v1.0.0" in plan.error and "go mod vendor" in plan.error
    files["vendor/modules.txt"] = "# example.com/greeting v1.0.0\n"
    vendored, _ = plan_go(files.get, sorted(files), ("1.21", "1.23"))
    assert vendored.error is None and vendored.vendored and vendored.missing == ()
    too_new, _ = plan_go({"go.mod": "module m\n\ngo 1.30\n"}.get, ["go.mod"], ("1.21", "1.23"))
    assert too_new.error == "go.mod asks for Go 1.30; the sandbox image offers Go 1.21, 1.23"


def test_go_test_files_and_module_files_are_test_and_environment_paths() -> None:
    assert is_test_path("calc/calc_test.go") and is_test_path("calc/testdata/golden.txt")
    assert not is_test_path("calc/calc.go") and not is_test_path("calc/contest.go")
    assert is_environment_path("go.mod") and is_environment_path("tools/go.sum")
    assert is_environment_path("vendor/modules.txt") and not is_environment_path("calc/calc.go")
    assert go.modules(["go.mod", "tools/go.mod", "vendor/x/go.mod", "a/testdata/go.mod", "b.go"]) == ("", "tools")


def test_the_harness_inventory_names_test_main_added_skips_and_deleted_tests() -> None:
    content = ("package calc\n\nimport (\"os\"; \"testing\")\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n\n"
               "func TestAdd(t *testing.T) {\n\tt.Skip(\"flaky\")\n}\n")
    lines = content.splitlines()
    added = [(n, lines[n - 1]) for n in (5, 8)]
    found = go.harness_changes("calc/calc_test.go", "modified", content, added,
                               ["func TestSub(t *testing.T) {", "}"])
    assert [(m, line, severity) for m, line, _s, severity in found] == [
        ("test-main", 5, "high"), ("skip", 8, "medium"), ("deleted-test", None, "medium")]
    assert "TestSub" in found[2][2]
    # the friendly twin: a new test file with its own skips, and product code, say nothing
    assert go.harness_changes("calc/new_test.go", "added", content, [(8, lines[7])], []) == []
    assert go.harness_changes("calc/calc.go", "modified", content, added, []) == []
    gone = go.harness_changes("calc/calc_test.go", "removed", None, [], ["func TestAdd(t *testing.T) {"])
    assert gone == [("deleted-test", None, "calc/calc_test.go: a Go test file is deleted (TestAdd)", "medium")]


def test_removed_lines_are_read_per_file_from_the_diff() -> None:
    diff = ("diff --git a/a_test.go b/a_test.go\n--- a/a_test.go\n+++ b/a_test.go\n@@ -1,3 +1,2 @@\n"
            " package a\n-func TestGone(t *testing.T) {}\n--- not a header inside a hunk\n"
            "diff --git a/b.go b/b.go\n--- a/b.go\n+++ b/b.go\n@@ -1 +1 @@\n-func TestOther() {}\n")
    assert go.removed_lines(diff, "a_test.go") == ["func TestGone(t *testing.T) {}", "-- not a header inside a hunk"]


def _case(paths: tuple[str, ...]) -> Case:
    return Case(base_sha="a" * 40, head_sha="b" * 40, diff="", head_paths=paths,
                files=(ChangedFile(path=paths[0], status="modified"),))


def test_the_languages_whose_tests_run_follow_the_tree() -> None:
    assert languages_of(_case(("calc/calc.go", "go.mod"))) == (GO,)
    assert languages_of(_case(("calc/calc.go", "go.mod", "tools/gen.py"))) == (PYTHON, GO)
    assert languages_of(_case(("src/sum.js", "package.json"))) == (PYTHON,)  # as before plug-ins: Python's run
    assert languages_of(_case(("calc/ops.py",))) == (PYTHON,)


def test_runs_of_two_languages_merge_into_one_result() -> None:
    python = TestRunResult(status="ran", passed=2, failed=1, tests=(
        TestCaseResult(name="tests/test_a.py::test_a", outcome="failed"),))
    golang = TestRunResult(status="ran", passed=3, skipped=1, toolchains=(
        ToolchainPlan(language="Go", version="1.23"),), tests=(
        TestCaseResult(name="calc/calc_test.go::TestAdd", outcome="passed"),))
    merged = merge_runs([python, golang])
    assert (merged.status, merged.passed, merged.failed, merged.skipped) == ("ran", 5, 1, 1)
    assert [t.name for t in merged.tests] == ["tests/test_a.py::test_a", "calc/calc_test.go::TestAdd"]
    assert merged.toolchains == golang.toolchains
    # a language without tests adds nothing; a blocked one makes the whole tree's run as blocked
    assert merge_runs([TestRunResult(status="no_tests"), golang]) == golang
    blocked = TestRunResult(status="env_error", reason="go.mod asks for Go 1.30")
    assert merge_runs([python, blocked]).status == "env_error"
    with pytest.raises(ValueError, match="at least one run"):
        merge_runs([])
