"""What to fix: the facts that hold a change back, in words a PR author can act on, worst first.

A :class:`Fix` is one problem: a title in words (never an internal id), where it is, the failure message or
finding, and a one-line hint. The report leads with them (``checks/render.py``) and the check run annotates
their lines (``app/worker/publish.py``): one entry per problem, so a failing test listed by the test run and again by
the comparison with the base is said once.

Which facts block: every critical or high fact; and, when the verdict is not ``pass``, the facts behind the rule
that held it back (tests not measured or not runnable, no tests, the description's mismatch, code not analysed,
a judge's veto), so a ``neutral`` always says why. Everything here is pure and reads only the Evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from checks.models import SEVERITY_ORDER, Evaluation, Evidence, Location

MAX_FIXES = 20


@dataclass(frozen=True)
class Fix:
    title: str
    severity: str
    location: Location | None
    detail: str
    hint: str
    subject: str | None = None  # the test or symbol the fix is about (shown as code)
    kind: str = ""
    reproducer: str | None = None  # a short script that shows the flaw (a confirmed race)
    for_whom: str = ""  # "" the PR's author; else who can fix it (:data:`NOT_THE_CHANGE`)

    @property
    def authors(self) -> bool:
        return not self.for_whom


MAINTAINER = "a maintainer, on the base branch"
OPERATOR = "whoever runs LogoMesh"
# Facts that are not the change's fault, and who can act on them: the author never reads them under "What to fix".
# ``.logomesh.yml`` is read from the base branch, so its snippet is a maintainer's to add, not the PR author's.
NOT_THE_CHANGE = {"test-environmental": MAINTAINER, "tests-env-error": MAINTAINER, "tests-not-measured": OPERATOR,
                  "code-dialect": OPERATOR}


# kind → (title, hint). A kind absent here is shown with its evidence summary as the title.
WORDS: dict[str, tuple[str, str]] = {
    "test-regressed": ("A test that passed before this change fails now",
                       "Fix the code; if the new behaviour is intended, update the test and say why in the PR."),
    "test-new-failing": ("A new test fails",
                         "Make the code do what the test expects, or correct the test."),
    "test-tampered": ("A test passes only under this change's test harness",
                      "Under the base's test files and configuration it fails: revert the harness change "
                      "(conftest, pytest config, hooks) or explain it in the PR."),
    "test-failure": ("A test fails", "Run it locally with pytest and fix the cause."),
    "test-flaky": ("A failing test did not fail again when re-run",
                   "It is not charged, but the change cannot pass while it is unexplained: make the test "
                   "independent of order and timing, or show it passes reliably."),
    "test-environmental": ("A test fails because of the sandbox, not this change",
                           "Declare what the tests need in `.logomesh.yml` on the base branch, e.g. `test: "
                           "{environment: {requirements: [\"pytest\", \"requests\"]}}`, or make the test skip when "
                           "the program or network is absent."),
    "test-unattributed": ("A test fails and the base could not be compared",
                          "The base commit's tests did not run, so this failure cannot be attributed: fix the base "
                          "(its reason is shown) or check the test locally."),
    "tests-timeout": ("The test run did not finish in time",
                      "Make the tests faster, or raise `test.timeout_seconds` in `.logomesh.yml`."),
    "tests-error": ("The test run did not complete", "Run the tests locally; the message says where they stopped."),
    "tests-env-error": ("The tests could not run here",
                        "Declare what they need in `.logomesh.yml` on the base branch, e.g. `test: {environment: "
                        "{requirements: [\"pytest\", \"requests\"]}}`."),
    "tests-not-measured": ("Tests were not measured",
                           "do what the message says; until the tests run, the change cannot pass."),
    "no-tests": ("No tests were found", "Add tests under `tests/` (pytest) for the changed code."),
    "test-mutation": ("No test checks what the changed lines do",
                      "Add assertions on the changed behaviour; the evidence lists small changes no test notices."),
    "constraint-violation": ("The change breaks a rule of this repository",
                             "Use the allowed alternative, or change the rule in the rubric if it is wrong."),
    "red-finding": ("The red team exploited this code", "Validate or escape the input before it reaches the sink."),
    "runtime-sink": ("A dangerous call ran during the tests",
                     "Avoid the shell and string-built code; pass arguments as a list."),
    "hardcoded-secret": ("A secret is written in the code",
                         "Remove it, rotate it, and read it from the environment or a secret store."),
    "harness-hook": ("The test run loads a hook that decides outcomes",
                     "Outcome hooks in conftest or plugins can hide failures; remove it or explain it."),
    "harness-change": ("The change alters how tests are collected or judged",
                       "Keep test configuration changes in a PR of their own, or explain them."),
    "intent-mismatch": ("The description does not match the change",
                        "Say in the title and body what the change does, naming the code it touches."),
    "not-analysed": ("Changed code was not analysed", "Split very large or generated files out of the change."),
    "syntax-error": ("The code does not parse", "Fix the syntax error."),
    "code-dialect": ("Changed code is in a Python LogoMesh does not read",
                     "Nothing in the change to fix: LogoMesh reads the Python 3 of the interpreter it runs on, not "
                     "Python 2 or newer syntax, so this file's rules and sinks were not checked and the change "
                     "cannot pass on it; the tests still judge the code wherever they run it."),
    "detective-failed": ("Part of the review failed", "Run `/recheck`; if it fails again, the message says why."),
    "claim-unsupported": ("The description claims something the change does not show",
                          "Correct the description or add what it promises."),
    "test-removed": ("A test that passed before was removed", "Keep the test, or say in the PR why it goes."),
    "test-declared": ("A deleted test fails under the old tests, and the changelog says that behaviour changed",
                      "Nothing to fix if the change is intended: a reviewer confirms it; if it is not, restore the "
                      "behaviour and its test."),
    "title-mismatch": ("The title does not say what the change does",
                       "Retitle the PR: the title is what reviewers and the history read first."),
    "surviving-mutant": ("No test notices a change to this line",
                         "Add an assertion that would fail if this line changed."),
    "setup-refused": ("The setup phase tried to reach hosts other than the package index",
                      "Code run while installing (a build, pip or test.setup) connected where it may not; drop what "
                      "does it, or, if it is a package index, ask the operator to admit its host."),
    "dependency-startup": ("A new dependency runs code at interpreter start-up",
                           "Start-up code (.pth lines, sitecustomize, auto-loaded pytest plugins) can decide what "
                           "the tests report; drop the dependency or explain why it needs it."),
}

FIRST = {kind: i for i, kind in enumerate(("test-regressed", "test-tampered", "test-new-failing", "test-failure",
                                           "red-finding", "runtime-sink", "hardcoded-secret",
                                           "constraint-violation", "tests-env-error", "tests-timeout", "tests-error"))}
# Facts that explain a verdict held back from ``pass`` even when they are not severe themselves.
DEMOTING = frozenset({"title-mismatch", "tests-not-measured", "tests-env-error", "no-tests", "intent-mismatch",
                      "not-analysed", "code-dialect", "test-mutation", "test-removed", "tests-timeout", "tests-error",
                      "test-flaky", "test-environmental", "test-unattributed", "dependency-startup",
                      "test-declared"})
# Summaries that repeat facts listed one by one: never a fix of their own.
AGGREGATES = frozenset({"tests-differential", "tests", "diff-summary", "commit-history", "test-environment",
                        "red-search", "red-not-run", "llm-exchange", "semantic", "semantic-not-measured",
                        "surviving-mutant", "truncated", "preexisting-violation", "claim-verified",
                        "dependency-change"})


def worst_first(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence ordered by severity, worst first (stable: the detectives' order among equals)."""
    return sorted(evidence, key=lambda ev: -SEVERITY_ORDER[ev.severity])


def _test_name(ev: Evidence) -> str | None:
    name = ev.facts.get("name")
    return name if isinstance(name, str) else None


# pytest's long message starts with where it failed inside the sandbox ("/sandbox/repo/tests/t.py:8: "): the
# location is shown on its own, so the message starts at the exception.
_WHERE_PREFIX = re.compile(r"^(?:/sandbox/repo/)?[^\s:]+\.py:\d+: ")


def _detail(ev: Evidence) -> str:
    """The failure message for a test (the assertion or exception), else the finding's own summary."""
    message = ev.facts.get("message")
    if ev.kind.startswith("test-") and isinstance(message, str) and message.strip():
        return _WHERE_PREFIX.sub("", " ".join(message.split()))
    return ev.summary


def _fix(ev: Evidence) -> Fix:
    title, hint = WORDS.get(ev.kind, (ev.summary, ""))
    if ev.kind == "test-mutation" and int(ev.facts.get("killed", 1) or 0) > 0:
        title = "Some changes to the changed lines go unnoticed by the tests"
    reproducer = ev.facts.get("reproducer")
    if ev.kind == "red-finding" and ev.cwe == "CWE-362":
        hint = "Hold one lock across the read, the check and the write of the shared state" + (
            "; the script below reproduces the race." if isinstance(reproducer, str) else ".")
    return Fix(title=title, severity=ev.severity, location=ev.location, detail=_detail(ev), hint=hint,
               subject=_test_name(ev), kind=ev.kind, reproducer=reproducer if isinstance(reproducer, str) else None,
               for_whom=NOT_THE_CHANGE.get(ev.kind, ""))


def _veto(e: Evaluation) -> Fix | None:
    kills = [op for op in e.opinions if op.verdict == "KILL"]
    if not kills:
        return None
    first = kills[0]
    return Fix(title=f"A judge vetoed the change ({first.judge} on {first.criterion_id})", severity="high",
               location=None, detail=first.argument, kind="veto",
               hint="Read the judge's argument in the details; answer it in the PR or change the code.")


def _low_score(e: Evaluation) -> Fix | None:
    """A verdict held back by the score alone: name the weakest measured part."""
    parts = {"the description's fit to the code (R)": ("rationale", e.rationale_score),
             "the architecture (A)": ("architecture", e.architecture_score),
             "the tests (T)": ("testing", e.testing_score), "the judges' logic (L)": ("logic", e.logic_score)}
    measured = {name: score for name, (key, score) in parts.items() if key == "logic" or e.measured.get(key)}
    if not measured:
        return None
    weakest = min(measured, key=lambda n: measured[n])
    return Fix(title=f"The score is held down by {weakest}: {measured[weakest]:.2f}", severity="medium",
               location=None, detail=e.verdict_reasons[0] if e.verdict_reasons else "", kind="low-score",
               hint="The details below show the facts behind each part.")


# a parametrized test's node id: ``t.py::test_x[1-0]`` → test ``t.py::test_x``, ids ``1-0``
PARAMETRIZED = re.compile(r"^(?P<test>[^\[]+)\[(?P<ids>.*)\]$")


def group_parameters(fixes: list[Fix]) -> list[Fix]:
    """A parametrized test that fails under several parameter sets is one fix (in the place of its first), its
    parameter ids listed: ``tests/t.py::test_div[0-1, 2-0]``, so one test never takes every slot of the report."""
    groups: dict[tuple[str, str], list[Fix]] = {}
    for fix in fixes:
        match = PARAMETRIZED.match(fix.subject or "")
        if match:
            groups.setdefault((fix.kind, match.group("test")), []).append(fix)
    out: list[Fix] = []
    for fix in fixes:
        match = PARAMETRIZED.match(fix.subject or "")
        if not match:
            out.append(fix)
            continue
        group = groups.pop((fix.kind, match.group("test")), None)
        if group is None:  # said with its first parameter set
            continue
        if len(group) == 1:
            out.append(fix)
            continue
        ids = [m.group("ids") for m in (PARAMETRIZED.match(f.subject or "") for f in group) if m]
        subject = f"{match.group('test')}[{', '.join(ids)}]"
        out.append(Fix(title=f"{fix.title} ({len(group)} parameter sets)", detail=fix.detail,
                       severity=max((f.severity for f in group), key=lambda s: SEVERITY_ORDER[s]),
                       location=fix.location, hint=fix.hint, subject=subject, kind=fix.kind,
                       for_whom=fix.for_whom))
    return out


def what_to_fix(e: Evaluation) -> list[Fix]:
    """The blocking facts of ``e``, worst first, one per problem (at most :data:`MAX_FIXES`)."""
    blocking = e.verdict != "pass"
    picked: list[Evidence] = []
    for ev in e.evidence:
        if ev.kind in AGGREGATES:
            continue
        severe = SEVERITY_ORDER[ev.severity] >= SEVERITY_ORDER["high"]
        if severe or (blocking and ev.kind in DEMOTING and ev.severity != "info"):
            picked.append(ev)
    # The comparison with the base names a failing test more precisely than the run's own list: say it once.
    compared = {_test_name(ev) for ev in picked if ev.kind in ("test-regressed", "test-new-failing", "test-tampered")}
    picked = [ev for ev in picked if not (ev.kind == "test-failure" and _test_name(ev) in compared)]
    seen: set[tuple[str, str, int | None, str]] = set()
    fixes: list[Fix] = []
    # worst first; among equals, what decides a verdict (tests that fail, exploits) before what weakens it
    for ev in sorted(picked, key=lambda ev: (-SEVERITY_ORDER[ev.severity], FIRST.get(ev.kind, len(FIRST)))):
        where = ev.location
        key = (ev.kind, where.path if where else "", where.line if where else None, _test_name(ev) or ev.summary)
        if key in seen:
            continue
        seen.add(key)
        fixes.append(_fix(ev))
    fixes = group_parameters(fixes)
    veto = _veto(e)
    if veto is not None:  # first when it decided the verdict (rejection-first), else after the facts
        decided = any(r.startswith("Rejection-first") for r in e.verdict_reasons)
        fixes.insert(0 if decided else len(fixes), veto)
    if blocking and not fixes and (low := _low_score(e)) is not None:
        fixes.append(low)
    # the author's own first: what is not the change's fault comes after, under its own heading
    return sorted(fixes, key=lambda fix: not fix.authors)[:MAX_FIXES]


fix_for = _fix
"""The words for one fact (title, detail, hint): the review's line comments use them for facts on changed lines."""
