"""The review as a fixed DAG over one state: detectives in parallel → judges in parallel → (one re-hearing of the
criteria they disagree on, :mod:`checks.rehearing`) → Chief Justice.

``review(case, rubric, ...)`` is a pure function of its inputs and of the answers of the interfaces handed in:
the same inputs give a byte-identical :class:`~checks.models.Evaluation`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from checks import cis
from checks.bounds import bounded_evidence, bounded_findings, bounded_opinion
from checks.chief_justice import judge_case, rehearing_order
from checks.detectives.registry import bench
from checks.errors import DetectiveError
from checks.hearing import hear
from checks.judges import offline_judges
from checks.languages import go, go_syntax, javascript, javascript_syntax
from checks.languages.python_dialect import unread_dialects
from checks.linguist import unrun_tests
from checks.models import (
    Brief,
    Case,
    DetectiveReport,
    Evaluation,
    Evidence,
    Inputs,
    JudicialOpinion,
    RedAnalysis,
    RedSummary,
    RubricRef,
    SemanticResult,
    TestDiff,
    TestRunResult,
    round_score,
)
from checks.protocols import Detective, Embedder, Judge, Sandbox
from checks.protocols import RedTeam as RedTeamAgent
from checks.rehearing import rehear
from rubric import Rubric


@dataclass
class CourtParts:
    """The interfaces a review may use, each optional, with the reason when one is missing."""

    sandbox: Sandbox | None = None
    sandbox_missing: str = "no sandbox is configured"
    embedder: Embedder | None = None
    embedder_missing: str = "no embedding model is configured"
    red_team: RedTeamAgent | None = None
    red_team_missing: str = "no red agent is configured"
    judges: Sequence[Judge] = field(default_factory=offline_judges)
    notices: list[str] = field(default_factory=list)
    rejection_first: bool | None = None

    def detectives(self) -> list[Detective]:
        """The bench: every registered detective (:mod:`checks.detectives.registry`), built from these parts."""
        return bench(self)


@dataclass
class ReviewState:
    """The one state object the DAG fills in, stage by stage."""

    case: Case
    rubric: Rubric
    reports: list[DetectiveReport] = field(default_factory=list)
    opinions: list[JudicialOpinion] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        return tuple(e for report in self.reports for e in report.evidence)

    def tests(self) -> TestRunResult | None:
        return next((r.tests for r in self.reports if r.tests is not None), None)

    def differential(self) -> TestDiff | None:
        return next((r.differential for r in self.reports if r.differential is not None), None)

    def semantic(self) -> SemanticResult | None:
        return next((r.semantic for r in self.reports if r.semantic is not None), None)

    def red(self) -> RedAnalysis:
        return next((r.red for r in self.reports if r.red is not None), RedAnalysis())


def measured_components(rubric: Rubric, state: ReviewState) -> dict[str, float | None]:
    """R, A and T from the detectives' facts alone; None where nothing was measured."""
    architecture_kinds = rubric.component_kinds("architecture")
    severities = [e.severity for e in state.evidence if e.kind in architecture_kinds]
    tests = state.tests()
    diff = state.differential()
    testing: float | None = None
    found_none = False  # the runs found no test: "no tests" (T = testing.no_tests) unless the tests are elsewhere
    if diff is not None and diff.status == "measured":
        testing = cis.testing_from_diff(rubric, diff, tests)
        found_none = not diff.regressed and not diff.unreached and sum(cis.tests_held(diff)) == 0 \
            and not (tests is not None and tests.status in ("timeout", "error"))
    elif diff is not None and diff.status == "env_error":
        testing = None
    elif tests is not None:
        if tests.status == "no_tests":
            testing, found_none = rubric.testing.no_tests, True
        elif tests.status in ("timeout", "error"):
            testing = cis.testing_score(rubric, tests.pass_rate or 0.0)
        elif tests.status == "ran":
            rate = tests.pass_rate
            testing = rubric.testing.no_tests if rate is None else cis.testing_score(rubric, rate)
            found_none = rate is None
    if found_none and unrun_tests(state.case.head_paths):
        testing = None  # the project's tests are in a language LogoMesh does not run: not measured, never "none"
    semantic = state.semantic()
    rationale = semantic.score if semantic is not None and semantic.measured else None
    unread = {e.location.path for e in unread_dialects(state.evidence) if e.location is not None}
    return {
        "rationale": rationale,
        "architecture": cis.architecture_score(rubric, severities) if analysable(state.case, unread) else None,
        "testing": testing,
    }


def analysable(case: Case, unread: Collection[str] = ()) -> bool:
    """Whether the change holds code the court can analyse: Python that is not removed (nor in ``unread``: a
    dialect this interpreter does not read), or Go or JavaScript / TypeScript when its syntax tree can be read here
    (:func:`checks.languages.go_syntax.available`, :func:`checks.languages.javascript_syntax.available`)."""
    return any(f.status != "removed" and f.path not in unread
               and (f.path.endswith(".py") or (go.owns(f.path) and go_syntax.available())
                                          or (javascript.owns(f.path) and javascript_syntax.available()))
               for f in case.files)


async def _run_detective(detective: Detective, case: Case, rubric: Rubric) -> DetectiveReport:
    """One detective's report. A detective that only computes (``cpu_bound``: parsing, no I/O, nothing shared
    with the event loop) runs in a thread with a loop of its own, so the loop stays free for the sandbox's
    containers and the judges' requests while it works."""
    try:
        if getattr(detective, "cpu_bound", False):
            return await asyncio.to_thread(asyncio.run, detective.investigate(case, rubric))
        return await detective.investigate(case, rubric)
    except DetectiveError as exc:
        return DetectiveReport(
            detective=detective.id,
            evidence=(Evidence(id=f"{detective.id}.failed", detective=detective.id, kind="detective-failed",
                               summary=str(exc), severity="low", facts={"error": exc.message}),),
            notices=(str(exc),),
        )


def _sorted_evidence(evidence: Sequence[Evidence], order: Sequence[str]) -> tuple[Evidence, ...]:
    rank = {name: i for i, name in enumerate(order)}
    return tuple(sorted(evidence, key=lambda e: (rank.get(e.detective, len(rank)), e.id)))


async def review(case: Case, rubric: Rubric, parts: CourtParts | None = None) -> Evaluation:
    """Review one change: collect evidence, hear the judges, let the Chief Justice rule."""
    parts = parts or CourtParts()
    state = ReviewState(case=case, rubric=rubric, notices=list(parts.notices))
    detectives = parts.detectives()

    # the detectives that wait on containers start first: the slowest stage begins before any parsing does
    waiting_first = sorted(detectives, key=lambda d: bool(getattr(d, "cpu_bound", False)))
    started = {id(d): asyncio.ensure_future(_run_detective(d, case, rubric)) for d in waiting_first}
    state.reports = list(await asyncio.gather(*(started[id(d)] for d in detectives)))
    for report in state.reports:
        state.notices.extend(report.notices)

    components = measured_components(rubric, state)
    evidence = _sorted_evidence(state.evidence, [d.id for d in detectives])
    brief = Brief(case=case, evidence=evidence, tests=state.tests(), semantic=state.semantic(), red=state.red(),
                  differential=state.differential(), components=components)

    hearing = await hear(parts.judges, brief, rubric)
    hearing, rehearing = await rehear(parts.judges, brief, rubric, hearing,
                                      rehearing_order(rubric, hearing.opinions))
    state.opinions.extend(hearing.opinions)
    state.notices.extend(hearing.notices)
    opinions = hearing.opinions

    judgment = judge_case(rubric, brief, opinions, rejection_first=parts.rejection_first)
    red = brief.red
    testing_value = components["testing"]
    rationale_value = components["rationale"]
    return Evaluation(
        rationale_score=round_score(rationale_value if rationale_value is not None else rubric.rationale.not_measured),
        architecture_score=round_score(components["architecture"] if components["architecture"] is not None
                                       else rubric.architecture.baseline),
        testing_score=round_score(testing_value if testing_value is not None else rubric.testing.not_measured),
        logic_score=round_score(judgment.logic_score),
        cis_raw=round_score(judgment.cis_raw),
        cis_score=round_score(judgment.cis_score),
        red_penalty_applied=round_score(judgment.red_penalty),
        intent_penalty=round_score(judgment.intent_penalty),
        red_analysis=RedSummary(
            attack_successful=red.attack_successful,
            vulnerability_count=red.vulnerability_count,
            max_severity=red.max_severity,
            findings=bounded_findings(red.findings),
        ),
        verdict=judgment.verdict,
        verdict_reasons=judgment.verdict_reasons,
        measured={
            "rationale": rationale_value is not None,
            "architecture": components["architecture"] is not None,
            "testing": testing_value is not None,
            "red_team": red.ran,
        },
        evidence=bounded_evidence(evidence + hearing.records),
        opinions=tuple(bounded_opinion(o) for o in opinions),
        rulings=judgment.rulings,
        dissent=judgment.dissent,
        notices=tuple(state.notices),
        tests=brief.tests,
        differential=brief.differential,
        rehearing=None if rehearing is None else rehearing.model_copy(update={
            "first_round": tuple(bounded_opinion(o) for o in rehearing.first_round)}),
        semantic=brief.semantic,
        rubric=RubricRef(name=rubric.name, version=rubric.version, sha256=rubric.sha256),
        inputs=Inputs(
            repo=case.repo,
            pr_number=case.pr_number,
            base=case.base_sha,
            head=case.head_sha,
            intent_sha256=case.intent_sha256,
            diff_sha256=case.diff_sha256,
            config_sha256=case.config_sha256,
        ),
    )
