"""TestRunner — the change's tests, run for real in the sandbox at the head commit.

What: asks the :class:`~checks.protocols.Sandbox` to run the test command and turns the measured outcome
into evidence: counts, duration, the failing tests' names and their trimmed output.
Why: T is ground truth. A claim that tests pass means nothing until they ran where PR code cannot hurt anyone;
without a sandbox T is "not measured" and the verdict cannot be ``pass``.
Example: ``12 passed, 1 failed (test_login) in 3.2 s``.
"""

from __future__ import annotations

from checks.models import Case, DetectiveReport, Evidence, Location, TestRunResult
from checks.protocols import Sandbox
from rubric import Rubric

ID = "tests"
MAX_FAILURES_LISTED = 20


class TestRunner:
    __test__ = False  # not a pytest test class
    id = ID

    def __init__(self, sandbox: Sandbox | None, unavailable_reason: str = "no sandbox is configured") -> None:
        self.sandbox = sandbox
        self.unavailable_reason = unavailable_reason

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport:
        if self.sandbox is None:
            result = TestRunResult(status="not_measured", reason=self.unavailable_reason)
        else:
            spec = case.test_spec
            if spec.timeout_seconds > rubric.testing.timeout_seconds:
                spec = spec.model_copy(update={"timeout_seconds": rubric.testing.timeout_seconds})
            result = await self.sandbox.run_tests(spec)
        return DetectiveReport(detective=ID, evidence=tuple(evidence_for(result)), tests=result)


def evidence_for(result: TestRunResult) -> list[Evidence]:
    facts = {
        "status": result.status,
        "passed": result.passed,
        "failed": result.failed,
        "errored": result.errored,
        "skipped": result.skipped,
        "duration": round(result.duration, 3),
        "reason": result.reason,
        "image": result.image,
    }
    if result.status == "not_measured":
        return [Evidence(id=f"{ID}.not-measured", detective=ID, kind="tests-not-measured",
                         summary=f"Tests not measured: {result.reason}", severity="low", facts=facts)]
    if result.status == "no_tests":
        return [Evidence(id=f"{ID}.none", detective=ID, kind="no-tests",
                         summary="No tests were found at the head commit", severity="medium", facts=facts)]
    if result.status in ("timeout", "error"):
        summary = f"Test run {result.status}: {result.reason or 'no detail'}"
        items = [Evidence(id=f"{ID}.{result.status}", detective=ID, kind="tests-" + result.status,
                          summary=summary, severity="high", facts=facts)]
    else:
        summary = (f"{result.passed} passed, {result.failed} failed, {result.errored} errors, "
                   f"{result.skipped} skipped")
        severity = "info" if result.failed + result.errored == 0 else "high"
        items = [Evidence(id=f"{ID}.run", detective=ID, kind="tests", summary=summary,
                          severity=severity, facts=facts)]
    failing = [t for t in result.tests if t.outcome in ("failed", "error")]
    for test in failing[:MAX_FAILURES_LISTED]:
        path = test.name.split("::", 1)[0] if "::" in test.name else None
        items.append(Evidence(
            id=f"{ID}.failure:{test.name}",
            detective=ID,
            kind="test-failure",
            summary=f"{test.outcome}: {test.name}",
            location=Location(path=path) if path else None,
            severity="high",
            facts={"name": test.name, "outcome": test.outcome, "message": (test.message or "")[:2000]},
        ))
    return items
