"""Turn the runner's results (JSON framed at the end of its standard output) into a
:class:`~checks.models.TestRunResult`. They are hostile.

Every field is type-checked, counted and trimmed, messages redacted and made stable (no memory addresses, no
durations); what cannot be read is dropped, never trusted. Outcomes come only from LogoMesh's collector, not from
the test output, the exit code or any report the repository wrote.

An *environment* failure is told apart from the change's failure here: when nothing passed and every
collection error is an import error (or the editable install failed), the status is ``env_error`` and the
reason quotes the first import error, with the ``.logomesh.yml`` that would fix it.
"""

from __future__ import annotations

import re
from typing import Any

from checks.models import (
    HookSite,
    MutantResult,
    RuntimeCall,
    SetupReport,
    TestCaseResult,
    TestRunResult,
    TestSpec,
)
from sandbox.redact import redact, stable_text

MAX_TESTS = 20_000
MAX_NAME = 300
MAX_MESSAGE = 2000
IMPORT_ERROR = re.compile(r"\b(ModuleNotFoundError|ImportError)\b[^|]*")
MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
OUTCOMES = ("passed", "failed", "error", "skipped")
MUTANT_STATUSES = ("killed", "survived", "uncovered", "timeout", "not_run")
LAST_LINES = 12
NOTHING_WRONG = (0, 5)  # pytest's exit codes for "all passed" and "no tests collected"
INTERNAL_ERROR = 3  # pytest's exit code when it stopped on an INTERNALERROR (its own or a plugin's)
LAST_CHARS = 1500
# how a process that ended without its collector's record was stopped: exit codes and negative signal numbers
ENDINGS = {
    137: "killed (SIGKILL): most often the memory limit (the kernel's out-of-memory killer ends the largest "
         "process); a larger memory limit for the sandbox, or fewer tests at once, would let it finish",
    -9: "killed (SIGKILL): most often the memory limit (the kernel's out-of-memory killer ends the largest "
        "process); a larger memory limit for the sandbox, or fewer tests at once, would let it finish",
    139: "crashed (segmentation fault) in native code", -11: "crashed (segmentation fault) in native code",
    134: "aborted (SIGABRT), usually by native code", -6: "aborted (SIGABRT), usually by native code",
    143: "terminated (SIGTERM)", -15: "terminated (SIGTERM)",
}


def last_lines(output: str) -> str:
    """pytest's own last lines (the output is already redacted): what a reader needs to see why a run ended."""
    lines = [line for line in output.rstrip().splitlines() if line.strip()][-LAST_LINES:]
    text = "\n".join(lines)
    return text[-LAST_CHARS:]


def early_end(code: Any, output: str) -> str:
    """Why a run ended before the collector's record, with the likely cause and pytest's last lines."""
    known = ENDINGS.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
    why = known or ("something the run loaded stopped the process early (os._exit, a plugin's exit, a crash)"
                    if code not in (None, 0) else "the process stopped without reporting")
    tail = last_lines(output)
    shown = f"; pytest's last lines:\n{tail}" if tail else "; pytest printed nothing"
    return f"pytest ended (exit code {code}) before LogoMesh's collector could report: {why}{shown}"


def _text(value: Any, limit: int) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return stable_text(redact(value[:limit]))


def _case(item: Any, default_outcome: str = "passed") -> TestCaseResult | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return None
    outcome = item.get("outcome", default_outcome)
    if outcome not in OUTCOMES:
        return None
    location = item.get("location")
    return TestCaseResult(
        name=item["id"][:MAX_NAME] or ".", outcome=outcome,
        message=_text(item.get("message"), MAX_MESSAGE),
        location=location[:MAX_NAME] if isinstance(location, str) else None,
        rewritten=item.get("rewritten") is True)


def _list(value: Any, limit: int = MAX_TESTS) -> list[Any]:
    return value[:limit] if isinstance(value, list) else []


def import_error_line(messages: list[str | None]) -> str | None:
    for message in messages:
        match = IMPORT_ERROR.search(message or "")
        if match:
            return match.group(0).strip()[:300]
    return None


def fix_hint(line: str | None) -> str:
    module = MISSING_MODULE.search(line or "")
    name = module.group(1).split(".")[0] if module else "the-missing-package"
    return ("add it to the project's test dependencies (a `test` extra, dependency group or "
            "requirements-test.txt), or set it in the base branch's .logomesh.yml:\n"
            "test:\n  environment:\n    requirements: [\"" + name.replace('"', "") + "\"]")


BUILD_HINT = ("the project itself does not build from this checkout here, so its tests cannot import it; a build "
              "requirement it leaves unpinned may have moved on since (e.g. Cython 3 under an older setup.py): pin "
              "it in the project's build requirements, or set the environment (build requirements included, the "
              "install uses it) in the base branch's .logomesh.yml:\ntest:\n  environment:\n    requirements: "
              "[\"Cython<3\", \"pytest\"]")


def read_results(loaded: dict[str, Any], spec: TestSpec, base: dict[str, Any]) -> TestRunResult:
    setup: SetupReport | None = base.get("setup")
    install: dict[str, Any] = loaded["install"] if isinstance(loaded.get("install"), dict) else {}
    install_status = install.get("status") if isinstance(install.get("status"), str) else None
    if setup is not None and install_status:
        setup = setup.model_copy(update={"install": install_status[:20]})
        base = {**base, "setup": setup}
    if loaded.get("runner") == "custom":
        code = loaded.get("exit_code")
        outcome = "passed" if code == 0 else "failed"
        name = " ".join(spec.command or ())[:MAX_NAME] or "custom command"
        case = TestCaseResult(name=name, outcome=outcome, message=None if code == 0 else f"exit code {code}")
        return TestRunResult(status="ran", passed=int(code == 0), failed=int(code != 0), tests=(case,),
                             collected=1, **base)
    record = loaded.get("record")
    if not isinstance(record, dict):
        output = base.get("output")
        return TestRunResult(status="error", reason=early_end(loaded.get("exit_code"),
                                                              output if isinstance(output, str) else ""), **base)
    tests = [c for c in (_case(t) for t in _list(record.get("tests"))) if c is not None]
    errors = [c for c in (_case({**e, "outcome": "error"}) for e in _list(record.get("errors"), 200)
                          if isinstance(e, dict)) if c is not None]
    hooks = tuple(HookSite(hook=h["hook"][:60], path=h["path"][:MAX_NAME], line=h["line"],
                           wrapper=h.get("wrapper") is True)
                  for h in _list(record.get("hooks"), 200)
                  if isinstance(h, dict) and isinstance(h.get("hook"), str) and isinstance(h.get("path"), str)
                  and isinstance(h.get("line"), int))
    deselected = tuple(d[:MAX_NAME] for d in _list(record.get("deselected")) if isinstance(d, str))
    collected = len([c for c in _list(record.get("collected")) if isinstance(c, str)])
    total = record.get("collected_total")
    past_cap = max(0, total - MAX_TESTS) if isinstance(total, int) and not isinstance(total, bool) else 0
    mutants = _mutants(loaded, spec)
    counts = {"passed": sum(t.outcome == "passed" for t in tests),
              "failed": sum(t.outcome == "failed" for t in tests),
              "errored": sum(t.outcome == "error" for t in tests) + len(errors),
              "skipped": sum(t.outcome == "skipped" for t in tests)}
    runtime = tuple(RuntimeCall(event=r["event"][:40], path=r["path"][:MAX_NAME], line=r["line"])
                    for r in _list(record.get("runtime"), 50)
                    if isinstance(r, dict) and isinstance(r.get("event"), str) and isinstance(r.get("path"), str)
                    and isinstance(r.get("line"), int))
    fields = {**counts, **base, "tests": tuple(tests), "collection_errors": tuple(errors), "hooks": hooks,
              "runtime": runtime,
              "deselected": deselected, "collected": collected, "mutants": mutants, "past_cap": past_cap}
    messages = [e.message for e in errors] + [t.message for t in tests if t.outcome == "error"]
    import_line = import_error_line(messages)
    install_failed = install_status == "failed"
    every_error_imports = bool(messages) and all(IMPORT_ERROR.search(m or "") for m in messages)
    if counts["passed"] == 0 and (every_error_imports or (install_failed and messages)):
        why = [f"the tests could not import what they need: {import_line}" if import_line
               else "the tests could not run in this environment"]
        if install_failed:  # the module the tests miss is the project's own: installing it from an index is no fix
            why.append("the project's editable install failed: " + str(install.get("reason") or "")[-400:])
        why.append(BUILD_HINT if install_failed else fix_hint(import_line))
        return TestRunResult(status="env_error", reason="; ".join(why), **fields)
    executed = counts["passed"] + counts["failed"] + counts["errored"]
    code = loaded.get("exit_code")
    if not executed and isinstance(code, int) and not isinstance(code, bool) and code not in NOTHING_WRONG:
        # pytest stopped before any test ran and without a collection error: a conftest or plugin that would not
        # load ("ImportError while loading conftest", exit code 4) is a run that did not complete, never "no tests"
        output = base.get("output") if isinstance(base.get("output"), str) else ""
        tail = last_lines(str(output))
        line = import_error_line([tail])
        stopped = (f"pytest stopped before running any test (exit code {code})"
                   + (f": {line}; {fix_hint(line)}" if line else "")
                   + (f"; pytest's last lines:\n{tail}" if tail else "; pytest printed nothing"))
        return TestRunResult(status="error", reason=stopped, **fields)
    if code == INTERNAL_ERROR and executed < collected:
        # pytest itself broke mid-run (a plugin's or pytest's own INTERNALERROR): the tests after it have no outcome,
        # and a run that did not complete is never read as one that ran them all
        output = base.get("output") if isinstance(base.get("output"), str) else ""
        internal = [line[14:].strip() for line in str(output).splitlines()
                    if line.startswith("INTERNALERROR>") and line[14:].strip()]
        fields["reason"] = (f"pytest stopped with an internal error after {executed} of {collected} tests"
                            + (f": {internal[-1][:300]}" if internal else "")
                            + (f"; pytest's last lines:\n{last_lines(str(output))}" if output else ""))
        return TestRunResult(status="error", **fields)
    status = "ran" if executed else "no_tests"
    if past_cap:
        fields["reason"] = (f"{past_cap} test(s) past the first {MAX_TESTS} ran but were not recorded: they are "
                            "not measured")
    return TestRunResult(status=status, **fields)


def _mutants(loaded: dict[str, Any], spec: TestSpec) -> tuple[MutantResult, ...]:
    if not spec.mutants:
        return ()
    verdicts: dict[Any, dict[str, Any]] = {
        v.get("id"): v for v in _list(loaded.get("mutants"), 1000) if isinstance(v, dict)}
    out: list[MutantResult] = []
    for mutant in spec.mutants:
        verdict = verdicts.get(mutant.id, {})
        status = verdict.get("status") if verdict.get("status") in MUTANT_STATUSES else "not_run"
        tests_run = verdict.get("tests_run") if isinstance(verdict.get("tests_run"), int) else 0
        out.append(MutantResult(id=mutant.id, path=mutant.path, line=mutant.line, description=mutant.description,
                                status=status, tests_run=tests_run))
    return tuple(out)
