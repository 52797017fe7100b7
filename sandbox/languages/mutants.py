"""Mutants of JavaScript/TypeScript and Go product lines (:mod:`checks.languages.mutation_syntax`), run in the head's
test container after its tests, within the rubric's mutation budget.

Each mutant's file and each mutated file's original are put beside the tree, read-only, when the container starts
(:func:`files`). A mutant runs as one command in the same container: its file copied over the tree's, then the same
test command as the head's run, under ``timeout`` (so a mutant that hangs the tests ends its own command, not the
container); the original is copied back after it, whatever happened. No coverage is recorded for these languages,
so every mutant runs against the whole command's tests; it is **killed** when a test that passed at head does not
pass (failed, errored, or never reported), when a test file no longer loads, or when the run does not end
(``timeout``); **survived** when every test that passed at head passes again; **not run** when the budget is spent,
or when the mutated code does not build (Go), which says nothing of the tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checks.models import Mutant, MutantResult, TestCaseResult, TestSpec

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Exec
    from sandbox.limits import SandboxLimits

HERE = "/sandbox/logomesh"
REPO = "/sandbox/repo"
SLACK_SECONDS = 10.0  # a mutant's run may take twice the head's and this much more before it counts as a hang
TIMED_OUT = (124, 137)  # timeout's own exit codes: TERM sent, KILL sent


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


def judge(passed_at_head: frozenset[str], errors_at_head: frozenset[str], outcome: Outcome) -> str:
    """``killed`` / ``survived`` / ``not_run`` for one mutant's run (module docstring)."""
    if outcome.unbuilt:
        return "not_run"
    passing = {t.name for t in outcome.tests if t.outcome == "passed"}
    if not outcome.ended or not passed_at_head <= passing:
        return "killed"
    if any(e.name not in errors_at_head for e in outcome.errors):
        return "killed"
    return "survived"


async def run_mutants(sandbox: DockerSandbox, run: Any, mutants: Sequence[Mutant], budget_seconds: float,
                      head_seconds: float, head_tests: Sequence[TestCaseResult],
                      head_errors: Sequence[TestCaseResult], command: tuple[list[str], str],
                      env: dict[str, str], limits: SandboxLimits,
                      read: Callable[[_Exec], Outcome]) -> tuple[MutantResult, ...]:
    """Each mutant against the head's test command (``command``: its argv and working folder), one after
    another until ``budget_seconds`` are spent; ``read`` turns a run into its :class:`Outcome`."""
    passed = frozenset(t.name for t in head_tests if t.outcome == "passed")
    failed_files = frozenset(e.name for e in head_errors)
    deadline = time.monotonic() + budget_seconds
    originals = original_names(mutants)
    each = 2 * head_seconds + SLACK_SECONDS
    argv, workdir = command
    results: list[MutantResult] = []
    for index, mutant in enumerate(mutants):
        left = deadline - time.monotonic()
        if not passed or left < head_seconds + 1:
            results.append(result(mutant, "not_run"))
            continue
        seconds = max(1, int(min(left, each)))
        target = f"{REPO}/{mutant.path}"
        wrapped = ["sh", "-c", f'cp {HERE}/{mutant_name(index)} "$0" && exec timeout -s KILL {seconds} "$@"',
                   target, *argv]
        try:
            done = await sandbox._exec_in(run.container, wrapped, limits.with_timeout(seconds + 30), env=env,
                                          run=run, workdir=workdir, channel=True)
        finally:
            restored = await sandbox._exec_in(run.container, ["cp", f"{HERE}/{originals[mutant.path]}", target],
                                              limits.with_timeout(30), workdir=REPO)
        if done.timed_out or restored.exit_code != 0:  # the container is gone, or the tree is not the head's
            results.append(result(mutant, "timeout" if done.timed_out else "not_run"))
            results += [result(m, "not_run") for m in mutants[index + 1:]]
            break
        if done.exit_code in TIMED_OUT and not done.oom_killed:
            status = "timeout"
        else:
            status = judge(passed, failed_files, read(done))
        results.append(result(mutant, status, len(passed) if status != "not_run" else 0))
    return tuple(results)
