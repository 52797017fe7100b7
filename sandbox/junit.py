"""Parse JUnit XML written inside the sandbox. The file is hostile: PR code wrote it, or could have.

defusedxml refuses DTDs and entities (no billion laughs, no external entities); sizes and counts are capped;
names and messages are trimmed. Outcomes come only from here, never from the test output.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from checks.models import TestCaseResult
from sandbox.redact import redact

MAX_JUNIT_BYTES = 8 * 1024 * 1024
MAX_TESTCASES = 20_000
MAX_NAME = 300
MAX_MESSAGE = 2000


class JUnitError(ValueError):
    """The report cannot be trusted as a JUnit report; the message says why."""


@dataclass(frozen=True)
class JUnitReport:
    tests: tuple[TestCaseResult, ...]
    truncated: bool = False

    def count(self, outcome: str) -> int:
        return sum(1 for t in self.tests if t.outcome == outcome)


def _name(case: Element) -> str:
    name = case.get("name") or "?"
    classname = case.get("classname") or ""
    file = case.get("file") or ""
    if file:
        module = file[:-3].replace("/", ".") if file.endswith(".py") else file
        cls = classname[len(module) + 1:] if classname.startswith(module + ".") else ""
        full = "::".join(p for p in (file, cls, name) if p)
    elif classname:
        full = f"{classname}.{name}"
    else:
        full = name
    return full[:MAX_NAME]


def _float(value: str | None) -> float:
    try:
        number = float(value or 0.0)
    except ValueError:
        return 0.0
    return number if 0.0 <= number < 1e9 else 0.0


def _outcome(case: Element) -> tuple[str, str | None]:
    for tag, outcome in (("error", "error"), ("failure", "failed"), ("skipped", "skipped")):
        child = case.find(tag)
        if child is not None:
            message = " ".join(p for p in (child.get("message"), child.text) if p)
            return outcome, redact(message[:MAX_MESSAGE]) or None
    return "passed", None


def parse_junit(data: bytes) -> JUnitReport:
    if len(data) > MAX_JUNIT_BYTES:
        raise JUnitError(f"the report is larger than {MAX_JUNIT_BYTES} bytes")
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except (ParseError, DefusedXmlException) as exc:
        raise JUnitError(f"not a well-formed JUnit report: {exc}") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitError(f"unexpected root element <{root.tag[:40]}>")
    tests: list[TestCaseResult] = []
    truncated = False
    for case in root.iter("testcase"):
        if len(tests) >= MAX_TESTCASES:
            truncated = True
            break
        outcome, message = _outcome(case)
        tests.append(TestCaseResult(name=_name(case), outcome=outcome,
                                    duration=_float(case.get("time")), message=message))
    return JUnitReport(tests=tuple(tests), truncated=truncated)
