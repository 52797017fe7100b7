"""Semantic — Rationale Integrity (R): does the code say what the PR says it is for?

What: embeds the PR's stated intent and the changed code with a sentence-embedding model reached through the
:class:`~checks.protocols.Embedder` interface, and reports their calibrated cosine similarity as R.
Why: a change that addresses a different problem than stated is the core contextual-integrity failure; below
the rubric's threshold the intent penalty scales the whole score down.
Example: ``R = 0.71 (raw cosine 0.44) from title+body against 6 code chunks``.
"""

from __future__ import annotations

from checks.detectives.registry import register
from checks.errors import ModelUnavailable
from checks.models import Case, DetectiveReport, Evidence, SemanticResult
from checks.protocols import CourtResources, Embedder
from rubric import Rubric

ID = "semantic"


class Semantic:
    id = ID

    def __init__(self, embedder: Embedder | None, unavailable_reason: str = "no embedding model is configured"):
        self.embedder = embedder
        self.unavailable_reason = unavailable_reason

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport:
        if self.embedder is None:
            return not_measured(self.unavailable_reason)
        from checks.rationale import measure_rationale

        try:
            report: DetectiveReport = await measure_rationale(case, rubric, self.embedder)
        except ModelUnavailable as exc:  # the model was still loading when the review began, and did not load
            return not_measured(exc.message)
        return report


def not_measured(reason: str) -> DetectiveReport:
    return DetectiveReport(
        detective=ID,
        semantic=SemanticResult(measured=False, reason=reason),
        evidence=(Evidence(id=f"{ID}.not-measured", detective=ID, kind="semantic-not-measured",
                           summary=f"Rationale not measured: {reason}", severity="low", facts={"reason": reason}),),
    )


@register(ID, order=50, emits=("semantic", "semantic-not-measured", "intent-mismatch", "title-mismatch"))
def build(resources: CourtResources) -> Semantic:
    return Semantic(resources.embedder, resources.embedder_missing)
