"""The differential test result: the same tests at base and at head, keyed by node id.

``classify(base, head, guard, changed_tests)`` is pure. *Existing* tests (present at base) are judged by their
outcome under the base's oracle — the guard run, which is the head's product code under the base's test files
and test configuration (when the change touched neither, the head run is that run):

=====================  ==========================================================================================
regressed              passed at base; fails, errors, is skipped or missing under the base's oracle, and does not
                       pass at head either
expectation changed    passed at base, fails under the base's oracle, and the change edited its test file or test
                       data so that the test passes at head — under the same node id, or, for a parametrised test
                       whose id holds the expected value, as another case of the same test function that passes,
                       or, for a test named after a test data file the change renamed, under the renamed file's
                       names: the change rewrote what the test expects (judged as new behaviour, shown as evidence)
tampered               passed at base, fails under the base's oracle, passes at head although the change did not
                       edit the test: the harness made it pass (it is also *regressed*: under the base's oracle the
                       behaviour broke); also any head test reported passing while its call raised (``rewritten``)
removed                passed at base; missing (deleted, deselected) or skipped at head — unless the head's run
                       (or the oracle's) went past the cap on recorded tests: then it is *past the cap*, not
                       measured; or that run did not complete (a timeout, a crash): then it is *unreached*, not
                       measured (never *regressed* either; the court's Rule of Completion keeps such a change
                       from ``pass``)
fixed                  failed at base, passes under the base's oracle
pre-existing failure   fails at base and at head the same way (``failed`` both times, or ``error`` both times):
                       not charged to the change; also a new parametrised case that is a base's failing case
                       whose parameter id holds numbers the change shifted (a documentation example's line
                       range): the same id and failure but for the numbers, the base's case gone at head
new passing / failing  a node id the base did not have; also a test skipped or expected to fail (``xfail``) at
                       base that fails at head, and one that failed at base and errors at head (or the reverse):
                       every failing test at head lands in one category, and only *pre-existing* is not charged
retired                passed at base, deleted at head from a test file the change edited, and failing under the
                       base's oracle because a name the change removed from product code is missing (``has no
                       attribute 'x'``, ``cannot import name 'x'``): the test went with the API it tested — not
                       charged, shown as evidence; any other failure of a deleted test is *regressed*
declared               passed at base, deleted at head from a test file the change edited, failing under the base's
                       oracle, and using a name that a changelog entry the change adds declares changed and that
                       the change's product code touches (:mod:`checks.declared_changes`): a behaviour removed on
                       purpose, said so — not charged as a regression, never a pass (the court makes the verdict
                       ``neutral`` for a person to confirm); without such an entry it is *regressed*
flaky                  a regressed or new failing test that its re-runs (``testing.reruns`` of the rubric; only its
                       node id, the same tree and environment) do not reproduce: it passed on a re-run under the
                       oracle or at head, or, for a regressed test, failed on a re-run at base (:func:`apply_reruns`);
                       not charged,
                       and the court never passes a change with one (a re-run is something a test can detect)
environmental          a regressed or new failing test whose error is the sandbox's environment
                       (:func:`environment_cause`): a missing program or system library, the sandbox's absent
                       network, a missing third-party module in a test file the change does not touch
=====================  ==========================================================================================

A base run that could not run its tests (an import error, a failed install, a crash) leaves no reference: the head
is then judged on its own. Its failing tests in test files the change touched are *new failing* (a red test of the
change is red whatever the base did); its other failing tests are *unattributed*: not charged, never passed over
(the court makes the verdict ``neutral`` and names the base's failure).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import PurePosixPath

from checks.dependencies import project_name
from checks.models import DeclaredRequirement, TestCaseResult, TestChange, TestDiff, TestRunResult
from checks.removed_names import names_removed_symbol, rename_by_data

PASSED = "passed"
FAILING = ("failed", "error")
INCOMPLETE = ("timeout", "error")  # a run that stopped early: the tests it did not reach have no outcome
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


def _test_function(node_id: str) -> str:
    """The function's own name (``f.py::TestX::test_y[1]`` → ``test_y``)."""
    return _function_of(node_id).rsplit("::", 1)[-1]


def _renamed_passes(name: str, renamed: Mapping[str, str], passing: Collection[tuple[str, str]]) -> bool:
    """Whether the change renamed ``name``'s test function where it stands and the renamed test passes at head."""
    new = renamed.get(f"{_file_of(name)}::{_test_function(name)}")
    return new is not None and (_file_of(new), new.rsplit("::", 1)[-1]) in passing


def _renamed_data_passes(name: str, pairs: Sequence[tuple[str, str]],
                         at_head: Mapping[str, TestCaseResult]) -> bool:
    """Whether ``name``, named after a test data file the change renamed, passes at head under the renamed file's
    names (``test/tests.js::UTF-16BE.html > should sniff as UTF-16BE`` → ``…::utf-16be.html > should sniff as
    utf-16be``), in the same test file."""
    if not pairs or "::" not in name:
        return False
    path, rest = name.split("::", 1)
    now = rename_by_data(rest, pairs)
    found = at_head.get(f"{path}::{now}") if now != rest else None
    return found is not None and found.outcome == PASSED


def base_failure(base: TestRunResult) -> str | None:
    """Why the base run cannot serve as the reference, or None when it can."""
    if base.status == "env_error":
        return f"the base commit's tests could not run in this environment: {base.reason}"
    if base.status in ("not_measured", "timeout", "error"):
        return f"the base commit's test run was {base.status.replace('_', ' ')}: {base.reason or 'no detail'}"
    if base.passed == 0 and base.collection_errors:
        return "no test passed at the base commit: " + (base.collection_errors[0].message or "collection errors")
    return None


MISSING_PROGRAM = re.compile(r"(?:FileNotFoundError|No such file or directory)[^'\"]*['\"]([\w.+-]+)['\"]")
COMMAND_NOT_FOUND = re.compile(r"\b([\w.+-]+): (?:command )?not found\b")
MISSING_LIBRARY = re.compile(r"(lib[\w.+-]*\.so[\w.]*): cannot open shared object file"
                             r"|(?:library|Library) ['\"]?([\w.+-]+)['\"]? (?:not found|could not be found)"
                             r"|Unable to find library ['\"]?([\w.+-]+)")
NO_NETWORK = re.compile(r"Temporary failure in name resolution|Name or service not known|Network is unreachable"
                        r"|\[Errno (?:-3|-2|101)\]|nodename nor servname provided")
MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
PROGRAM_SUFFIXES = ("", ".sh", ".exe")


def _is_program_name(name: str) -> bool:
    """A bare command name (``less``, ``git``, ``pg_ctl``): no path, no file extension other than a script's."""
    _stem, dot, suffix = name.rpartition(".")
    return "/" not in name and (not dot or "." + suffix in PROGRAM_SUFFIXES) and bool(name.strip("."))


def _top_levels(paths: Collection[str]) -> set[str]:
    """The top-level module names a set of repository paths can define (``src/`` and ``lib/`` layouts too)."""
    names: set[str] = set()
    for path in paths:
        parts = list(PurePosixPath(path).parts)
        if parts and parts[0] in ("src", "lib", "python") and len(parts) > 1:
            parts = parts[1:]
        if parts:
            names.add(parts[0][:-3] if parts[0].endswith(".py") else parts[0])
    return names


def provides(requirement: str, module: str) -> bool:
    """Whether the project a requirement names plausibly provides the top-level module ``module``: the same name,
    a namespace package's member (``azure`` from ``azure-identity``) or the ``py``/``python-`` prefixed form
    (``yaml`` from ``PyYAML``, ``dateutil`` from ``python-dateutil``)."""
    name, top = project_name(requirement).replace("-", "_"), module.split(".")[0].lower()
    return bool(name and top) and (name == top or name.startswith(top + "_") or name in ("py" + top, "python_" + top))


def _left_out_extra(module: str, left_out: Collection[DeclaredRequirement]) -> DeclaredRequirement | None:
    return next((d for d in left_out if provides(d.requirement, module)), None)


def environment_cause(result: TestCaseResult, changed_paths: Collection[str],
                      absent_submodules: Collection[str] = (),
                      left_out: Collection[DeclaredRequirement] = ()) -> str | None:
    """Why a failing test's error is the sandbox's environment and not the change, or None.

    Only errors that no change to the project's own code can produce in the sandbox count: a program the image
    lacks (the name must be a bare command, so a missing data file of the project is not one), a system library
    that cannot be loaded, the sandbox's missing network (name resolution or an unreachable network, never a refused
    local connection, which a broken local server also gives), a git submodule the base declares and the clone
    lacks, and, in a test file the change does not touch, a module that is not the project's own and that the
    change's paths do not define, or, in any test, a module of an optional extra the base declares and the
    environment did not install (``left_out``: the base's plan, never the change's). Nothing whose top-level name is
    a path the change touched counts.
    """
    message = result.message or ""
    touched = _top_levels(changed_paths)
    missing = MISSING_MODULE.search(message)
    module = missing.group(1) if missing else ""
    for submodule in absent_submodules:
        dotted = submodule.replace("/", ".")
        named = (submodule + "/" in message or _file_of(result.name).startswith(submodule + "/")
                 or (module != "" and (module.split(".")[0] == submodule.rsplit("/", 1)[-1] or module == dotted
                                       or module.startswith(dotted + "."))))
        if named and (module.split(".")[0] if module else submodule.split("/")[0]) not in touched:
            return f"the git submodule '{submodule}' is not in the clone (submodules are not fetched)"
    program = MISSING_PROGRAM.search(message)
    if program and _is_program_name(program.group(1)) and program.group(1) not in touched:
        return f"the sandbox has no program '{program.group(1)}' (the test runs it)"
    command = COMMAND_NOT_FOUND.search(message)
    if command and _is_program_name(command.group(1)):
        return f"the sandbox has no program '{command.group(1)}' (command not found)"
    library = MISSING_LIBRARY.search(message)
    if library:
        name = next(g for g in library.groups() if g)
        return f"the sandbox lacks the system library {name}"
    if NO_NETWORK.search(message):
        return "the test needs the network, which the sandbox does not have"
    top = module.split(".")[0]
    if module and result.outcome == "error" and _file_of(result.name) not in changed_paths and top not in touched:
        return f"the module '{module}' is not installed in the sandbox's environment"
    extra = _left_out_extra(module, left_out) if module and top not in touched else None
    if extra is not None:
        return (f"the module '{module}' comes from {extra.requirement}, an optional requirement ({extra.source}) "
                "the sandbox's environment does not install")
    return None


QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
# a new test failing as this many tests already fail at base fails for the reason they do (data the checkout
# lacks: babel's CLDR files are generated, not committed), not for the change
SHARED_AT_BASE = 10


LOCATION = re.compile(r"^[^\s:]+:\d+: ")  # "path/to/file.py:61: " before an exception


def _signatures(message: str | None) -> list[str]:
    """The exceptions a failure reports (each line, and each `` | ``-joined part, that reads ``Kind: text``, its
    ``path:line:`` prefix cut), numbers and quoted text blanked, last first; never an assertion, which says what
    the test checks, not what the environment lacks."""
    parts = [p.strip() for line in (message or "").splitlines() for p in line.split(" | ") if p.strip()]
    found: list[str] = []
    for part in reversed(parts):
        part = LOCATION.sub("", part)
        kind = part.split(":", 1)[0]
        if "Assert" in kind or part.startswith(("assert", "E ")) or ":" not in part or " " in kind.strip():
            continue
        signature = NUMBER.sub("#", QUOTED.sub("'…'", part))
        if signature not in found:
            found.append(signature)
    return found


def _base_signatures(at_base: dict[str, TestCaseResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in at_base.values():
        if result.outcome in FAILING:
            for signature in _signatures(result.message):
                counts[signature] = counts.get(signature, 0) + 1
    return counts


def _shared_base_cause(result: TestCaseResult, shared: dict[str, int]) -> str | None:
    """Why a test fails for the environment: its failure reports the very error (but for numbers and quoted
    names) that :data:`SHARED_AT_BASE` or more tests already fail with at base — babel's "data files are not
    available", raised inside a ``pytest.warns`` block or in code the change now reaches. An assertion never
    qualifies. The court holds such a test ``neutral`` (the environment), never ``pass``."""
    counted = [(shared.get(signature, 0), signature) for signature in _signatures(result.message)]
    count, signature = max(counted, default=(0, ""))
    if count < SHARED_AT_BASE:
        return None
    return f"it fails as {count} tests already fail at base ({signature[:160]}): the environment, not the change"


def _stale_release_data(base: TestRunResult, head: TestRunResult) -> str | None:
    """Why a test failing at head is the environment's when release data stood in at base and head alike for
    files the project generates (sandbox/release_data.py) and the base already fails tests with it: the release's
    copy is not the base's own (babel's tables of an older CLDR than its tests expect), so a change that moves the
    code towards the data its generator would write fails for the stand-in. Held ``neutral``, never ``pass``; with
    a stand-in the base's tests all pass with, a failure is the change's."""
    filled = head.environment.release_data if head.environment is not None else None
    if filled is None or base.environment is None or base.environment.release_data != filled:
        return None
    failing = base.failed + base.errored
    if not failing:
        return None
    return (f"{failing} tests already fail at base with the data of {filled} standing in for what the project "
            "generates: the release's copy is not the base's own, the environment, not the change")


def _left_out(base: TestRunResult) -> tuple[DeclaredRequirement, ...]:
    return base.environment.left_out if base.environment is not None else ()


def _failing(result: TestCaseResult | None) -> bool:
    return result is not None and result.outcome in FAILING


def _base_outcome(result: TestCaseResult) -> str:
    if result.outcome == "skipped" and (result.message or "").startswith("xfail"):
        return "xfailed"
    return result.outcome


MAX_RERUN = 50  # node ids re-run per tree: a change with more failures than this is judged on the first run


def _passed(result: TestCaseResult | None) -> bool:
    return result is not None and result.outcome == PASSED and not result.rewritten


def _tally(name: str, reruns: Collection[TestRunResult], good: str) -> tuple[int, int]:
    """``(runs that reported the test, runs where it was 'good')``; good = ``passed`` or ``failing``."""
    seen = hits = 0
    for run in reruns:
        if run.status not in ("ran", "no_tests"):
            continue
        result = outcomes(run).get(name)
        if result is None:
            continue
        seen += 1
        if (good == PASSED and _passed(result)) or (good != PASSED and result.outcome in FAILING):
            hits += 1
    return seen, hits


def apply_reruns(diff: TestDiff, at_head: Collection[TestRunResult], under_oracle: Collection[TestRunResult],
                 at_base: Collection[TestRunResult]) -> TestDiff:
    """Move the failures that re-runs do not reproduce from *regressed* / *new failing* to *flaky*.

    A new failing test is flaky when it passed on a re-run at head; a regressed one when it passed on a re-run
    under the base's oracle or failed on a re-run at base. A re-run reported passing although its call raised
    (``rewritten``), skipped or missing proves nothing. A tampered test stays regressed whatever its re-runs say.
    """
    if not (diff.regressed or diff.new_failing):  # with no usable base, new failing ones are re-run too
        return diff
    tampered = {t.name for t in diff.tampered}
    flaky: list[TestChange] = list(diff.flaky)
    regressed: list[TestChange] = []
    for change in diff.regressed:
        passed_seen, passed = _tally(change.name, under_oracle, PASSED)
        base_seen, failed_at_base = _tally(change.name, at_base, "failing")
        if change.name in tampered or not (passed or failed_at_base):
            regressed.append(change)
            continue
        why = (f"passed on {passed} of {passed_seen} re-run(s) with this change" if passed else
               f"failed on {failed_at_base} of {base_seen} re-run(s) at base")
        flaky.append(change.model_copy(update={"cause": why}))
    new_failing: list[TestChange] = []
    for change in diff.new_failing:
        seen, passed = _tally(change.name, at_head, PASSED)
        if passed:
            flaky.append(change.model_copy(update={"cause": f"passed on {passed} of {seen} re-run(s)"}))
        else:
            new_failing.append(change)
    return diff.model_copy(update={"regressed": tuple(regressed), "new_failing": tuple(new_failing),
                                   "flaky": tuple(flaky[:LISTED])})


def head_alone(reason: str, status: str, base: TestRunResult, head: TestRunResult, guard: TestRunResult | None,
               changed_tests: Collection[str], changed_paths: Collection[str]) -> TestDiff:
    """The head judged without a reference: its failing tests are the change's when the change edited their file
    (the file itself: a data file beside it says nothing of a test that may have failed before)."""
    new_failing: list[TestChange] = []
    unattributed: list[TestChange] = []
    environmental: list[TestChange] = []
    pre_existing: list[str] = []
    at_base = outcomes(base)
    shared = _base_signatures(at_base)  # the base's own breakage: the same error at head is not the change's
    for name, result in sorted(outcomes(head).items()):
        if result.outcome not in FAILING:
            continue
        change = _change(name, None, result, result.outcome)
        cause = (environment_cause(result, changed_paths, head.absent_submodules, _left_out(base))
                 or _shared_base_cause(result, shared))
        test_file = _file_of(name)
        was = at_base.get(name)
        if was is not None and was.outcome == result.outcome and _signatures(was.message)[:1] == _signatures(
                result.message)[:1] != []:
            pre_existing.append(name)  # it failed the same way at base (pyyaml's Python 2 test modules)
        elif cause is not None:
            environmental.append(change.model_copy(update={"cause": cause}))
        elif test_file in changed_tests:
            new_failing.append(change)
        else:
            unattributed.append(change)
    new_passing = [n for n, r in sorted(outcomes(head).items()) if r.outcome == PASSED]
    return TestDiff(status="env_error" if status == "env_error" else "not_measured", reason=reason,
                    new_failing=tuple(new_failing[:LISTED]), unattributed=tuple(unattributed[:LISTED]),
                    environmental=tuple(environmental[:LISTED]), new_passing=tuple(new_passing[:LISTED * 5]),
                    pre_existing=tuple(pre_existing[:LISTED * 5]), base_tests=base, guard_tests=guard,
                    mutants=head.mutants)


NUMBER = re.compile(r"\d+")


def _shape(text: str) -> str:
    """A node id or message with its numbers blanked (``[docs/index.md:12-40]`` → ``[docs/index.md:#-#]``)."""
    return NUMBER.sub("#", text)


def _vanished_failures(at_base: dict[str, TestCaseResult],
                       at_head: dict[str, TestCaseResult]) -> dict[str, list[TestCaseResult]]:
    """Parametrised cases that failed at base and have no outcome at head, by the shape of their node id."""
    vanished: dict[str, list[TestCaseResult]] = {}
    for name, result in sorted(at_base.items()):
        if "[" in name and result.outcome in FAILING and name not in at_head:
            vanished.setdefault(_shape(name), []).append(result)
    return vanished


def _same_failure_renumbered(result: TestCaseResult, vanished: dict[str, list[TestCaseResult]]) -> bool:
    """Whether a new failing case is a base failing case whose parameter id holds numbers the change shifted (a
    documentation example's line range): same test function, same id and same failure but for the numbers, and
    each base case matched once."""
    candidates = vanished.get(_shape(result.name), []) if "[" in result.name else []
    for i, was in enumerate(candidates):
        if was.outcome == result.outcome and _shape(was.message or "") == _shape(result.message or ""):
            del candidates[i]
            return True
    return False


def classify(base: TestRunResult, head: TestRunResult, guard: TestRunResult | None,
             changed_tests: Collection[str], changed_paths: Collection[str] = (),
             removed_names: Collection[str] = (), renamed: Mapping[str, str] | None = None,
             declared: Mapping[tuple[str, str], str] | None = None,
             data_renames: Sequence[tuple[str, str]] = ()) -> TestDiff:
    """Classify every test; ``changed_tests`` are the test paths (files and data) the change touched,
    ``changed_paths`` every path it touched (for :func:`environment_cause`), ``removed_names`` the names the
    change deleted from product code (:func:`checks.removed_names.removed_names`, for *retired* tests),
    ``renamed`` the test functions it renamed where they stand (:func:`checks.removed_names.renamed_tests`),
    ``declared`` the tests it deleted with a behaviour its changelog entry declares changed
    (:func:`checks.declared_changes.declared_deletions`), ``data_renames`` the names of the test data files it
    renamed (:func:`checks.removed_names.renamed_data`: a test named after its data file is renamed with it)."""
    changed_paths = set(changed_paths) | set(changed_tests)
    failure = base_failure(base)
    if failure is not None:
        status = "env_error" if base.status in ("env_error", "ran", "no_tests") else "not_measured"
        if head.status in ("ran", "timeout", "error") and (head.tests or head.collection_errors):
            return head_alone(failure, status, base, head, guard, changed_tests, changed_paths)
        return TestDiff(status=status, reason=failure, base_tests=base, guard_tests=guard, mutants=head.mutants)
    oracle = guard if guard is not None else head
    if oracle.status in ("not_measured",):
        return TestDiff(status="not_measured", reason=f"the guard run was not measured: {oracle.reason}",
                        base_tests=base, guard_tests=guard, mutants=head.mutants)
    at_base, at_head, under_oracle = outcomes(base), outcomes(head), outcomes(oracle)
    passing_functions = {_function_of(n) for n, r in at_head.items() if r.outcome == PASSED}
    failing_functions = {_function_of(n) for n, r in at_head.items() if r.outcome in FAILING}
    passing_by_file = {(_file_of(n), _test_function(n)) for n, r in at_head.items() if r.outcome == PASSED}
    renamed = renamed or {}
    declared = declared or {}
    changed_dirs = {path.rsplit("/", 1)[0] for path in changed_tests if "/" in path}
    regressed: list[TestChange] = []
    tampered: list[TestChange] = []
    new_failing: list[TestChange] = []
    fixed: list[str] = []
    new_passing: list[str] = []
    pre_existing: list[str] = []
    removed: list[str] = []
    expectation: list[str] = []
    past_cap: list[str] = []
    unreached: list[str] = []
    unattributed: list[TestChange] = []
    retired: list[TestChange] = []
    declared_changes: list[TestChange] = []
    unchanged = 0
    for name, was in sorted(at_base.items()):
        now = under_oracle.get(name)
        now_outcome = now.outcome if now else "missing"
        at_h = at_head.get(name)
        head_outcome = at_h.outcome if at_h else "missing"
        if was.outcome == PASSED:
            if (now is None and oracle.past_cap) or (now_outcome == PASSED and at_h is None and head.past_cap):
                past_cap.append(name)  # the run recorded no outcome for it: not measured, never 'removed'
            elif ((now is None and oracle.status in INCOMPLETE and not _failing(at_h))
                  or (now_outcome == PASSED and at_h is None and head.status in INCOMPLETE)):
                unreached.append(name)  # the run stopped before it: not measured, never 'regressed' or 'removed'
            elif now_outcome == PASSED:
                if head_outcome in FAILING:
                    new_failing.append(_change(name, was.outcome, at_h, head_outcome))
                elif head_outcome in ("missing", "skipped"):
                    removed.append(name)
                else:
                    unchanged += 1
            elif head_outcome == PASSED or (head_outcome == "missing" and (
                    ("[" in name and _function_of(name) in passing_functions)  # another case of its function
                    or (name in passing_functions and name not in failing_functions)  # parametrised: its cases pass
                    or _renamed_passes(name, renamed, passing_by_file)
                    or _renamed_data_passes(name, data_renames, at_head))):
                test_file = _file_of(name)
                edited = test_file in changed_tests or any(test_file.startswith(d + "/") for d in changed_dirs)
                if edited:
                    expectation.append(name)
                else:
                    tampered.append(_change(name, was.outcome, now, now_outcome))
                    regressed.append(_change(name, was.outcome, now, now_outcome))
            elif (head_outcome == "missing" and now is not None and _file_of(name) in changed_tests
                  and (symbol := names_removed_symbol([now.message], removed_names)) is not None):
                retired.append(_change(name, was.outcome, now, now_outcome).model_copy(update={
                    "cause": f"the change deleted this test with '{symbol}', which it removed"}))
            elif (head_outcome == "missing" and _file_of(name) in changed_tests
                  and (word := declared.get((_file_of(name), _test_function(name)))) is not None):
                declared_changes.append(_change(name, was.outcome, now, now_outcome).model_copy(update={
                    "cause": f"the change deleted this test, which uses '{word}', and its changelog entry declares "
                             f"'{word}' changed"}))
            else:
                regressed.append(_change(name, was.outcome, now or at_h, now_outcome))
        elif was.outcome in FAILING:
            if _failing(at_h) and at_h is not None and at_h.outcome != was.outcome:
                new_failing.append(_change(name, was.outcome, at_h, head_outcome))  # it fails another way now
            elif now_outcome == PASSED and not _failing(at_h):
                fixed.append(name)
            else:
                pre_existing.append(name)
        elif _failing(at_h):  # skipped or expected to fail at base (xfail), failing at head
            new_failing.append(_change(name, _base_outcome(was), at_h, head_outcome))
    renumbered = _vanished_failures(at_base, at_head)
    for name, result in sorted(at_head.items()):
        if result.rewritten:
            tampered.append(_change(name, at_base[name].outcome if name in at_base else None, result, "rewritten"))
        if name in at_base:
            continue
        if result.outcome == PASSED:
            new_passing.append(name)
        elif result.outcome in FAILING:
            test_file = _file_of(name)
            touched = test_file in changed_tests or any(test_file.startswith(d + "/") for d in changed_dirs)
            if _same_failure_renumbered(result, renumbered):
                pre_existing.append(name)  # the base's failing case under another line number: not the change's
            elif base.past_cap and not touched:  # perhaps a base test the base's run did not record
                unattributed.append(_change(name, None, result, result.outcome))
            else:
                new_failing.append(_change(name, None, result, result.outcome))
    environmental: list[TestChange] = []
    shared = _base_signatures(at_base)
    for group in (regressed, new_failing):
        for change in list(group):
            if any(t.name == change.name for t in tampered):
                continue
            case = TestCaseResult(name=change.name, outcome="error" if change.head == "error" else "failed",
                                  message=change.message)
            cause = environment_cause(case, changed_paths, head.absent_submodules, _left_out(base))
            if cause is None and (group is regressed or change.base is None):
                cause = _shared_base_cause(case, shared)
            cause = cause or _stale_release_data(base, head)
            if cause is not None:
                group.remove(change)
                environmental.append(change.model_copy(update={"cause": cause}))
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
        environmental=tuple(environmental[:LISTED]),
        past_cap=tuple(past_cap[:LISTED]),
        unreached=tuple(unreached[:LISTED]),
        unattributed=tuple(unattributed[:LISTED]),
        retired=tuple(retired[:LISTED]),
        declared=tuple(declared_changes[:LISTED]),
        mutants=head.mutants,
        base_tests=base,
        guard_tests=guard,
    )
