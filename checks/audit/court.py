"""The audit court: a whole repository (and its report) judged against any rubric, as one fixed DAG.

    detectives (history, architecture, safety, report, vision) → judges in parallel → Chief Justice

The Chief Justice applies the same named rules as on a pull request (:mod:`checks.chief_justice`:
``rule_of_evidence``, ``rule_of_functionality``, ``rule_of_security``, ``dissent_for``) to every criterion of
the rubric, with the facts' score from :mod:`checks.audit.docket`. The overall score is the mean ruling; its
unit value meets the rubric's verdict thresholds. Same inputs, same rubric, same judges → the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from checks import cis
from checks.audit.architecture import architecture_evidence, safety_evidence
from checks.audit.ast_facts import collect
from checks.audit.docket import audit_docket, fact_score
from checks.audit.history import investigate_history
from checks.audit.models import AuditResult, ClaimCheck, ReportDocument, ReportRef, RepoSnapshot
from checks.audit.report_analyst import investigate_report
from checks.audit.vision import DiagramClassifier, VisionInspector
from checks.chief_justice import rule_of_rejection, rule_of_security_cap, rule_on_facts
from checks.hearing import by_criterion, hear
from checks.judges import offline_judges
from checks.judges.base import bears_on
from checks.models import (
    Brief,
    Case,
    Commit,
    CriterionRuling,
    Evidence,
    JudicialOpinion,
    RedAnalysis,
    RubricRef,
    round_score,
)
from checks.protocols import Judge
from rubric import Criterion, Rubric

DETECTIVE_ORDER = ("git", "ast", "report", "vision")


@dataclass
class AuditParts:
    """What an audit may use beyond the repository: the bench, and a vision provider when there is one."""

    judges: Sequence[Judge] = field(default_factory=lambda: offline_judges(court="audit"))
    classifier: DiagramClassifier | None = None
    classifier_missing: str = "no vision provider configured"
    notices: list[str] = field(default_factory=list)


def _case(snapshot: RepoSnapshot) -> Case:
    """The audit as a :class:`Case`, so judges written for the PR court can read it: nothing changed, all is head."""
    return Case(
        repo=snapshot.name, base_sha=snapshot.head_sha, head_sha=snapshot.head_sha, diff="", files=(),
        commits=tuple(Commit(sha=c.sha, author_name=c.author_name, author_email=c.author_email, message=c.message,
                             files_changed=c.files_changed, insertions=c.insertions, deletions=c.deletions)
                      for c in snapshot.commits),
        head_paths=snapshot.paths,
    )


def rule_audit_criterion(rubric: Rubric, brief: Brief, criterion: Criterion,
                         opinions: Sequence[JudicialOpinion]) -> CriterionRuling:
    return rule_on_facts(rubric, brief, criterion, opinions, audit_docket(brief, criterion).fact_score)


def _ordered(evidence: Sequence[Evidence]) -> tuple[Evidence, ...]:
    rank = {name: i for i, name in enumerate(DETECTIVE_ORDER)}
    unique = {e.id: e for e in evidence}  # one fact, one entry
    return tuple(sorted(unique.values(), key=lambda e: (rank.get(e.detective, len(rank)), e.id)))


async def collect_evidence(snapshot: RepoSnapshot, report: ReportDocument | None, rubric: Rubric,
                           parts: AuditParts) -> tuple[tuple[Evidence, ...], list[ClaimCheck]]:
    sources = {f.path: f.text for f in snapshot.sources}
    facts = collect(sources)
    code = [*architecture_evidence(facts), *safety_evidence(sources, rubric)]
    report_items, claims = investigate_report(snapshot, report, facts, code, rubric)
    vision = await VisionInspector(parts.classifier, parts.classifier_missing).inspect(report, facts)
    everything = [*investigate_history(snapshot, rubric), *code, *report_items, *vision]
    return _ordered(everything), claims


async def run_audit(snapshot: RepoSnapshot, report: ReportDocument | None, rubric: Rubric,
                    parts: AuditParts | None = None) -> AuditResult:
    """Audit one repository (and optionally its report) against ``rubric``."""
    parts = parts or AuditParts()
    notices = list(parts.notices)
    if report is not None:
        notices.extend(report.notices)
    evidence, claims = await collect_evidence(snapshot, report, rubric, parts)
    fact_scores = {c.id: fact_score(tuple(e for e in evidence if bears_on(c, e))) for c in rubric.criteria}
    brief = Brief(case=_case(snapshot), evidence=evidence, tests=None, semantic=None, red=RedAnalysis(),
                  components={k: None if v is None else round_score(cis.opinion_to_unit(v))
                              for k, v in fact_scores.items()})

    hearing = await hear(parts.judges, brief, rubric)
    notices.extend(hearing.notices)
    ordered = hearing.opinions
    grouped = by_criterion(ordered)
    rulings = tuple(rule_audit_criterion(rubric, brief, c, grouped.get(c.id, [])) for c in rubric.criteria)

    score = sum(r.score for r in rulings) / len(rulings)
    unit = cis.opinion_to_unit(score)
    reasons: list[str] = []
    unit, capped = rule_of_security_cap(rubric, brief, unit, flaw="a critical unsafe construct", whole="the audit")
    if capped:
        reasons.append(capped)
    verdict = cis.verdict_for(rubric, unit)
    reasons.insert(0, f"Audit score {score:.2f}/5 ({unit:.4f}) against pass ≥ {rubric.verdict.pass_:.2f}, "
                      f"fail < {rubric.verdict.fail:.2f}")
    verdict, rejected = rule_of_rejection(rubric, ordered, verdict)
    if rejected:
        reasons.append(rejected)
    return AuditResult(
        repo=snapshot.name,
        head_sha=snapshot.head_sha,
        rubric=RubricRef(name=rubric.name, version=rubric.version, sha256=rubric.sha256),
        report=None if report is None else ReportRef(name=report.name, sha256=report.sha256,
                                                      pages=len(report.pages), images=len(report.images),
                                                      sections=report.sections),
        score=round_score(score),
        unit_score=round_score(unit),
        verdict=verdict,
        verdict_reasons=tuple(reasons),
        fact_scores={k: None if v is None else round_score(v) for k, v in fact_scores.items()},
        evidence=evidence + hearing.records,
        opinions=ordered,
        rulings=rulings,
        claims=tuple(claims),
        notices=tuple(notices),
    )
