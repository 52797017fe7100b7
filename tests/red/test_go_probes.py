"""The Red Agent on Go: hypotheses from the syntax tree's shell and SQL sinks, and the probe, a test file of the sink's
own package (run for real by ``tests/sandbox/test_go.py``: confirmed, guarded, and a method's sink)."""

from __future__ import annotations

import json
import re

from checks.red import collect_hypotheses
from checks.red.go_targets import hypotheses
from checks.red.hypotheses import Attack
from checks.red.probes import build_probe, go_probe_file, runtime
from rubric import Rubric
from tests.red.fixtures import make_case

SOURCE = """package calc

import (
\t"database/sql"
\t"os/exec"
)

// Run runs a line through the shell.
func Run(line string, n int) (string, error) {
\tcommand := "echo " + line
\tout, err := exec.Command("sh", "-c", command).Output()
\treturn string(out), err
}

// Find looks a user up.
func Find(db *sql.DB, name string) error {
\t_, err := db.Query("SELECT id FROM users WHERE name = '" + name + "'")
\treturn err
}

type Shell struct{}

// Run is a method: the probe calls it on a new zero Shell.
func (*Shell) Run(line string) error {
\treturn exec.Command("sh", "-c", line).Run()
}

type Box[T any] struct{ items []T }

// Run is a generic type's method: a probe cannot name the type without its type arguments.
func (b Box[T]) Run(line string) error {
\treturn exec.Command("sh", "-c", line).Run()
}

// Each is generic: a probe cannot name it without its type arguments.
func Each[T any](items []T, line string) error {
\treturn exec.Command("sh", "-c", "echo "+line).Run()
}
"""


def test_each_sink_names_its_package_function_and_the_parameters_that_reach_it() -> None:
    found = [(h.kind, h.line, h.target.qualname if h.target else None, h.tainted, h.probed)
             for h in hypotheses("calc/run.go", SOURCE, None)]
    assert found == [("command-injection", 11, "calc.Run", ("line",), True),
                     ("sql-injection", 17, "calc.Find", ("name",), True),
                     ("command-injection", 25, "calc.Shell.Run", ("line",), True),
                     ("command-injection", 32, None, (), False),
                     ("command-injection", 37, None, (), False)]
    assert [h.line for h in hypotheses("calc/run.go", SOURCE, {17})] == [17]


def test_go_tests_and_vendored_code_make_no_hypothesis(rubric: Rubric) -> None:
    case = make_case({"calc/run_test.go": SOURCE, "vendor/x/run.go": SOURCE, "calc/run.go": SOURCE})
    assert {h.path for h in collect_hypotheses(case, rubric)} == {"calc/run.go"}


def test_the_probe_is_a_test_file_of_the_package_that_calls_the_function_by_reflection() -> None:
    hypothesis = hypotheses("calc/run.go", SOURCE, None)[0]
    attack = Attack(hypothesis, "line", "semicolon")
    nonce = "0123456789abcdef0123"
    code = build_probe(attack, nonce, 7)
    assert runtime(attack) == "go" and go_probe_file(nonce) == "zz_01234567_test.go"
    assert code.startswith("package calc\n")
    assert "func TestZz0123456789(t *zztesting.T) {" in code
    assert code.count("zzCall(Run, settings,") == 2
    assert "__" not in code.replace("__PACKAGE__", "")  # every placeholder filled
    literal = re.search(r"^const zzConfig = (.*)$", code, re.MULTILINE)
    assert literal is not None
    config = json.loads(json.loads(literal.group(1)))
    assert config == {"argument": "line", "family": "semicolon", "is_method": False, "kind": "command-injection",
                      "nonce": nonce, "params": ["line", "n"], "path": "calc/run.go", "qualname": "calc.Run",
                      "keys": ["sh"]}
    # a method is called on a new zero value of its type, value and pointer receivers alike
    method = next(h for h in hypotheses("calc/run.go", SOURCE, None) if h.target and h.target.is_method)
    assert method.target is not None and method.target.params == ("line",)
    assert build_probe(Attack(method, "line", "semicolon"), nonce, 7).count("zzCall(new(Shell).Run, settings,") == 2
    # nothing in what the target can see says what runs it
    assert "probe" not in code.split("// --- program ---")[-1].lower().replace("logomesh-probe-", "")
