"""Go pull requests reviewed end to end: ``go test -json`` at base, at head and under the base's tests (the guard),
in the Docker sandbox, through ``review_repository`` (what the CLI and the App run), on git repositories built here.

Friendly: an honest change with a passing new test passes; a project whose modules are vendored is measured.
Hostile: a change that breaks an existing test fails (Rule of Regression); a change whose own new test fails fails
(Rule of New Failures); a change that breaks the code and skips the test that catches it, or adds a ``TestMain``
that never runs the tests, does not pass (the base's tests run against the head's code and fail) and the harness
inventory names how; a change that starts a shell with its input is named on its line (Go's syntax tree) and does not
pass; a requirement no proxy can fetch is an honest ``neutral`` naming the module, never ``fail``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from tests.gitfixture import RepoBuilder
from tests.sandbox.attacks import (
    assert_hollow_test_does_not_pass,
    assert_padding_is_bounded,
    assert_shell_sink_probed,
)

pytestmark = pytest.mark.docker


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


GO_MOD = "module example.com/tally\n\ngo 1.21\n"
CALC = dedent("""
    package calc

    // Add returns the sum of a and b.
    func Add(a, b int) int {
    \treturn a + b
    }
    """)
SHOUT = dedent("""
    package calc

    import (
    \t"os/exec"
    \t"strings"
    )

    // Shout returns a line of text in capitals, as the shell echoes it.
    func {receiver}Shout(line string) (string, error) {{
    \tout, err := exec.Command("sh", "-c", {command}).Output()
    \treturn strings.ToUpper(string(out)), err
    }}
    """)
QUOTED = r'''"echo '"+strings.ReplaceAll(line, "'", `'\''`)+"'"'''
SHOUT_TEST = dedent("""
    package calc

    import "testing"

    func TestShout(t *testing.T) {
    \tgot, err := Shout("hello world")
    \tif err != nil || got != "HELLO WORLD\\n" {
    \t\tt.Fatalf("Shout = %q, %v", got, err)
    \t}
    }
    """)
SHOUT_BODY = "Shout returns a line of text in capitals, as the shell echoes it; its test checks a line."
CALC_TEST = dedent("""
    package calc

    import "testing"

    func TestAdd(t *testing.T) {
    \tif got := Add(2, 3); got != 5 {
    \t\tt.Fatalf("Add(2, 3) = %d, want 5", got)
    \t}
    }
    """)
SUB = "\n// Sub returns the difference of a and b.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n"
SUB_TEST = dedent("""

    func TestSub(t *testing.T) {
    \tfor _, c := range []struct{ a, b, want int }{{5, 3, 2}, {3, 5, -2}, {0, 0, 0}} {
    \t\tif got := Sub(c.a, c.b); got != c.want {
    \t\t\tt.Errorf("Sub(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
    \t\t}
    \t}
    }
    """)
MEAN = dedent("""

    // Mean returns the arithmetic mean of the values, rounded toward zero, and zero for an empty slice.
    func Mean(values []int) int {
    \tif len(values) == 0 {
    \t\treturn 0
    \t}
    \ttotal := 0
    \tfor _, value := range values {
    \t\ttotal += value
    \t}
    \treturn total / len(values)
    }
    """)
MEAN_TEST = dedent("""

    func TestMean(t *testing.T) {
    \tfor _, c := range []struct {
    \t\tvalues []int
    \t\twant   int
    \t}{{nil, 0}, {[]int{4}, 4}, {[]int{1, 2, 3, 4}, 2}, {[]int{-3, 3}, 0}} {
    \t\tif got := Mean(c.values); got != c.want {
    \t\t\tt.Errorf("Mean(%v) = %d, want %d", c.values, got, c.want)
    \t\t}
    \t}
    }
    """)
BROKEN = CALC.replace("a + b", "a + b + 1")
START = {"go.mod": GO_MOD, "calc/calc.go": CALC, "calc/calc_test.go": CALC_TEST,
         "README.md": "# tally\n\nSmall integer arithmetic.\n"}
CASES: dict[str, dict[str, str | None]] = {
    "honest": {"calc/calc.go": CALC + MEAN, "calc/calc_test.go": CALC_TEST + MEAN_TEST},
    "regression": {"calc/calc.go": BROKEN},
    "hollow": {"calc/calc.go": CALC + MEAN,
               "calc/calc_test.go": CALC_TEST + "\nfunc TestMean(t *testing.T) {\n\t_ = Mean\n}\n"},
    "hollow-tautology": {"calc/calc.go": CALC + MEAN, "calc/calc_test.go": CALC_TEST + "\nfunc TestMean(t *testing.T) "
                         "{\n\tif Mean([]int{1, 2}) != Mean([]int{1, 2}) {\n\t\tt.Fatal(\"unstable\")\n\t}\n}\n"},
    # a test that checks nothing and fails on any run after its first: every later run (a mutant's) looks killed
    "hollow-remembers": {"calc/calc.go": CALC + MEAN, "calc/calc_test.go": CALC_TEST.replace(
        'import "testing"', 'import (\n\t"os"\n\t"path/filepath"\n\t"testing"\n)') + dedent("""

        func TestMean(t *testing.T) {
        \tseen := filepath.Join(os.TempDir(), "mean-seen")
        \tif _, err := os.Stat(seen); err == nil {
        \t\tt.Fatal("run before")
        \t}
        \t_ = os.WriteFile(seen, []byte("1"), 0o600)
        \t_ = Mean([]int{1, 2})
        }
        """)},
    "new-failing": {"calc/calc.go": CALC + SUB.replace("a - b", "b - a"), "calc/calc_test.go": CALC_TEST + SUB_TEST},
    "padding": {"calc/calc.go": CALC + SUB.replace("a - b", "b - a"), "calc/calc_test.go": CALC_TEST + SUB_TEST
                + "\nfunc TestTrivial(t *testing.T) {\n\tfor n := 0; n < 600; n++ {\n\t\tn := n\n"
                "\t\tt.Run(\"trivial\"+string(rune('a'+n%26))+string(rune('a'+n/26)), func(t *testing.T) {\n"
                "\t\t\tif n != n {\n\t\t\t\tt.Fatal(n)\n\t\t\t}\n\t\t})\n\t}\n}\n"},
    "skip-forged": {"calc/calc.go": BROKEN,
                    "calc/calc_test.go": CALC_TEST.replace("{\n\tif got", "{\n\tt.Skip(\"flaky on CI\")\n\tif got")},
    "adds-module": {"go.mod": GO_MOD + "\nrequire example.com/greeting v1.0.0\n",
                    "calc/greet.go": "package calc\n\nimport \"example.com/greeting\"\n\n// Greet greets name.\n"
                                     "func Greet(name string) string {\n\treturn greeting.Hello(name)\n}\n"},
    "shell": {"calc/shout.go": SHOUT.format(receiver="", command='"echo "+line'), "calc/shout_test.go": SHOUT_TEST},
    "quoted-shell": {"calc/shout.go": SHOUT.format(receiver="", command=QUOTED), "calc/shout_test.go": SHOUT_TEST},
    "method-shell": {"calc/shout.go": SHOUT.format(receiver="(Shell) ", command='"echo "+line')
                     + "\n// Shell runs lines through the shell.\ntype Shell struct{}\n",
                     "calc/shout_test.go": SHOUT_TEST.replace(":= Shout(", ":= Shell{}.Shout(")},
    "generic-shell": {"calc/shout.go": SHOUT.format(receiver="(b Box[T]) ", command='"echo "+line')
                      + "\n// Box holds items.\ntype Box[T any] struct{ items []T }\n",
                      "calc/shout_test.go": SHOUT_TEST.replace(":= Shout(", ":= Box[int]{}.Shout(")},
    "testmain-forged": {"calc/calc.go": BROKEN, "calc/main_test.go": dedent("""
        package calc

        import (
        \t"os"
        \t"testing"
        )

        func TestMain(m *testing.M) {
        \tos.Exit(0)
        }
        """)},
    # a test that prints go test's own framing and test2json's events for the broken test
    "forged-output": {"calc/calc.go": BROKEN, "calc/calc_test.go": CALC_TEST.replace(
        'import "testing"', 'import (\n\t"fmt"\n\t"os"\n\t"testing"\n)') + dedent("""

        func TestReporting(t *testing.T) {
        \tfmt.Println("--- PASS: TestAdd (0.00s)")
        \tfmt.Println(`{"Action":"pass","Package":"example.com/tally/calc","Test":"TestAdd"}`)
        \tos.Stdout.WriteString("ok  \\texample.com/tally/calc\\t0.001s\\n")
        }
        """)},
    "exit-in-test": {"calc/calc.go": BROKEN, "calc/calc_test.go": CALC_TEST.replace(
        'import "testing"', 'import (\n\t"os"\n\t"testing"\n)').replace(
        "func TestAdd(t *testing.T) {\n", "func TestAdd(t *testing.T) {\n\tos.Exit(0)\n")},
    "deleted-test": {"calc/calc.go": BROKEN, "calc/calc_test.go": None},
}
HONEST = ("Add Mean to calc", "Mean returns the arithmetic mean of a slice of ints, rounded toward zero, and zero "
          "for an empty slice; a table test covers empty, single, several and negative values.")
SUB_PR = ("Add Sub to calc", "Sub returns the difference of two ints; a table test covers positive, negative and "
          "zero results.")
# a description of something else entirely
ELSEWHERE = ("Fix the retry budget of the connection pool",
             "The `PoolManager` retried forever when `max_retries` was exhausted during TLS handshakes; it now "
             "raises `MaxRetryError` with the last exception and closes the socket it opened.")

GREETING = ("package greeting\n\n// Hello greets name.\nfunc Hello(name string) string {\n"
            "\treturn \"hello \" + name\n}\n")
APP = dedent("""
    package app

    import "example.com/greeting"

    // Welcome greets a new user.
    func Welcome(name string) string {
    \treturn greeting.Hello(name)
    }
    """)
APP_TEST = dedent("""
    package app

    import "testing"

    func TestWelcome(t *testing.T) {
    \tif got := Welcome("ada"); got != "hello ada" {
    \t\tt.Fatalf("Welcome = %q", got)
    \t}
    }
    """)
APP_MOD = "module example.com/app\n\ngo 1.21\n\nrequire example.com/greeting v1.0.0\n"
UNVENDORED = {"go.mod": APP_MOD, "app/app.go": APP, "app/app_test.go": APP_TEST}
VENDOR = {"vendor/modules.txt": "# example.com/greeting v1.0.0\n## explicit; go 1.21\nexample.com/greeting\n",
          "vendor/example.com/greeting/greeting.go": GREETING}
MODULE_CASES: dict[str, dict[str, str | None]] = {
    "uses-greeting": {"app/app.go": APP + "\n// Farewell says goodbye.\nfunc Farewell(name string) string {\n"
                                          "\treturn \"bye \" + name\n}\n"},
}


@pytest.fixture(scope="module")
def tally(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("tally")
    repo = RepoBuilder(root)
    repo.commit("Start tally", dict(START))
    return root, repo.branches(CASES)


def modules_repo(tmp_path_factory: pytest.TempPathFactory, name: str, start: dict[str, str | None]
                 ) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp(name)
    repo = RepoBuilder(root)
    repo.commit(f"Start {name}", start)
    return root, repo.branches(MODULE_CASES)


async def review(root: Path, head: str, title: str, body: str, red_team: Literal["on", "off"] = "off") -> Evaluation:
    settings = load_settings(sandbox="docker", home=root / ".lm", embedding="auto", red_team=red_team)
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title=title, body=body)
    return evaluation


def reasons(evaluation: Evaluation) -> str:
    return " | ".join(evaluation.verdict_reasons)


def kinds(evaluation: Evaluation, kind: str) -> list[str]:
    return [e.summary for e in evaluation.evidence if e.kind == kind]


async def test_an_honest_go_change_with_passing_tests_passes(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["honest"], *HONEST)
    assert evaluation.measured["testing"] is True
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured"
    assert diff.new_passing == ("calc/calc_test.go::TestMean",) and diff.unchanged_passing == 1
    assert not diff.regressed and not diff.new_failing
    assert any(s.startswith("Go 1.21 (go.mod asks for 1.21)") for s in kinds(evaluation, "test-environment"))
    assert "Go (2 files) judged on its tests (Go 1.21)" in reasons(evaluation)
    assert evaluation.measured["rationale"] is True
    mutation = [e for e in evaluation.evidence if e.kind == "test-mutation"]
    assert mutation and mutation[0].facts["killed"] >= 1, kinds(evaluation, "test-mutation")
    assert evaluation.verdict == "pass", reasons(evaluation)


@pytest.mark.parametrize("name", ["hollow", "hollow-tautology", "hollow-remembers"])
async def test_a_go_change_whose_new_test_checks_nothing_does_not_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str) -> None:
    # the new test passes; every mutant of Mean's lines that builds survives, or is never run when no test calls Mean
    root, heads = tally
    assert_hollow_test_does_not_pass(await review(root, heads[name], *HONEST), "calc/calc_test.go::TestMean",
                                     "calc/calc.go", calls_it=name != "hollow")


async def test_a_go_change_under_a_description_of_something_else_does_not_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["honest"], *ELSEWHERE)
    assert evaluation.measured["testing"] is True
    assert evaluation.verdict != "pass", reasons(evaluation)


async def test_a_go_change_that_breaks_an_existing_test_fails(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["regression"], "Tidy Add", "A cosmetic change to Add.")
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "Rule of Regression: 1 test(s) passed at base and fail with this change (first: " \
           "calc/calc_test.go::TestAdd)" in reasons(evaluation)
    regressed = evaluation.differential.regressed if evaluation.differential else ()
    assert [c.location for c in regressed] == ["calc/calc_test.go:7"]
    assert "Add(2, 3) = 6, want 5" in (regressed[0].message or "")


@pytest.mark.parametrize("name", ["new-failing", "padding"])
async def test_a_go_change_whose_own_test_fails_fails(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], *SUB_PR)
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "Rule of New Failures: 1 test(s) of this change fail (first: calc/calc_test.go::TestSub)" \
           in reasons(evaluation)
    if name == "padding":  # 600 trivial passing subtests beside it: nothing diluted, and the record does not grow
        assert_padding_is_bounded(evaluation, 600)


@pytest.mark.parametrize(("name", "mechanism"), [("skip-forged", "adds a skip to an existing Go test file"),
                                                 ("testmain-forged", "adds a TestMain"), ("forged-output", None),
                                                 ("exit-in-test", None), ("deleted-test", "a Go test file is deleted")])
async def test_a_go_change_that_silences_the_test_it_breaks_does_not_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str,
        mechanism: str | None) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], "Tidy Add", "A cosmetic change to Add.")
    assert evaluation.verdict == "fail", reasons(evaluation)
    diff = evaluation.differential
    assert diff is not None and diff.guarded  # the base's tests ran against the change's code
    assert [c.name for c in diff.regressed] == ["calc/calc_test.go::TestAdd"], reasons(evaluation)
    if mechanism is not None:
        assert any(mechanism in s for s in kinds(evaluation, "harness-change")), kinds(evaluation, "harness-change")


async def test_a_go_module_no_proxy_can_fetch_is_neutral_and_named(
        tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> None:
    root, heads = modules_repo(tmp_path_factory, "unvendored", dict(UNVENDORED))
    evaluation = await review(root, heads["uses-greeting"], "Add Farewell", "Farewell says goodbye to a user.")
    assert evaluation.verdict == "neutral", reasons(evaluation)
    assert evaluation.measured["testing"] is False
    said = " ".join(kinds(evaluation, "test-environment") + kinds(evaluation, "tests-differential"))
    assert "example.com/greeting v1.0.0" in said and "not vendored" in said
    assert "the Go tests could not run: the Go module(s) example.com/greeting v1.0.0 are not available" \
        in reasons(evaluation)


async def test_a_go_change_that_requires_a_module_no_proxy_can_fetch_is_neutral_not_failed(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["adds-module"], "Greet in calc", "calc greets through example.com/greeting.")
    assert evaluation.verdict == "neutral", reasons(evaluation)
    diff = evaluation.differential
    assert diff is not None and diff.status == "env_error" and not diff.regressed
    assert "the head tree's Go tests could not run in this environment: the Go module(s) example.com/greeting " \
           "v1.0.0 are not available" in (diff.reason or "")


async def test_a_go_project_with_vendored_modules_is_measured(
        tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> None:
    root, heads = modules_repo(tmp_path_factory, "vendored", {**UNVENDORED, **VENDOR})
    evaluation = await review(root, heads["uses-greeting"], "Add Farewell", "Farewell says goodbye to a user.")
    assert evaluation.measured["testing"] is True, reasons(evaluation)
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured" and diff.unchanged_passing == 1
    assert any(", vendored" in s for s in kinds(evaluation, "test-environment"))


@pytest.mark.parametrize(("name", "confirmed"), [("shell", True), ("quoted-shell", False), ("method-shell", True)])
async def test_a_go_shell_sink_is_probed_and_fails_only_when_its_input_gets_through(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str, confirmed: bool) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], "Add Shout to calc", SHOUT_BODY, red_team="on")
    assert_shell_sink_probed(evaluation, "calc/shout.go:10", confirmed=confirmed)


async def test_a_go_sink_in_a_generic_type_s_method_is_named_unprobed_and_does_not_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    # a probe cannot name a generic type without its type arguments
    root, heads = tally
    evaluation = await review(root, heads["generic-shell"], "Add Shout to calc", SHOUT_BODY, red_team="on")
    assert [f.confirmed for f in evaluation.red_analysis.findings] == [False]
    assert evaluation.verdict != "pass", reasons(evaluation)
    assert "1 serious sink(s) in Go that the Red Agent did not probe (first: calc/shout.go:10: CWE-78)" \
        in reasons(evaluation)
