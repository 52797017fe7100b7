"""What one change can make LogoMesh store is bounded, worst first, with a note saying what was left out."""

from __future__ import annotations

from checks.bounds import MAX_ARGUMENT, MAX_CITED, MAX_EVIDENCE, bounded_evidence, bounded_opinion
from checks.models import Evidence, JudicialOpinion


def item(i: int, severity: str) -> Evidence:
    return Evidence(id=f"x.{i:05d}", detective="x", kind="flag" if severity == "info" else "sink", summary=str(i),
                    severity=severity)


def test_a_few_items_are_stored_as_they_are() -> None:
    items = [item(i, "low") for i in range(10)]
    assert bounded_evidence(items) == tuple(items)


def test_many_items_keep_the_most_severe_in_order_and_name_the_rest() -> None:
    items = [item(i, "info") for i in range(1000)] + [item(1000, "critical")] + [item(i, "info") for i in
                                                                                   range(1001, 2000)]
    kept = bounded_evidence(items)
    assert len(kept) == MAX_EVIDENCE and kept[-1].kind == "truncated"
    assert item(1000, "critical") in kept
    assert [e.id for e in kept[:-1]] == sorted(e.id for e in kept[:-1])  # original order
    assert kept[-1].facts["omitted"] == 2000 - (MAX_EVIDENCE - 1)
    assert kept[-1].facts["omitted_by_kind"] == {"flag": 2000 - (MAX_EVIDENCE - 1)}


def test_an_opinion_citing_thousands_is_cut_and_says_so() -> None:
    opinion = JudicialOpinion(judge="j", criterion_id="c", score=1, argument="x" * 10_000,
                              cited_evidence=tuple(f"e{i}" for i in range(5000)))
    short = bounded_opinion(opinion)
    assert len(short.cited_evidence) == MAX_CITED and len(short.argument) < MAX_ARGUMENT + 200
    assert "cites 5000 evidence items" in short.argument and "10000 characters in all" in short.argument
