"""Language plug-ins, on the court's side: one module per language LogoMesh runs the tests of.

A language module (``checks/languages/go.py``) says which files are its own (``owns``), which are its tests
(``is_test_path``) and what its environment is planned from (``is_environment_path``), whether a tree holds tests of
it that LogoMesh can run (``present``), and what a change does to its test harness (``harness_changes``). Its
sandbox side (``sandbox/languages/<name>.py``) plans the environment and runs the tests with outcomes read from an
event stream LogoMesh owns; both sides meet in :class:`~checks.models.TestSpec` (``language``) and
:class:`~checks.models.TestRunResult`, so the differential and the Chief Justice judge every language alike.

Python is the first language and stays where it was (``checks/testpaths.py``, ``sandbox/environment.py``,
``sandbox/inside/``); Go is the second, JavaScript (node's own test runner) the third. :func:`merge_runs` joins
one tree's runs of several languages into one result: the node ids of different languages never collide (a Go id
names its ``_test.go`` file, a JavaScript id its script).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from checks.languages import go, javascript
from checks.models import Case, TestRunResult

PYTHON = "python"
GO = "go"
JAVASCRIPT = "javascript"
NAMES = {PYTHON: "Python", GO: go.NAME, JAVASCRIPT: javascript.NAME}
PYTHON_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini")
# the worst status first: a merged run is as incomplete as its least complete language
STATUS_ORDER = ("timeout", "error", "env_error", "not_measured", "ran", "no_tests")


def _has_python(paths: Iterable[str]) -> bool:
    return any(p.endswith(".py") or PurePosixPath(p).name in PYTHON_MARKERS for p in paths)


def languages_of(case: Case) -> tuple[str, ...]:
    """The languages whose tests the review runs: Go when the head or the base holds a Go module, JavaScript when
    either holds a ``package.json`` at its root; Python when the tree holds any Python, or when no other language
    claims the repository (as before there were plug-ins)."""
    paths = set(case.head_paths) | {f.old_path for f in case.files if f.old_path} | {
        f.path for f in case.files}
    found = [GO] if go.present(paths) else []
    if javascript.present(paths):
        found.append(JAVASCRIPT)
    if _has_python(paths) or not found:
        found.insert(0, PYTHON)
    return tuple(found)


def language_of_test(name: str) -> str:
    """The language of a node id: a Go id names a ``_test.go`` file or a Go package (``calc::(package)``), a
    JavaScript id a script (``test/calc.test.js::adds``)."""
    file = name.split("::", 1)[0]
    if file.endswith(go.TEST_SUFFIX) or name.endswith(go.PACKAGE_ID):
        return GO
    return JAVASCRIPT if javascript.owns(file) else PYTHON


def _blocked(run: TestRunResult) -> bool:
    return run.status == "env_error" and any(t.error for t in run.toolchains)


def merge_runs(runs: Sequence[TestRunResult]) -> TestRunResult:
    """One tree's runs of several languages as one result (counts summed, cases joined, the worst status).

    A language that found no test adds nothing but its toolchain's plan; a language whose toolchain the sandbox
    lacks adds only its plan (with why) when another language ran; with one run left, it is the result as it was."""
    if not runs:
        raise ValueError("merge_runs needs at least one run")
    kept = [r for r in runs if r.status != "no_tests"] or [runs[0]]
    # a language the environment cannot run (its toolchain's gap, named) does not hold back the languages that ran:
    # its plan stays with the result, so the verdict names it, and its code is judged as not analysed
    ran = [r for r in kept if not _blocked(r)]
    named = tuple(t for r in runs for t in r.toolchains)
    if ran and len(ran) < len(kept):
        kept = ran
    if len(kept) == 1:
        return kept[0] if kept[0].toolchains == named else kept[0].model_copy(update={"toolchains": named})
    status = min((r.status for r in kept), key=STATUS_ORDER.index)
    reasons = [r.reason for r in kept if r.reason]
    first = kept[0]
    return first.model_copy(update={
        "status": status,
        "collected": sum(r.collected for r in kept),
        "deselected": tuple(d for r in kept for d in r.deselected),
        "collection_errors": tuple(e for r in kept for e in r.collection_errors),
        "hooks": tuple(h for r in kept for h in r.hooks),
        "environment": next((r.environment for r in kept if r.environment is not None), None),
        "setup": next((r.setup for r in kept if r.setup is not None), None),
        "toolchains": named,
        "mutants": tuple(m for r in kept for m in r.mutants),
        "runtime": tuple(c for r in kept for c in r.runtime),
        "cases_omitted": sum(r.cases_omitted for r in kept),
        "past_cap": sum(r.past_cap for r in kept),
        "passed": sum(r.passed for r in kept),
        "failed": sum(r.failed for r in kept),
        "errored": sum(r.errored for r in kept),
        "skipped": sum(r.skipped for r in kept),
        "tests": tuple(t for r in kept for t in r.tests),
        "reason": "; ".join(reasons) or None,
        "output": "\n".join(r.output for r in kept if r.output),
        "absent_submodules": tuple(sorted({s for r in kept for s in r.absent_submodules})),
    })


__all__ = ["GO", "JAVASCRIPT", "NAMES", "PYTHON", "language_of_test", "languages_of", "merge_runs"]
