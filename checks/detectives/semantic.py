"""Semantic — Rationale Integrity (R): does the code say what the PR says it is for?

What: embeds the PR's stated intent and the changed code with a sentence-embedding model reached through the
:class:`~checks.protocols.Embedder` interface, and reports their calibrated cosine similarity as R.
Why: a change that addresses a different problem than stated is the core contextual-integrity failure; below
the rubric's threshold the intent penalty scales the whole score down.
Example: ``R = 0.71 (raw cosine 0.44) from title+body against 6 code chunks``.
"""

from __future__ import annotations

from checks.models import Case, DetectiveReport, Evidence, SemanticResult
from checks.protocols import Embedder
from rubric import Rubric

ID = "semantic"


class Semantic:
    id = ID

    def __init__(self, embedder: Embedder | None, unavailable_reason: str = "no embedding model is configured"):
        self.embedder = embedder
        self.unavailable_reason = unavailable_reason

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport:
        if self.embedder is None:
            result = SemanticResult(measured=False, reason=self.unavailable_reason)
            return DetectiveReport(
                detective=ID,
                semantic=result,
                evidence=(Evidence(id=f"{ID}.not-measured", detective=ID, kind="semantic-not-measured",
                                   summary=f"Rationale not measured: {result.reason}", severity="low",
                                   facts={"reason": result.reason}),),
            )
        from checks.rationale import measure_rationale

        report: DetectiveReport = await measure_rationale(case, rubric, self.embedder)
        return report
