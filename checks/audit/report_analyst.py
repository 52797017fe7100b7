"""DocAnalyst (report) — what the PDF report claims, checked against the repository, and how deep it goes.

What: indexes the report's text in chunks (:class:`~checks.audit.document.DocumentIndex`), extracts its
claims (:mod:`checks.audit.claims`) and cross-references each against the file list and the architecture
evidence (:mod:`checks.audit.crossref`); measures depth as the rubric's theory terms the report explains.
Why: a report that describes files or features the code does not have is the audit's clearest finding.
Example: ``hallucination: the report names src/memory/vector_store.py, which does not exist (p. 2)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from checks.audit.ast_facts import ArchitectureFacts
from checks.audit.claims import extract_claims
from checks.audit.crossref import cross_reference
from checks.audit.document import DocumentIndex
from checks.audit.models import ClaimCheck, ReportDocument, RepoSnapshot
from checks.models import Evidence, Location, Severity
from rubric import Rubric

ID = "report"
MAX_PASSAGE = 300
STATUS_KIND = {"verified": "claim-verified", "hallucination": "hallucination", "unverified": "claim-unverified"}
STATUS_SEVERITY: dict[str, Severity] = {"verified": "info", "hallucination": "medium", "unverified": "low"}


def report_location(report: ReportDocument, page: int) -> Location:
    """A place in the report: the line slot carries the page number (rendered as ``p. N``)."""
    return Location(path=report.name, line=page)


def claim_evidence(report: ReportDocument, checks: Sequence[ClaimCheck]) -> list[Evidence]:
    items: list[Evidence] = []
    for check in checks:
        claim = check.claim
        items.append(Evidence(
            id=f"{ID}.claim:{claim.kind}:{claim.value}" + (":negated" if claim.negated else ""),
            detective=ID,
            kind=STATUS_KIND[check.status],
            summary=f"{claim.kind} claim {claim.value!r}: {check.detail}",
            location=report_location(report, claim.page),
            severity=STATUS_SEVERITY[check.status],
            facts={"claim": claim.kind, "value": claim.value, "negated": claim.negated, "page": claim.page,
                   "quote": claim.quote, "status": check.status,
                   "found_at": str(check.location) if check.location else None, "report": True},
        ))
    return items


def depth_evidence(report: ReportDocument, index: DocumentIndex, rubric: Rubric) -> Evidence:
    settings = rubric.audit
    found: dict[str, int] = {}
    for term in settings.theory_terms:
        hits = index.contains(term)
        if hits:
            found[term] = hits[0].page
    enough = index.words >= settings.min_report_words and len(found) >= settings.min_theory_terms
    summary = (f"{index.words} word(s) on {len(report.pages)} page(s), {len(report.sections)} outlined "
               f"section(s), {len(index.chunks)} chunk(s); "
               f"{len(found)} of {len(settings.theory_terms)} theory terms: "
               + (", ".join(f"{t} (p. {p})" for t, p in found.items()) or "none"))
    return Evidence(id=f"{ID}.depth", detective=ID, kind="report-depth" if enough else "report-shallow",
                    summary=summary, severity="info" if enough else "low",
                    facts={"words": index.words, "pages": len(report.pages), "sections": len(report.sections),
                           "chunks": len(index.chunks), "terms": found, "report": True})


def investigate_report(snapshot: RepoSnapshot, report: ReportDocument | None, facts: ArchitectureFacts,
                       code_evidence: Sequence[Evidence], rubric: Rubric) -> tuple[list[Evidence], list[ClaimCheck]]:
    """Evidence about the report and the checked claims; a missing report is itself a finding."""
    if report is None:
        return [Evidence(id=f"{ID}.missing", detective=ID, kind="report-missing", severity="medium",
                         summary="No report was supplied; its depth and accuracy cannot be judged",
                         facts={"report": False})], []
    index = DocumentIndex(report)
    checks = cross_reference(extract_claims(report), snapshot.paths, facts, code_evidence)
    return [depth_evidence(report, index, rubric), *passage_evidence(report, index, rubric),
            *claim_evidence(report, checks)], checks


def passage_evidence(report: ReportDocument, index: DocumentIndex, rubric: Rubric) -> list[Evidence]:
    """For each criterion, the report's sentence that speaks most to it: context for the judges, never scored."""
    items: list[Evidence] = []
    for criterion in rubric.criteria:
        found = index.passage(f"{criterion.title} {criterion.question}")
        if found is None:
            continue
        page, sentence = found
        items.append(Evidence(id=f"{ID}.passage:{criterion.id}", detective=ID, kind="report-passage",
                              summary=sentence[:MAX_PASSAGE], location=report_location(report, page),
                              facts={"criterion": criterion.id, "page": page, "report": True, "neutral": True}))
    return items
