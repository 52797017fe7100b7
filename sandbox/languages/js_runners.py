"""The npm test runners LogoMesh runs a JavaScript/TypeScript project's tests with, beside node's own: Jest, Vitest
and Mocha, each with a reporter LogoMesh writes (``sandbox/languages/reporters/``), given on the runner's command line
so that it replaces the project's reporters.

**Channel.** The reporter runs in the runner's main process and writes one marked line per test to file descriptor
3, which the sandbox reads as the run's standard output; the runner starts with its own standard output on standard
error, so what the runner or a test prints (``console.log``, ``process.stdout.write`` in a worker) is output, never
an outcome. Vitest runs the tests in child processes (``--pool=forks``, whatever the project configures), whose
descriptor 3 is their channel to Vitest; Mocha, and Jest with the sandbox's one CPU (it runs in band), run them in
the runner's own process beside the reporter, as pytest runs them beside LogoMesh's collector: there a test could
write to descriptor 3 itself. The project's runner configuration and setup files run in the main process too: they
are part of the harness inventory, and the guard run takes the base's.

**Lines** (:func:`read_cases`): ``{"type": "case", "file", "names", "status", "message"}`` per test (its suites'
names and its own), ``{"type": "file-error", "file", "message"}`` per test file that failed outside any test (it
does not load), ``{"type": "done"}`` once the run ended; a run without ``done`` ended before the runner could
report it all.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from checks.languages import javascript as court_js
from checks.models import TestCaseResult
from sandbox.redact import redact, stable_text

REPO = "/sandbox/repo"
MARK = "LOGOMESH-JS "
MAX_TESTS = 20_000
MAX_NAME = 300
MAX_MESSAGE = 2000
MAX_LINE = 1 << 20
CHANNEL_FD = 3
CHANNEL_MODULE = "channel.cjs"  # the reporters' shared writer of marked lines
OUTCOME_ORDER: dict[str, int] = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
LOCATION = re.compile(r"\(?/sandbox/repo/([^\s():]+):(\d+):\d+\)?")  # a failure's place in the tree


@dataclass(frozen=True)
class Runner:
    name: str
    package: str  # the npm package that must be among the project's dependencies
    script: str  # its command-line entry point, relative to the tree's node_modules
    reporter: str  # LogoMesh's reporter, a file of sandbox/languages/reporters

    def argv(self, reporter_path: str, files: tuple[str, ...] = ()) -> list[str]:
        """The runner's arguments after ``node <script>``: LogoMesh's reporter only, no watch, no coverage, no
        cache in the tree; ``files`` (for re-runs) limits the run to those test files."""
        if self.name == "mocha":
            return [f"--reporter={reporter_path}", "--exit", "--no-color", *files]
        if self.name == "jest":
            return ["--ci", f"--reporters={reporter_path}", "--no-watchman", "--cacheDirectory=/tmp/jest-cache",
                    "--coverage=false", "--passWithNoTests", "--forceExit",
                    *(["--runTestsByPath", *files] if files else [])]
        # Vitest's tests in child processes whatever the project configures (a worker thread would share the
        # reporter's descriptors)
        return ["run", f"--reporter={reporter_path}", "--pool=forks", "--coverage.enabled=false",
                "--passWithNoTests", *files]


RUNNERS: dict[str, Runner] = {
    "jest": Runner("jest", "jest", "jest/bin/jest.js", "jest.cjs"),
    "vitest": Runner("vitest", "vitest", "vitest/vitest.mjs", "vitest.mjs"),
    "mocha": Runner("mocha", "mocha", "mocha/bin/_mocha", "mocha.cjs"),
}


def reporter_sources() -> dict[str, bytes]:
    """Every reporter's file name and text, to be put read-only beside the tree."""
    folder = resources.files("sandbox.languages").joinpath("reporters")
    names = [CHANNEL_MODULE, *(runner.reporter for runner in RUNNERS.values())]
    return {name: folder.joinpath(name).read_bytes() for name in names}


def text(value: str, limit: int) -> str:
    return stable_text(redact(value[-limit:]))


def relative(file: object) -> str | None:
    """A test file's path in the tree from the absolute path a runner reports (None: outside the tree)."""
    if not isinstance(file, str):
        return None
    if file.startswith("file://"):
        file = file[len("file://"):]
    file = posixpath.normpath(file)
    return file[len(REPO) + 1:] if file.startswith(REPO + "/") else None


def marked_events(stream: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of a reporter's marked lines (a torn, oversized or unmarked line is dropped)."""
    for raw in stream.splitlines():
        if len(raw) > MAX_LINE or not raw.startswith(MARK.encode()):
            continue
        try:
            event = json.loads(raw[len(MARK):])
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def case_result(file: str, names: list[str], outcome: Literal["passed", "failed", "skipped"],
                message: str | None) -> TestCaseResult:
    """One test's result; a failure carries its message and, when the message names one, its place in the tree."""
    shown = location = None
    if outcome == "failed":
        shown = text(message or "failed", MAX_MESSAGE)
        at = LOCATION.search(message or "")
        location = f"{at.group(1)}:{at.group(2)}" if at else None
    return TestCaseResult(name=court_js.node_id(file, names), outcome=outcome, message=shown, location=location)


def keep_worse(found: dict[str, TestCaseResult], result: TestCaseResult) -> None:
    """Record ``result``; the same id reported twice keeps the worse outcome."""
    earlier = found.get(result.name)
    if earlier is None or OUTCOME_ORDER[result.outcome] > OUTCOME_ORDER[earlier.outcome]:
        found[result.name] = result


def read_cases(stream: bytes) -> tuple[list[TestCaseResult], list[TestCaseResult], int, bool]:
    """``(tests, file errors, tests past the cap, whether the run's end was reported)`` from a reporter's lines."""
    found: dict[str, TestCaseResult] = {}
    errors: dict[str, TestCaseResult] = {}
    ended = False
    for event in marked_events(stream):
        kind = event.get("type")
        if kind == "done":
            ended = True
            continue
        file = relative(event.get("file"))
        message = event.get("message") if isinstance(event.get("message"), str) else None
        if file is None:
            continue
        if kind == "file-error":
            errors.setdefault(file, TestCaseResult(name=f"{file}{court_js.FILE_ID}", outcome="error",
                                                   message=text(message or "the test file failed outside any test",
                                                                 MAX_MESSAGE)))
            continue
        names = event.get("names")
        if kind != "case" or not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            continue
        status = event.get("status")
        outcome: Literal["passed", "failed", "skipped"] = (
            status if status in ("passed", "skipped") else "failed")  # anything else is not a pass
        keep_worse(found, case_result(file, [n[:MAX_NAME] for n in names], outcome, message))
    tests = list(found.values())
    past_cap = max(0, len(tests) - MAX_TESTS)
    return tests[:MAX_TESTS], [errors[f] for f in sorted(errors)], past_cap, ended
