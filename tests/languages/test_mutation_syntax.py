"""Mutants of JavaScript, TypeScript and Go product lines from their syntax trees
(:mod:`checks.languages.mutation_syntax`, :func:`checks.mutation.mutants_for` per language) and how a mutant's run is
judged (:func:`sandbox.languages.mutants.judge`, the control run's :func:`~sandbox.languages.mutants.confirmed`)."""

from __future__ import annotations

from checks.languages import GO, JAVASCRIPT, PYTHON
from checks.languages.mutation_syntax import line_mutants
from checks.models import Case, ChangedFile, TestCaseResult
from checks.mutation import mutants_for
from sandbox.languages.mutants import UNENDED, Outcome, confirmed, detections, judge

TS = """'use strict';
export function mean(values: number[]): number {
  if (values.length === 0) {
    return 0;
  }
  let total: 0 | 1 = 0;
  total += 1;
  record(true);
  return values.reduce((t, v) => t + v, 0) / values.length;
}
"""
GO_SOURCE = """package calc

func Mean(values []int) int {
\tif len(values) == 0 && true {
\t\treturn 0
\t}
\tvar window [3]int
\ttotal := 0
\tfor _, v := range values {
\t\ttotal += v
\t}
\tlog(total)
\treturn total / len(values)
}
"""


def changed(path: str, source: str, added: tuple[int, ...]) -> Case:
    return Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=(
        ChangedFile(path=path, status="modified", added_lines=added, content=source),))


def described(path: str, source: str, added: set[int]) -> set[tuple[int, str]]:
    return {(line, d) for line, found in line_mutants(path, source, added).items() for d, _ in found}


def test_typescript_mutants_cover_operators_conditions_constants_returns_and_calls_never_types() -> None:
    found = described("src/mean.ts", TS, set(range(1, 11)))
    assert {(3, "negating the condition"), (3, "changing `===` to `!==`"), (3, "changing the constant `0` to `1`"),
            (4, "returning `undefined` instead"), (7, "changing `+=` to `-=`"), (8, "deleting the statement"),
            (8, "changing `true` to `false`"), (9, "changing `/` to `*`"), (9, "changing `+` to `-`")} <= found
    # `0 | 1` is a type: no run sees it; the 'use strict' directive is never deleted
    assert (6, "changing the constant `0` to `1`") in found and sum(1 for line, _ in found if line == 6) == 1
    assert not any(line == 1 for line, _ in found)
    mutated = dict(line_mutants("src/mean.ts", TS, {3})[3])
    assert "  if (!(values.length === 0)) {" in mutated["negating the condition"].splitlines()
    assert "  if (values.length !== 0) {" in mutated["changing `===` to `!==`"].splitlines()
    # only the lines the change adds
    assert {line for line, _ in described("src/mean.ts", TS, {9})} == {9}


def test_go_mutants_never_touch_a_type_or_a_return_value() -> None:
    found = described("calc/mean.go", GO_SOURCE, set(range(1, 16)))
    assert {(4, "negating the condition"), (4, "changing `==` to `!=`"), (4, "changing `&&` to `||`"),
            (4, "changing `true` to `false`"), (5, "changing the constant `0` to `1`"), (10, "changing `+=` to `-=`"),
            (12, "deleting the statement"), (13, "changing `/` to `*`")} <= found
    assert not any(line == 7 for line, _ in found)  # [3]int is a type
    assert not any("returning" in d for _, d in found)  # Go's return values are typed
    mutated = dict(line_mutants("calc/mean.go", GO_SOURCE, {4})[4])
    assert "\tif !(len(values) == 0 && true) {" in mutated["negating the condition"].splitlines()


def test_each_language_gets_its_own_mutants_and_never_its_tests() -> None:
    case = Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=(
        ChangedFile(path="src/mean.ts", status="modified", added_lines=(3,), content=TS),
        ChangedFile(path="src/mean.test.ts", status="modified", added_lines=(3,), content=TS),
        ChangedFile(path="vitest.config.ts", status="modified", added_lines=(3,), content=TS),
        ChangedFile(path="calc/mean.go", status="modified", added_lines=(4,), content=GO_SOURCE),
        ChangedFile(path="calc/mean_test.go", status="modified", added_lines=(4,), content=GO_SOURCE),
        ChangedFile(path="calc/mean.py", status="modified", added_lines=(1,), content="x = 1 + 2\n")))
    assert {m.path for m in mutants_for(case, 50, JAVASCRIPT)} == {"src/mean.ts"}
    assert {m.path for m in mutants_for(case, 50, GO)} == {"calc/mean.go"}
    assert {m.path for m in mutants_for(case, 50, PYTHON)} == {"calc/mean.py"}
    first = mutants_for(case, 50, JAVASCRIPT)
    assert first == mutants_for(case, 50, JAVASCRIPT) and len({m.id for m in first}) == len(first)
    assert len(mutants_for(case, 2, GO)) == 2 and mutants_for(case, 0, GO) == ()
    assert mutants_for(changed("src/broken.js", "function (", (1,)), 10, JAVASCRIPT) == ()


def passed(*names: str) -> tuple[TestCaseResult, ...]:
    return tuple(TestCaseResult(name=n, outcome="passed") for n in names)


def test_a_mutant_is_killed_only_when_a_test_that_passed_at_head_does_not_pass() -> None:
    head = frozenset({"t.js::a", "t.js::b"})
    assert judge(head, frozenset(), Outcome(passed("t.js::a", "t.js::b"), ())) == "survived"
    assert judge(head, frozenset(), Outcome(passed("t.js::a", "t.js::b", "t.js::c"), ())) == "survived"
    failing = (*passed("t.js::a"), TestCaseResult(name="t.js::b", outcome="failed"))
    assert judge(head, frozenset(), Outcome(failing, ())) == "killed"
    assert judge(head, frozenset(), Outcome(passed("t.js::a"), ())) == "killed"  # b never reported
    # a test file that no longer loads kills it; one that did not load at head either says nothing
    broken = (TestCaseResult(name="u.js::(file)", outcome="error"),)
    assert judge(head, frozenset(), Outcome(passed("t.js::a", "t.js::b"), broken)) == "killed"
    assert judge(head, frozenset({"u.js::(file)"}), Outcome(passed("t.js::a", "t.js::b"), broken)) == "survived"
    # a runner that never saw the run's end; mutated Go code that does not build is no mutant at all
    assert judge(head, frozenset(), Outcome(passed("t.js::a", "t.js::b"), (), ended=False)) == "killed"
    assert judge(head, frozenset(), Outcome((), (), unbuilt=True)) == "not_run"


def test_a_kill_counts_only_when_the_unmutated_code_s_control_run_does_not_tell_the_same() -> None:
    head = frozenset({"t.js::a", "t.js::b"})
    failing_b = (*passed("t.js::a"), TestCaseResult(name="t.js::b", outcome="failed"))
    assert detections(head, frozenset(), Outcome(failing_b, ())) == {"t.js::b"}
    assert detections(head, frozenset(), Outcome(passed("t.js::a", "t.js::b"), (), ended=False)) == {UNENDED}
    found = {"m1": frozenset({"t.js::b"}), "m2": frozenset({"t.js::a", "t.js::b"}), "m3": frozenset({UNENDED})}
    # the control passes: every kill stands
    assert confirmed(found, frozenset()) == {"m1", "m2", "m3"}
    # b fails on the unmutated code too (it remembers an earlier run): it detects nothing; a still counts
    assert confirmed(found, frozenset({"t.js::b"})) == {"m2", "m3"}
    assert confirmed(found, frozenset({"t.js::a", "t.js::b", UNENDED})) == set()
