"""Mutants of JavaScript/TypeScript and Go product lines (:mod:`checks.languages.mutation_syntax`), run in the head's
test container after its tests, within the rubric's mutation budget.

Each mutant's file and each mutated file's original are put beside the tree, read-only, when the container starts
(:func:`files`). A mutant runs as one command in the same container: its file copied over the tree's, then the same
test command as the head's run, under ``timeout`` (so a mutant that hangs the tests ends its own command, not the
container); the original is copied back after it, whatever happened. A mutant on a line the head's tests never
ran (:mod:`sandbox.languages.coverage`: Go's cover profile, V8's coverage for node's runner and Mocha) is
**uncovered** and not run; every other mutant runs against the whole command's tests; it is **killed** when a test
that passed at head does not pass (failed, errored, or never reported), when a test file no longer loads, or when
the run does not end (``timeout``); **survived** when every test that passed at head passes again; **not run** when
the budget is spent, or when the mutated code does not build (Go), which says nothing of the tests.

**The control.** The tests run again in the same container after the mutants, on the unmutated tree, the same way
(the budget keeps a head run's time for it). A kill counts only when its run told something this control did not:
a test that fails, a file that does not load or a run that hangs on the unmutated code too — a test that remembers
an earlier run (a file it left), or a flaky one — detects no mutant, and the mutants it alone "killed" are
**survived**.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checks.models import Mutant, MutantResult, TestCaseResult, TestSpec

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Exec
    from sandbox.languages.coverage import LineCoverage
    from sandbox.limits import SandboxLimits

HERE = "/sandbox/logomesh"
REPO = "/sandbox/repo"
SLACK_SECONDS = 10.0  # a mutant's run may take twice the head's and this much more before it counts as a hang
TIMED_OUT = (124, 137)  # timeout's own exit codes: TERM sent, KILL sent
TIMED_OUT_DETECTION = "(the run did not end in time)"


def mutant_name(index: int) -> str:
    return f"mutant-{index}"


def original_names(mutants: Sequence[Mutant]) -> dict[str, str]:
    """Each mutated file's path → the name of its original beside the tree."""
    return {path: f"original-{n}" for n, path in enumerate(sorted({m.path for m in mutants}))}


def files(mutants: Sequence[Mutant], read: Callable[[str], str | None]) -> dict[str, bytes]:
    """The files to put beside the tree: each mutant's whole file and each mutated file's original."""
    found: dict[str, bytes] = {mutant_name(i): m.source.encode("utf-8") for i, m in enumerate(mutants)}
    for path, name in original_names(mutants).items():
        original = read(path)
        if original is not None:
            found[name] = original.encode("utf-8")
    return found


def result(mutant: Mutant, status: str, tests_run: int = 0) -> MutantResult:
    return MutantResult(id=mutant.id, path=mutant.path, line=mutant.line, description=mutant.description,
                        status=status, tests_run=tests_run)


def tests_limits(limits: SandboxLimits, spec: TestSpec) -> SandboxLimits:
    """The limits of the tests' own run: the run's wall clock without what it holds for the mutants."""
    from sandbox.docker_sandbox import MUTATION_GRACE_SECONDS

    held = spec.mutation_seconds + MUTATION_GRACE_SECONDS if spec.mutants else 0.0
    return limits.with_timeout(limits.timeout_seconds - held)


@dataclass(frozen=True)
class Outcome:
    """What one mutant's run reported: its tests, its file errors, and whether the runner saw the run's end."""

    tests: Sequence[TestCaseResult]
    errors: Sequence[TestCaseResult]
    ended: bool = True
    unbuilt: bool = False  # the mutated code does not build (Go): the mutant is not valid code


UNENDED = "(the run did not end)"


def detections(passed_at_head: frozenset[str], errors_at_head: frozenset[str], outcome: Outcome) -> frozenset[str]:
    """What in one run tells it from the head's: each test that passed at head and does not pass, each test file that
    fails to load and did not at head, and a run the runner did not see end."""
    passing = {t.name for t in outcome.tests if t.outcome == "passed"}
    found = set(passed_at_head - passing) | {e.name for e in outcome.errors if e.name not in errors_at_head}
    if not outcome.ended:
        found.add(UNENDED)
    return frozenset(found)


def judge(passed_at_head: frozenset[str], errors_at_head: frozenset[str], outcome: Outcome) -> str:
    """``killed`` / ``survived`` / ``not_run`` for one mutant's run (module docstring)."""
    if outcome.unbuilt:
        return "not_run"
    return "killed" if detections(passed_at_head, errors_at_head, outcome) else "survived"


def confirmed(found: dict[str, frozenset[str]], control: frozenset[str]) -> set[str]:
    """The mutants (by id) whose run told something the unmutated code's control run did not: a test that fails, or a
    run that hangs, on the unmutated code too (it remembers an earlier run, it is flaky) detects no mutant."""
    return {mutant for mutant, seen in found.items() if seen - control}


async def run_mutants(sandbox: DockerSandbox, run: Any, mutants: Sequence[Mutant], budget_seconds: float,
                      head_seconds: float, head_tests: Sequence[TestCaseResult],
                      head_errors: Sequence[TestCaseResult], command: tuple[list[str], str],
                      env: dict[str, str], limits: SandboxLimits,
                      read: Callable[[_Exec], Outcome],
                      coverage: LineCoverage | None = None, scratch: Sequence[str] = ()) -> tuple[MutantResult, ...]:
    """Each mutant against the head's test command (``command``: its argv and working folder), one after
    another until ``budget_seconds`` are spent; ``read`` turns a run into its :class:`Outcome`; a mutant on a line
    ``coverage`` says no test ran is uncovered, never run. ``scratch``: what the head's run wrote outside the tree
    (its coverage), removed before each mutant's run, which has the same command and environment — so a test cannot
    tell a mutant's run from the head's by them."""
    passed = frozenset(t.name for t in head_tests if t.outcome == "passed")
    failed_files = frozenset(e.name for e in head_errors)
    deadline = time.monotonic() + budget_seconds
    originals = original_names(mutants)
    each = 2 * head_seconds + SLACK_SECONDS
    argv, workdir = command
    uncovered = {m.id for m in mutants if coverage is not None and coverage.covered(m.path, m.line) is False}

    def unrun(mutant: Mutant) -> MutantResult:
        return result(mutant, "uncovered" if mutant.id in uncovered else "not_run")

    clear = "".join(f"rm -rf {shlex.quote(path)} && " for path in scratch)

    async def tests_once(copy: str, seconds: int) -> _Exec:
        wrapped = ["sh", "-c", f'{clear}{copy}exec timeout -s KILL {seconds} "$@"', "sh", *argv]
        return await sandbox._exec_in(run.container, wrapped, limits.with_timeout(seconds + 30), env=env, run=run,
                                      workdir=workdir, channel=True)

    def seen(done: _Exec) -> frozenset[str] | None:
        """The run's detections; None when the mutated code does not build."""
        if done.exit_code in TIMED_OUT and not done.oom_killed:
            return frozenset({TIMED_OUT_DETECTION})
        outcome = read(done)
        return None if outcome.unbuilt else detections(passed, failed_files, outcome)

    results: list[MutantResult] = []
    found: dict[str, frozenset[str]] = {}
    for index, mutant in enumerate(mutants):
        left = deadline - time.monotonic()
        # a mutant's run, and after the last one the control's: both must fit
        if mutant.id in uncovered or not passed or left < 2 * (head_seconds + 1):
            results.append(unrun(mutant))
            continue
        seconds = max(1, int(min(left - head_seconds - 1, each)))
        target = f"{REPO}/{mutant.path}"
        try:
            done = await tests_once(f'cp {HERE}/{mutant_name(index)} {shlex.quote(target)} && ', seconds)
        finally:
            restored = await sandbox._exec_in(run.container, ["cp", f"{HERE}/{originals[mutant.path]}", target],
                                              limits.with_timeout(30), workdir=REPO)
        if done.timed_out or restored.exit_code != 0:  # the container is gone, or the tree is not the head's
            results.append(result(mutant, "timeout" if done.timed_out else "not_run"))
            results += [unrun(m) for m in mutants[index + 1:]]
            return tuple(results)
        detected = seen(done)
        if detected is None:
            results.append(result(mutant, "not_run"))
            continue
        if detected:
            found[mutant.id] = detected
        results.append(result(mutant, ("timeout" if TIMED_OUT_DETECTION in detected else "killed") if detected
                              else "survived", len(passed)))
    if found:
        # the control: the unmutated tree, run the same way after the mutants
        control = await tests_once("", max(1, int(min(max(deadline - time.monotonic(), head_seconds + 1), each))))
        told = frozenset({TIMED_OUT_DETECTION}) if control.timed_out else (seen(control) or frozenset())
        real = confirmed(found, told)
        results = [r.model_copy(update={"status": "survived"}) if r.id in found and r.id not in real else r
                   for r in results]
    return tuple(results)
