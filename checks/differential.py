"""The differential test result: the same tests at base and at head, keyed by node id.

``classify(base, head, guard, changed_tests)`` is pure. *Existing* tests (present at base) are judged by their
outcome under the base's oracle — the guard run, which is the head's product code under the base's test files
and test configuration (when the change touched neither, the head run is that run):

=====================  ==========================================================================================
regressed              passed at base; fails, errors, is skipped or missing under the base's oracle, and does not
                       pass at head either
expectation changed    passed at base, fails under the base's oracle, and the change edited its test file or test
                       data so that the test passes at head — under the same node id, or, for a parametrised test
                       whose id holds the expected value, as another case of the same test function that passes:
                       the change rewrote what the test expects (judged as new behaviour, shown as evidence)
tampered               passed at base, fails under the base's oracle, passes at head although the change did not
                       edit the test: the harness made it pass (it is also *regressed*: under the base's oracle the
                       behaviour broke); also any head test reported passing while its call raised (``rewritten``)
removed                passed at base; missing (deleted, deselected) or skipped at head
fixed                  failed at base, passes under the base's oracle
pre-existing failure   fails at base and at head: not charged to the change
new passing / failing  a node id the base did not have
=====================  ==========================================================================================

The base run itself failing to run its tests (an import error, a failed install) makes the whole result
``env_error``: nothing can be charged to the change.
"""

from __future__ import annotations

from collections.abc import Collection

from checks.models import TestCaseResult, TestChange, TestDiff, TestRunResult

PASSED = "passed"
FAILING = ("failed", "error")
LISTED = 200


def outcomes(result: TestRunResult) -> dict[str, TestCaseResult]:
    """Every node id's result, collection errors included (keyed by the file's id)."""
    found = {t.name: t for t in result.tests}
    for error in result.collection_errors:
        found.setdefault(error.name, error)
    return found


def _change(name: str, base: str | None, head: TestCaseResult | None, outcome: str) -> TestChange:
    return TestChange(name=name, base=base, head=outcome, message=head.message if head else None,
                      location=head.location if head else None)


def _function_of(node_id: str) -> str:
    """The test function of a node id, without its parameters (``f.py::test_x[1-a]`` → ``f.py::test_x``)."""
    return node_id.split("[", 1)[0]


def _file_of(node_id: str) -> str:
    return node_id.split("::", 1)[0]


def base_failure(base: TestRunResult) -> str | None:
    """Why the base run cannot serve as the reference, or None when it can."""
    if base.status == "env_error":
        return f"the base commit's tests could not run in this environment: {base.reason}"
    if base.status in ("not_measured", "timeout", "error"):
        return f"the base commit's test run was {base.status.replace('_', ' ')}: {base.reason or 'no detail'}"
    if base.passed == 0 and base.collection_errors:
        return "no test passed at the base commit: " + (base.collection_errors[0].message or "collection errors")
    return None


def classify(base: TestRunResult, head: TestRunResult, guard: TestRunResult | None,
             changed_tests: Collection[str]) -> TestDiff:
    """Classify every test; ``changed_tests`` are the test paths (files and data) the change touched."""
    failure = base_failure(base)
    if failure is not None:
        status = "env_error" if base.status in ("env_error", "ran", "no_tests") else "not_measured"
        return TestDiff(status=status, reason=failure, base_tests=base, guard_tests=guard, mutants=head.mutants)
    oracle = guard if guard is not None else head
    if oracle.status in ("not_measured",):
        return TestDiff(status="not_measured", reason=f"the guard run was not measured: {oracle.reason}",
                        base_tests=base, guard_tests=guard, mutants=head.mutants)
    at_base, at_head, under_oracle = outcomes(base), outcomes(head), outcomes(oracle)
    passing_functions = {_function_of(n) for n, r in at_head.items() if r.outcome == PASSED}
    changed_dirs = {path.rsplit("/", 1)[0] for path in changed_tests if "/" in path}
    regressed: list[TestChange] = []
    tampered: list[TestChange] = []
    new_failing: list[TestChange] = []
    fixed: list[str] = []
    new_passing: list[str] = []
    pre_existing: list[str] = []
    removed: list[str] = []
    expectation: list[str] = []
    unchanged = 0
    for name, was in sorted(at_base.items()):
        now = under_oracle.get(name)
        now_outcome = now.outcome if now else "missing"
        at_h = at_head.get(name)
        head_outcome = at_h.outcome if at_h else "missing"
        if was.outcome == PASSED:
            if now_outcome == PASSED:
                if head_outcome in FAILING:
                    new_failing.append(_change(name, was.outcome, at_h, head_outcome))
                elif head_outcome in ("missing", "skipped"):
                    removed.append(name)
                else:
                    unchanged += 1
            elif head_outcome == PASSED or (head_outcome == "missing" and "[" in name
                                            and _function_of(name) in passing_functions):
                test_file = _file_of(name)
                edited = test_file in changed_tests or any(test_file.startswith(d + "/") for d in changed_dirs)
                if edited:
                    expectation.append(name)
                else:
                    tampered.append(_change(name, was.outcome, now, now_outcome))
                    regressed.append(_change(name, was.outcome, now, now_outcome))
            else:
                regressed.append(_change(name, was.outcome, now or at_h, now_outcome))
        elif was.outcome in FAILING:
            if now_outcome == PASSED:
                fixed.append(name)
            else:
                pre_existing.append(name)
    for name, result in sorted(at_head.items()):
        if result.rewritten:
            tampered.append(_change(name, at_base[name].outcome if name in at_base else None, result, "rewritten"))
        if name in at_base:
            continue
        if result.outcome == PASSED:
            new_passing.append(name)
        elif result.outcome in FAILING:
            new_failing.append(_change(name, None, result, result.outcome))
    return TestDiff(
        status="measured",
        guarded=guard is not None,
        regressed=tuple(regressed[:LISTED]),
        new_failing=tuple(new_failing[:LISTED]),
        fixed=tuple(fixed[:LISTED]),
        new_passing=tuple(new_passing[:LISTED * 5]),
        pre_existing=tuple(pre_existing[:LISTED]),
        removed=tuple(removed[:LISTED]),
        expectation_changed=tuple(expectation[:LISTED]),
        unchanged_passing=unchanged,
        tampered=tuple(tampered[:LISTED]),
        mutants=head.mutants,
        base_tests=base,
        guard_tests=guard,
    )
