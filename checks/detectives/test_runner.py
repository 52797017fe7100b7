"""TestRunner — the change's tests, run for real in the sandbox at the head and at the base, and compared.

What: asks the :class:`~checks.protocols.Sandbox` for three runs: the head commit (with mutants of the changed
product lines, each run against the tests that covered its line), the base commit, and — when the change
touched test files, test configuration or the files the environment is planned from (requirements, pyproject,
lock files) — the *guard* tree (the head's product code under the base's tests and
configuration). :func:`checks.differential.classify` keys them by node id: regressed, new failing, tampered,
fixed, pre-existing failures, removed. Each is evidence with the failing line and message; so are surviving
mutants, the environment the tests ran in, and an environment that could not run them.
Why: T is ground truth. A pass rate at head alone can be forged by the change (a conftest hook, a deselection,
a deleted test) and charges old failures to the author; the base's oracle and the mutants cannot be.
Example: ``regressed: tests/test_ops.py::test_add — tests/test_ops.py:5: assert 6 == 5``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from checks.constraints import own_packages
from checks.declared_changes import declared_deletions
from checks.dependencies import dependency_changes, describe, startup_key, startup_owner, startup_severity
from checks.dependency_drift import (
    better,
    broken_tooling,
    closer,
    drift,
    interpreter_broke,
    older_interpreter,
    other_interpreter,
    stale_failures,
    stdlib_drift,
    within_lines,
)
from checks.detectives.registry import register
from checks.differential import MAX_RERUN, apply_reruns, classify
from checks.languages import GO, JAVASCRIPT, PYTHON, language_of_test, languages_of, merge_runs
from checks.languages import javascript as court_js
from checks.linguist import runtime
from checks.models import Case, DetectiveReport, Evidence, Location, Mutant, TestDiff, TestRunResult, TestSpec
from checks.mutation import mutants_for
from checks.protocols import CourtResources, Sandbox
from checks.removed_names import removed_names, renamed_data, renamed_tests
from checks.testpaths import is_environment_path, is_harness_path, is_test_path
from rubric import Rubric

ID = "tests"
MAX_FAILURES_LISTED = 20
MAX_MUTANTS_LISTED = 10
# what a review stores of one run: a PR controls how many tests it has, not how big its audit record grows
MAX_CASES_KEPT = 200
MAX_IDS_KEPT = 200


# what :meth:`TestRunner._retry` keeps: the spec the runs were made with, the evidence saying why, the runs
Kept = tuple[TestSpec, Evidence, list[TestRunResult]]
# one environment's runs: (its base's run, every tree's runs, or None when the base alone did not get closer)
Runner = Callable[[TestSpec, TestRunResult], Awaitable[tuple[TestRunResult, list[TestRunResult] | None]]]


def _older_said(python: str, chosen: str | None, removed: str) -> Evidence:
    """The evidence of a run under an older interpreter for a name the standard library removed."""
    return Evidence(
        id=f"{ID}.interpreter", detective=ID, kind="interpreter-fallback", severity="info",
        facts={"python": python, "instead_of": chosen, "broke_at": "base", "removed": removed},
        summary=(f"The tests ran with Python {python}: under Python {chosen} the base commit's code calls what the "
                 f"standard library has since removed ({removed[:200]})"))


class TestRunner:
    __test__ = False  # not a pytest test class
    id = ID

    def __init__(self, sandbox: Sandbox | None, unavailable_reason: str = "no sandbox is configured") -> None:
        self.sandbox = sandbox
        self.unavailable_reason = unavailable_reason

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport:
        if self.sandbox is None:
            result = TestRunResult(status="not_measured", reason=self.unavailable_reason)
            return DetectiveReport(detective=ID, evidence=tuple(evidence_for(result)), tests=result)
        spec = case.test_spec
        if spec.timeout_seconds > rubric.testing.timeout_seconds:
            spec = spec.model_copy(update={"timeout_seconds": rubric.testing.timeout_seconds})
        mutation = rubric.testing.mutation
        mutants = mutants_for(case, mutation.max_mutants) if not spec.command else ()
        # the guard runs when the change touched the harness or what the environment is planned from
        guarded = any(is_harness_path(p) or is_environment_path(p) for f in case.files
                      for p in (f.path, f.old_path) if p)
        trees = ("head", "base", "guard") if guarded else ("head", "base")
        languages = languages_of(case)
        runs = []
        for language in languages:  # each language plug-in runs its own tests; one result per tree
            for tree in trees:
                update: dict[str, object] = {"tree": tree, "language": language}
                if tree == "head":  # each language's mutants run with its own head's tests
                    own = mutants if language == PYTHON else mutants_for(case, mutation.max_mutants, language)
                    update.update(mutants=own, mutation_seconds=mutation.seconds if own else 0.0)
                runs.append(self.sandbox.run_tests(spec.model_copy(update=update)))
        # side by side: the base is usually cached, and the guard run overlaps the head's
        answers = list(await asyncio.gather(*runs))
        retried: Evidence | None = None
        if PYTHON in languages:
            at = languages.index(PYTHON) * len(trees)
            again = await self._retry(case, spec, trees, answers[at:at + len(trees)], mutants, mutation.seconds)
            if again is not None:
                spec, retried, answers[at:at + len(trees)] = again
        per_tree = [merge_runs(answers[i::len(trees)]) for i in range(len(trees))]
        head, base, guard = per_tree[0], per_tree[1], (per_tree[2] if guarded else None)
        diff = differential(case, base, head, guard)
        changes, startup = dependency_changes(base, head)
        diff = diff.model_copy(update={"dependencies": changes, "startup_added": startup})
        diff = await self._rerun(spec, diff, guarded, rubric.testing.reruns)
        # compared with the base, the differential names the failing tests; on its own, the head run does
        classified = diff.new_failing or diff.unattributed or diff.environmental or diff.flaky
        evidence = (([retried] if retried is not None else [])
                    + evidence_for(head, list_failures=diff.status != "measured" and not classified)
                    + diff_evidence(diff)
                    + dependency_evidence(diff)
                    + mutant_evidence(diff))
        diff = diff.model_copy(update={"base_tests": compact(base),
                                       "guard_tests": compact(guard) if guard is not None else None})
        return DetectiveReport(detective=ID, evidence=tuple(evidence), tests=compact(head), differential=diff)


    async def _retry(self, case: Case, spec: TestSpec, trees: tuple[str, ...], runs: list[TestRunResult],
                     mutants: tuple[Mutant, ...], mutation_seconds: float,
                     ) -> Kept | None:
        """When the environment broke the base (:mod:`checks.dependency_drift`) — today's releases of its
        dependencies no longer fit it, or pytest broke inside itself under the chosen interpreter — the Python runs
        again in another environment: the releases uploaded before the base commit's date, or another interpreter
        the project admits. ``(the spec they ran with, the evidence saying why, the runs)`` when they measure more,
        else None. An environment the repository set in ``.logomesh.yml`` is left as it is."""
        base = runs[trees.index("base")]
        if self.sandbox is None or spec.environment is not None:
            return None
        # releases can only be dated where something is installed from an index
        installs = base.environment is None or bool(base.environment.requirements)
        sign = drift(base, own_packages(case.head_paths)) if case.base_committed_at and installs else None
        python = other_interpreter(base) if sign is None else None
        head_run = runs[trees.index("head")]
        mended = "base"
        if sign is None and python is None and interpreter_broke(head_run):
            python, mended = other_interpreter(head_run), "head"
        removed = stdlib_drift(base) if sign is None and python is None else None
        if removed is not None:
            python = older_interpreter(base)
        if sign is None and python is None and installs:
            sign = stale_failures(base, case.base_committed_at)
        lifted = broken_tooling(base) if sign is None and python is None else ()
        if sign is not None:
            other = spec.model_copy(update={"dependencies_as_of": case.base_committed_at})
            said = Evidence(
                id=f"{ID}.dependency-drift", detective=ID, kind="dependency-drift", severity="info",
                facts={"uploaded_before": case.base_committed_at, "drift": sign},
                summary=(f"The tests ran with the dependencies' releases uploaded before {case.base_committed_at} "
                         f"(the base commit's date): with today's releases the base commit itself fails "
                         f"({sign[:200]}), and with its day's releases it fails less"))
        elif python is not None:
            other = spec.model_copy(update={"python": python})
            broken = base if mended == "base" else head_run
            chosen = broken.environment.python if broken.environment is not None else None
            said = (_older_said(python, chosen, removed) if removed is not None else Evidence(
                id=f"{ID}.interpreter", detective=ID, kind="interpreter-fallback", severity="info",
                facts={"python": python, "instead_of": chosen, "broke_at": mended,
                       "reason": (broken.reason or "")[:400]},
                summary=(f"The tests ran with Python {python}: under Python {chosen} pytest itself broke at the "
                         f"{mended} commit ({(broken.reason or '')[:200]})")))
        elif lifted:
            other = spec.model_copy(update={"unpinned": lifted})
            said = Evidence(
                id=f"{ID}.test-tooling", detective=ID, kind="test-tooling-fallback", severity="info",
                facts={"unpinned": list(lifted), "reason": (base.reason or "")[-400:]},
                summary=(f"The tests ran with today's releases of {', '.join(lifted)} instead of the project's pins: "
                         f"under those pins pytest itself could not start at the base commit "
                         f"({_last_line(base.reason)[:200]})"))
        else:
            return None
        sandbox = self.sandbox

        async def one(with_spec: TestSpec, tree: str) -> TestRunResult:
            return await sandbox.run_tests(with_spec.model_copy(update={
                "tree": tree, "language": PYTHON,
                **({"mutants": mutants, "mutation_seconds": mutation_seconds} if tree == "head" else {})}))

        async def run(with_spec: TestSpec, than: TestRunResult) -> tuple[TestRunResult, list[TestRunResult] | None]:
            """``(the base's run, every tree's runs)``. A base being mended runs first, alone: the other trees run
            only when it is closer to running clean than ``than`` (else None; a large suite's head and guard are
            not run again for an environment that does not help)."""
            if mended != "base":
                results = list(await asyncio.gather(*(one(with_spec, tree) for tree in trees)))
                return results[trees.index("base")], results
            first = await one(with_spec, "base")
            if not closer(first, than):
                return first, None
            others = iter(await asyncio.gather(*(one(with_spec, tree) for tree in trees if tree != "base")))
            return first, [first if tree == "base" else next(others) for tree in trees]

        def pair(results: list[TestRunResult]) -> tuple[TestRunResult, TestRunResult]:
            return results[trees.index("base")], results[trees.index("head")]

        dated_base, again = await run(other, base)
        kept = (other, said, again) if again is not None and better(pair(again), (base, head_run), mended) else None
        tried = [(other, dated_base)]
        # the day's releases of pytest's own stack may not start under this interpreter either: the newest fix
        # releases of the day's lines are tried first, then the whole stack as of a while after the interpreter's
        # first release (each base alone first). One is kept only when a test passes at its base: a stack that
        # starts and then breaks on every test module (pytest 3's assertion rewriting under Python 3.11) measures
        # nothing, and the head would be judged alone on the stack's own failures
        stack = broken_tooling(dated_base) if sign is not None else ()
        for lifted in ((within_lines(stack, dated_base), stack) if stack else ()):
            if not lifted:
                continue
            undated = other.model_copy(update={"unpinned": lifted})
            best = kept[2] if kept is not None else runs
            third_base, third = await run(undated, best[trees.index("base")])
            tried.append((undated, third_base))
            if third is not None and third[trees.index("base")].passed and better(pair(third), pair(best), mended):
                plan = third[trees.index("base")].environment
                when = plan.undated_before if plan is not None else None
                releases = (f"the releases uploaded before {when} (a while after the interpreter's first release)"
                            if when else "today's releases")
                kept = (undated, said.model_copy(update={
                    "facts": {**said.facts, "undated": list(lifted), "undated_before": when},
                    "summary": (f"{said.summary}; {', '.join(lifted)} from {releases}: the day's releases of them "
                                f"could not start pytest ({_last_line(dated_base.reason)[:160]})")}), third)
                break
        if sign is not None:
            kept = await self._older(tried, kept, runs, said, run, pair, mended)
        return kept

    @staticmethod
    async def _older(tried: list[tuple[TestSpec, TestRunResult]], kept: Kept | None, runs: list[TestRunResult],
                     said: Evidence, run: Runner, pair: Callable[[list[TestRunResult]], tuple[TestRunResult,
                                                                                             TestRunResult]],
                     mended: str) -> Kept | None:
        """The base's day's releases may need the base's day's interpreter too: where a dated environment's base
        broke on a name the standard library has since removed (markupsafe 1.0's ``collections.Mapping`` under
        3.11), the environments tried are tried again, in their order (the day's releases first), under the oldest
        older interpreter the project admits; one is kept when a test passes at its base and it measures more than
        what is kept so far (``kept``, else today's ``runs``; ``kept`` is returned when none does)."""
        removed, broken = next(((sign, result) for _environment, result in tried
                                if (sign := stdlib_drift(result)) is not None), (None, None))
        python = older_interpreter(broken) if broken is not None else None
        if removed is None or broken is None or python is None:  # the first two go together
            return kept
        chosen = broken.environment.python if broken.environment is not None else None
        told = _older_said(python, chosen, removed)
        baseline = kept[2] if kept is not None else runs
        for environment, _broken in tried:
            older = environment.model_copy(update={"python": python})
            first, again = await run(older, pair(baseline)[0])
            if again is not None and first.passed and better(pair(again), pair(baseline), mended):
                return older, said.model_copy(update={
                    "facts": {**said.facts, "python": python, "removed": removed},
                    "summary": f"{said.summary}; {told.summary[0].lower()}{told.summary[1:]}"}), again
        return kept

    async def _rerun(self, spec: TestSpec, diff: TestDiff, guarded: bool, reruns: int) -> TestDiff:
        """Run each regressed or new failing test again (``reruns`` times, the rubric's ``testing.reruns``; only
        those node ids, the same tree and environment) so that only reproducible failures are charged: new failing
        ones at head, regressed ones under the base's oracle and at base."""
        if self.sandbox is None or reruns == 0 or not (diff.regressed or diff.new_failing):
            return diff
        plain = spec.model_copy(update={"mutants": (), "mutation_seconds": 0.0})
        regressed = tuple(c.name for c in diff.regressed[:MAX_RERUN])
        plans = []
        for language in (PYTHON, GO, JAVASCRIPT):
            if language == PYTHON and spec.command and not _is_pytest(spec.command):
                continue  # a custom command reports one outcome for the whole run: there is no test to re-run
            mine = tuple(n for n in regressed if language_of_test(n) == language)
            plans += [(role, tree, language, names) for role, tree, names in (
                ("head", "head", tuple(c.name for c in diff.new_failing[:MAX_RERUN]
                                       if language_of_test(c.name) == language)),
                ("oracle", "guard" if guarded else "head", mine),
                ("base", "base", mine)) if names]
        if not plans:
            return diff
        found: dict[str, list[TestRunResult]] = {"head": [], "oracle": [], "base": []}
        for _ in range(reruns):  # one round after the other; the trees of one round side by side
            results = await asyncio.gather(*(self.sandbox.run_tests(plain.model_copy(update={
                "tree": tree, "rerun": names, "language": language})) for _role, tree, language, names in plans))
            for (role, _tree, _language, _names), result in zip(plans, results, strict=True):
                found[role].append(result)
        head_runs, oracle_runs, base_runs = found["head"], found["oracle"], found["base"]
        return apply_reruns(diff, head_runs, oracle_runs, base_runs)


def _last_line(reason: str | None) -> str:
    """The last line of a run's reason that is not blank (where pytest's traceback names its error)."""
    return next((line for line in reversed((reason or "").splitlines()) if line.strip()), "")


def _is_pytest(command: tuple[str, ...]) -> bool:
    first = command[0].rsplit("/", 1)[-1]
    return first in ("pytest", "py.test") or (first.startswith("python") and command[1:3] in (
        ("-m", "pytest"), ("-m", "py.test")))


def compact(result: TestRunResult) -> TestRunResult:
    """The run as the review stores it: counts intact, only the cases that did not pass (up to a cap)."""
    kept = tuple(t for t in result.tests if t.outcome != "passed")[:MAX_CASES_KEPT]
    return result.model_copy(update={
        "tests": kept, "cases_omitted": result.cases_omitted + len(result.tests) - len(kept),
        "deselected": result.deselected[:MAX_IDS_KEPT]})


def differential(case: Case, base: TestRunResult, head: TestRunResult, guard: TestRunResult | None) -> TestDiff:
    for run in (head, guard):
        blocked = next((t for t in run.toolchains if t.error), None) if run is not None else None
        if run is not None and run.status == "env_error" and blocked is not None:
            # a toolchain or a module the sandbox lacks: the environment's gap, not a regression of every test
            return TestDiff(status="env_error", reason=f"the {run.tree} tree's {blocked.language} tests could not "
                            f"run in this environment: {blocked.error}", base_tests=base)
    if guard is None and head.status in ("error", "timeout") and not head.tests and not head.collection_errors:
        # the head's run never reported a test: nothing to compare, and the Rule of Completion blocks a pass
        return TestDiff(status="measured", reason=f"the head's test run did not complete: {head.reason}",
                        base_tests=base)
    changed = {f.path for f in case.files if is_test_path(f.path)} | {
        f.old_path for f in case.files if f.old_path and is_test_path(f.old_path)}
    touched = {f.path for f in case.files} | {f.old_path for f in case.files if f.old_path}
    moved = [(f.old_path, f.path) for f in case.files
             if f.old_path and f.old_path != f.path and is_test_path(f.path) and is_test_path(f.old_path)]
    return classify(base, head, guard, changed, touched, removed_names(case.diff, is_test_path),
                    renamed_tests(case.diff, is_test_path), declared_deletions(case.diff, is_test_path),
                    renamed_data(moved))


SETUP_REFUSED_LISTED = 8  # destinations named in the evidence's summary (all of them are in its facts)


def _facts(result: TestRunResult) -> dict[str, object]:
    facts: dict[str, object] = {
        "status": result.status,
        "passed": result.passed,
        "failed": result.failed,
        "errored": result.errored,
        "skipped": result.skipped,
        "collected": result.collected,
        "reason": result.reason,
        "image": result.image,
    }
    if result.environment is not None:
        env = result.environment
        planned: dict[str, object] = {"python": env.python, "layout": env.layout, "sources": list(env.sources),
                                      "requirements": list(env.requirements)[:30], "overridden": env.overridden,
                                      "lock_files": list(env.lock_files)}
        if env.uploaded_before:
            planned["uploaded_before"] = env.uploaded_before
        facts["environment"] = planned
    if result.setup is not None:
        setup: dict[str, object] = {"status": result.setup.status, "install": result.setup.install,
                                    "refused": list(result.setup.refused), "reason": result.setup.reason}
        if result.setup.built:  # the wheels built from sdists, with the hashes the environment holds them by
            setup["built"] = list(result.setup.built)
        facts["setup"] = setup
    return facts


def evidence_for(result: TestRunResult, list_failures: bool = True) -> list[Evidence]:
    facts = _facts(result)
    items: list[Evidence] = []
    if result.environment is not None:
        env = result.environment
        how = "; ".join(env.sources) if env.sources else "nothing to install"
        setup = f", environment {result.setup.status}" if result.setup is not None else ""
        items.append(Evidence(
            id=f"{ID}.environment", detective=ID, kind="test-environment", severity="info", facts=facts,
            summary=(f"Python {env.python or '—'} ({env.layout} layout) from {how}{setup}"
                     + (f", releases uploaded before {env.uploaded_before}" if env.uploaded_before else "")
                     + (" — set in .logomesh.yml" if env.overridden else ""))))
    for toolchain in result.toolchains:
        go = toolchain.language == "Go"
        wanted = f" ({'go.mod' if go else 'the project'} asks for {toolchain.wanted})" if toolchain.wanted else ""
        modules = ", ".join(m or "the root" for m in toolchain.modules) or "none"
        packages = [s for s in toolchain.sources if s.rsplit("/", 1)[-1] in court_js.LOCK_FILES]
        items.append(Evidence(
            id=f"{ID}.toolchain:{toolchain.language}", detective=ID, kind="test-environment", severity="info",
            facts={**facts, "toolchain": toolchain.model_dump(mode="json")},
            summary=(f"{runtime(toolchain.language)} {toolchain.version or '—'}{wanted}"
                     + ((f", modules at {modules}" + (", vendored" if toolchain.vendored else ", no external modules"
                                                      if not toolchain.missing else "")) if go
                        else f", packages from {packages[0]}" if packages else ", no npm packages")
                     + (f", tests by {toolchain.runner}" if toolchain.runner and not go else "")
                     + (f": {toolchain.error}" if toolchain.error else ""))))
    if result.setup is not None and result.setup.refused:
        refused = result.setup.refused
        items.append(Evidence(
            id=f"{ID}.setup-refused", detective=ID, kind="setup-refused", severity="low", facts=facts,
            summary=(f"the setup phase (pip, a build or test.setup) tried to reach {len(refused)} destination(s) "
                     "beyond the package index, refused: " + ", ".join(refused[:SETUP_REFUSED_LISTED])
                     + (f" and {len(refused) - SETUP_REFUSED_LISTED} more" if len(refused) > SETUP_REFUSED_LISTED
                        else ""))[:600]))
    if result.status == "not_measured":
        return [*items, Evidence(id=f"{ID}.not-measured", detective=ID, kind="tests-not-measured",
                                 summary=f"Tests not measured: {result.reason}", severity="low", facts=facts)]
    if result.status == "env_error":
        return [*items, Evidence(id=f"{ID}.env-error", detective=ID, kind="tests-env-error",
                                 summary=f"The environment could not run the tests (not the change's fault): "
                                 f"{result.reason}", severity="low", facts=facts)]
    if result.status == "no_tests":
        return [*items, Evidence(id=f"{ID}.none", detective=ID, kind="no-tests",
                                 summary="No tests were found at the head commit", severity="medium", facts=facts)]
    if result.status in ("timeout", "error"):
        items.append(Evidence(id=f"{ID}.{result.status}", detective=ID, kind="tests-" + result.status,
                              summary=f"Test run {result.status}: {result.reason or 'no detail'}", severity="high",
                              facts=facts))
    else:
        summary = (f"{result.passed} passed, {result.failed} failed, {result.errored} errors, "
                   f"{result.skipped} skipped at head")
        severity = "info" if result.failed + result.errored == 0 else "medium"
        items.append(Evidence(id=f"{ID}.run", detective=ID, kind="tests", summary=summary,
                              severity=severity, facts=facts))
    failing = [*result.collection_errors, *(t for t in result.tests if t.outcome in ("failed", "error"))]
    for test in failing[:MAX_FAILURES_LISTED] if list_failures else []:
        items.append(Evidence(
            id=f"{ID}.failure:{test.name}", detective=ID, kind="test-failure", severity="high",
            summary=f"{test.outcome}: {test.name}" + (f" — {test.message}" if test.message else ""),
            location=_location(test.location, test.name),
            facts={"name": test.name, "outcome": test.outcome, "message": (test.message or "")[:2000]}))
    meaning = {"exec": ("code built from a string was executed", "CWE-95"),
               "os.system": ("a shell command was run", "CWE-78"), "os.popen": ("a shell command was run", "CWE-78"),
               "subprocess.Popen": ("a program was started through `sh -c`", "CWE-78")}
    for call in result.runtime[:MAX_FAILURES_LISTED]:
        what, cwe = meaning.get(call.event, (f"{call.event} was called", "CWE-78"))
        items.append(Evidence(
            id=f"{ID}.runtime:{call.event}:{call.path}:{call.line}", detective=ID, kind="runtime-sink",
            summary=f"{call.path}:{call.line}: while the tests ran, {what} ({call.event}, seen at run time)",
            location=Location(path=call.path, line=call.line), severity="high", cwe=cwe,
            facts={"event": call.event, "security": True}))
    for hook in result.hooks[:MAX_FAILURES_LISTED]:
        items.append(Evidence(
            id=f"{ID}.hook:{hook.path}:{hook.line}:{hook.hook}", detective=ID, kind="harness-hook",
            summary=f"{hook.path}:{hook.line} implements {hook.hook} and was loaded by the test run",
            location=Location(path=hook.path, line=hook.line), severity="medium",
            facts={"hook": hook.hook, "wrapper": hook.wrapper}))
    return items


def _location(location: str | None, name: str) -> Location | None:
    if location and ":" in location:
        path, _, line = location.rpartition(":")
        return Location(path=path, line=int(line)) if line.isdigit() else Location(path=path)
    path = name.split("::", 1)[0]
    return Location(path=path) if path.endswith(".py") else None


def diff_evidence(diff: TestDiff) -> list[Evidence]:
    facts: dict[str, object] = {
        "status": diff.status, "guarded": diff.guarded, "regressed": len(diff.regressed),
        "new_failing": len(diff.new_failing), "tampered": len(diff.tampered), "fixed": len(diff.fixed),
        "new_passing": len(diff.new_passing), "pre_existing": len(diff.pre_existing), "removed": len(diff.removed),
        "expectation_changed": len(diff.expectation_changed), "unchanged_passing": diff.unchanged_passing,
        "unattributed": len(diff.unattributed), "environmental": len(diff.environmental),
        "past_cap": len(diff.past_cap), "flaky": len(diff.flaky), "retired": len(diff.retired),
        "declared": len(diff.declared),
    }
    if diff.status != "measured":
        alone = (f"; the head judged on its own: {len(diff.new_failing)} failing in test files this change "
                 f"touched, {len(diff.unattributed)} other failing (not attributable), {len(diff.environmental)} "
                 "failing because of the sandbox" if diff.new_failing or diff.unattributed or diff.environmental
                 else "")
        return [Evidence(id=f"{ID}.differential", detective=ID, kind="tests-differential",
                         severity="high" if diff.new_failing else "medium" if diff.unattributed else "low",
                         summary=f"No comparison with the base: {diff.reason}{alone}", facts=facts),
                *_change_evidence(diff)]
    summary = (f"against the base: {len(diff.regressed)} regressed, {len(diff.new_failing)} new failing, "
               f"{len(diff.fixed)} fixed, {len(diff.new_passing)} new passing, {len(diff.pre_existing)} failing "
               f"before and after (not charged), {len(diff.removed)} removed"
               + (f", {len(diff.environmental)} failing because of the sandbox (not charged)"
                  if diff.environmental else "")
               + (f", {len(diff.flaky)} flaky (not reproduced on re-runs, not charged)" if diff.flaky else "")
               + (f", {len(diff.retired)} deleted with the API they tested (not charged)" if diff.retired else "")
               + (f", {len(diff.declared)} deleted with a behaviour change the changelog declares (not charged, "
                  "for a person to confirm)" if diff.declared else ""))
    serious = diff.regressed or diff.new_failing or diff.tampered
    items = [Evidence(id=f"{ID}.differential", detective=ID, kind="tests-differential", summary=summary,
                      severity="high" if serious else "low" if diff.removed else "info", facts=facts),
             *_change_evidence(diff)]
    for name in diff.removed[:MAX_FAILURES_LISTED]:
        items.append(Evidence(id=f"{ID}.removed:{name}", detective=ID, kind="test-removed", severity="medium",
                              summary=f"removed: {name} passed at base and no longer runs at head",
                              location=_location(None, name), facts={"name": name}))
    if diff.past_cap:
        items.append(Evidence(
            id=f"{ID}.past-cap", detective=ID, kind="tests-past-cap", severity="low",
            summary=f"{len(diff.past_cap)} test(s) that passed at base have no recorded outcome with this change: "
                    "the run went past the sandbox's cap on recorded tests, so they are not measured (not removed)",
            facts={"names": list(diff.past_cap[:50])}))
    if diff.expectation_changed:
        items.append(Evidence(
            id=f"{ID}.expectation-changed", detective=ID, kind="test-expectation-changed", severity="low",
            summary=f"{len(diff.expectation_changed)} existing test(s) now expect something else (they fail under "
                    f"the base's version and pass under the change's): {', '.join(diff.expectation_changed[:5])}",
            facts={"names": list(diff.expectation_changed[:50])}))
    return items


def _change_evidence(diff: TestDiff) -> list[Evidence]:
    items: list[Evidence] = []
    groups = (("regressed", diff.regressed, "critical", "passed at base, fails with this change"),
              ("new-failing", diff.new_failing, "high", "a test of this change fails"),
              ("tampered", diff.tampered, "critical", "passes only with this change's harness: under the base's "
               "test files and configuration it fails"),
              ("unattributed", diff.unattributed, "medium", "fails at head; the base could not be measured, so "
               "whether it failed before is unknown"),
              ("environmental", diff.environmental, "low", "fails because of the sandbox's environment"),
              ("flaky", diff.flaky, "medium", "failed once, not on its re-runs: not reproducible"),
              ("retired", diff.retired, "info", "deleted together with what it tested; under the base's tests it "
               "fails only because that name is gone"),
              ("declared", diff.declared, "medium", "deleted by the change; under the base's tests it fails, and "
               "the change's changelog entry declares the behaviour it tested changed"))
    for kind, changes, severity, meaning in groups:
        for change in changes[:MAX_FAILURES_LISTED]:
            message = f" — {change.message}" if change.message else ""
            why = f": {change.cause}" if change.cause else ""
            items.append(Evidence(
                id=f"{ID}.{kind}:{change.name}", detective=ID, kind="test-" + kind, severity=severity,
                summary=f"{kind.replace('-', ' ')}: {change.name} ({meaning}{why}){message}"[:600],
                location=_location(change.location, change.name),
                facts={"name": change.name, "base": change.base, "head": change.head, "cause": change.cause,
                       "message": (change.message or "")[:2000]}))
    return items


def _source_path(source: str | None) -> Location | None:
    """The file of a plan's source (``pyproject.toml [project] dependencies`` → ``pyproject.toml``)."""
    path = (source or "").split(" ", 1)[0]
    return Location(path=path) if path and not path.endswith(":") else None


def dependency_evidence(diff: TestDiff) -> list[Evidence]:
    """The requirements the change adds, removes or re-pins, and the start-up code it brings into the
    environment (named with its file, its distribution and the file that asks for that distribution)."""
    items: list[Evidence] = []
    for listed in diff.dependencies[:MAX_FAILURES_LISTED]:
        items.append(Evidence(
            id=f"{ID}.dependency:{listed.name}", detective=ID, kind="dependency-change", severity="info",
            summary=describe(listed), location=_source_path(listed.source),
            facts=listed.model_dump(mode="json")))
    by_name = {c.name: c for c in diff.dependencies}
    for finding in diff.startup_added[:MAX_FAILURES_LISTED]:
        owner = startup_owner(finding)
        change = by_name.get(owner) if owner else None
        why = (f" — {change.name} is asked for by {change.source or 'the environment'} ({change.head})"
               if change is not None and change.head else " — it comes with the change's dependencies")
        items.append(Evidence(
            id=f"{ID}.dependency-startup:{startup_key(finding)}", detective=ID, kind="dependency-startup",
            severity=startup_severity(finding), location=_source_path(change.source) if change is not None else None,
            summary=f"start-up code this change brings into the test environment: {finding}{why}"[:600],
            facts={"finding": finding, "distribution": owner, "requirement": change.head if change else None,
                   "source": change.source if change else None}))
    return items


def mutant_evidence(diff: TestDiff) -> list[Evidence]:
    mutants = [m for m in diff.mutants if m.status != "not_run"]
    if not mutants:
        return []
    killed = sum(1 for m in mutants if m.status in ("killed", "timeout"))
    not_run = len(diff.mutants) - len(mutants)
    items = [Evidence(
        id=f"{ID}.mutation", detective=ID, kind="test-mutation",
        severity="info" if killed == len(mutants) else "medium" if killed else "high",
        summary=(f"mutation: the tests detect {killed} of {len(mutants)} small changes to the changed lines"
                 + (f" ({not_run} not run within the budget)" if not_run else "")),
        facts={"killed": killed, "total": len(mutants), "not_run": not_run})]
    for mutant in [m for m in mutants if m.status in ("survived", "uncovered")][:MAX_MUTANTS_LISTED]:
        why = "no test runs this line" if mutant.status == "uncovered" else "no test detects this change"
        items.append(Evidence(
            id=f"{ID}.mutant:{mutant.id}", detective=ID, kind="surviving-mutant", severity="low",
            summary=f"{mutant.description} at {mutant.path}:{mutant.line}: {why}",
            location=Location(path=mutant.path, line=mutant.line),
            facts={"status": mutant.status, "description": mutant.description, "tests_run": mutant.tests_run}))
    return items


@register(ID, order=40, emits=(
    "test-environment", "tests-not-measured", "tests-env-error", "no-tests", "tests-timeout", "tests-error", "tests",
    "test-failure", "runtime-sink", "harness-hook", "tests-differential", "test-regressed", "test-new-failing",
    "test-tampered", "test-unattributed", "test-environmental", "test-flaky", "test-retired", "test-declared",
    "test-removed",
    "test-expectation-changed", "test-mutation", "surviving-mutant", "tests-past-cap", "dependency-change",
    "dependency-startup", "setup-refused", "dependency-drift", "interpreter-fallback", "test-tooling-fallback"))
def build(resources: CourtResources) -> TestRunner:
    return TestRunner(resources.sandbox, resources.sandbox_missing)
