"""Caps that change what R measures are said in evidence that is not ``info``: chunks read of how many, and
the share of a long description that was compared. With the real model (the session's embedder)."""

from __future__ import annotations

import pytest

from app.review.embeddings import SentenceEmbedder
from checks.models import DetectiveReport, Evidence
from checks.rationale import measure_rationale
from rubric import Rubric
from tests.rationale.cases import case_from_files

pytestmark = pytest.mark.model


def by_id(report: DetectiveReport, evidence_id: str) -> Evidence | None:
    return next((e for e in report.evidence if e.id == evidence_id), None)


def many_functions(count: int) -> str:
    return "\n".join(f"def invoice_line_total_{i}(quantity, unit_price):\n"
                     f"    \"\"\"Invoice line {i}: quantity times the unit price, with tax.\"\"\"\n"
                     f"    return round(quantity * unit_price * 1.2, 2)\n" for i in range(count))


async def test_a_chunk_cap_says_how_much_r_read_and_how_it_chose(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    case = case_from_files({"billing/lines.py": many_functions(1500)}, "Compute invoice lines with tax",
                           "Adds helpers that compute each invoice line's total including tax.")
    report = await measure_rationale(case, rubric, embedder)
    cap = rubric.rationale.max_chunks
    capped = by_id(report, "semantic.chunk-cap")
    assert capped is not None and capped.severity == "low"
    total = capped.facts["chunks_total"]
    assert report.semantic is not None
    assert total > cap and capped.facts["chunks_embedded"] == cap == report.semantic.chunks
    share = 100 * cap / total
    assert capped.summary.startswith(f"R read {cap} of {total:,} chunks ({share:.1f} %), ranked by relevance to "
                                     "the description")
    assert capped.facts["share_read"] == round(cap / total, 4)
    rationale = by_id(report, "semantic.rationale")
    assert rationale is not None
    assert rationale.facts["chunks_total"] == total


async def test_no_cap_no_cap_evidence(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    case = case_from_files({"billing/lines.py": many_functions(3)}, "Compute invoice lines with tax",
                           "Adds helpers that compute each invoice line's total including tax.")
    report = await measure_rationale(case, rubric, embedder)
    assert report.semantic is not None
    assert report.semantic.measured
    assert by_id(report, "semantic.chunk-cap") is None and by_id(report, "semantic.intent-cap") is None


async def test_a_description_cut_to_the_word_budget_is_reported(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    body = "Adds helpers that compute each invoice line's total including tax. " + "More words here. " * 1500
    case = case_from_files({"billing/lines.py": many_functions(3)}, "Compute invoice lines with tax", body)
    report = await measure_rationale(case, rubric, embedder)
    cut = by_id(report, "semantic.intent-cap")
    limit = rubric.rationale.max_intent_words
    assert cut is not None and cut.severity == "low"
    words = cut.facts["intent_words"]
    assert words > limit and cut.facts["intent_words_read"] == limit
    assert cut.summary.startswith(f"R read the first {limit:,} of the {words:,} words of the stated intent")
