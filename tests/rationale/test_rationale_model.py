"""R with the real all-MiniLM-L6-v2: ranking, fallback, the chunk cap, the padding attack, the labelled set."""

from __future__ import annotations

import textwrap

import pytest

from app.review.embeddings import SentenceEmbedder
from checks import cis
from checks.models import DetectiveReport, Evidence
from checks.rationale import measure_rationale
from checks.rationale_vectors import R_TOLERANCE, recompute_r
from rubric import Rubric
from tests.rationale.calibrate import score_labelled_set
from tests.rationale.cases import BY_ID, case_from_files, matching, mismatched
from tests.rationale.labelled_changes import CHANGES

pytestmark = pytest.mark.model

# How much pasting the PR's own description into the code may raise R at most (documented in docs/rationale.md).
PADDING_MARGIN = 0.02


def by_id(report: DetectiveReport, evidence_id: str) -> Evidence | None:
    return next((e for e in report.evidence if e.id == evidence_id), None)


@pytest.mark.parametrize("change_id", ["shipping-cost-zones", "login-rate-limit", "request-id-logging",
                                       "install-docs"])
async def test_matching_description_scores_higher_than_another_prs(
        embedder: SentenceEmbedder, rubric: Rubric, change_id: str) -> None:
    index = next(i for i, c in enumerate(CHANGES) if c["id"] == change_id)
    honest = await measure_rationale(matching(CHANGES[index]), rubric, embedder)
    other = await measure_rationale(mismatched(index), rubric, embedder)
    assert honest.semantic is not None and other.semantic is not None
    assert honest.semantic.measured and other.semantic.measured
    assert honest.semantic.score is not None and other.semantic.score is not None
    assert honest.semantic.score > other.semantic.score
    assert honest.semantic.raw_similarity is not None and other.semantic.raw_similarity is not None
    assert honest.semantic.raw_similarity > other.semantic.raw_similarity + 0.1
    assert honest.semantic.score >= rubric.intent.threshold and by_id(honest, "semantic.intent-mismatch") is None
    mismatch = by_id(other, "semantic.intent-mismatch")
    assert mismatch is not None and mismatch.kind == "intent-mismatch" and mismatch.severity in ("medium", "high")
    assert mismatch.facts["penalty"] == pytest.approx(
        cis.intent_penalty(rubric, other.semantic.score, other.semantic.penalty_threshold), abs=1e-4)
    assert "the integrity score is reduced" in mismatch.summary
    assert "R =" not in mismatch.summary and "%" not in mismatch.summary  # numbers stay in the table and the facts


async def test_report_records_raw_calibrated_sources_and_chunks(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    report = await measure_rationale(matching(BY_ID["orders-csv-export"]), rubric, embedder)
    result = report.semantic
    assert result is not None and result.raw_similarity is not None
    assert result.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert result.intent_sources == ("title", "body") and result.chunks >= 1
    assert result.score == pytest.approx(cis.rationale_score(rubric, result.raw_similarity), abs=1e-4)
    main = by_id(report, "semantic.rationale")
    assert main is not None
    assert main.kind == "semantic" and main.facts["raw_similarity"] == result.raw_similarity
    assert main.facts["intent_sources"] == ["title", "body"] and "title + body" in main.summary
    assert main.facts["best_chunks"][0]["location"].startswith("shop/export.py:")


async def test_commit_messages_are_never_intent_and_a_short_title_is_not_measured(
        embedder: SentenceEmbedder, rubric: Rubric) -> None:
    change = BY_ID["webhook-retry-backoff"]
    commits = ["Retry webhook deliveries with exponential backoff", "Mark deliveries failed"]
    vague = await measure_rationale(case_from_files(change["files"], "Webhook fixes", "", commits), rubric, embedder)
    # the change's own commit messages would make it explain itself: they are not intent, and two words are too
    # few to compare — not measured, so no penalty on an honest short title
    assert vague.semantic is not None and vague.semantic.reason is not None
    assert not vague.semantic.measured and "too little" in vague.semantic.reason
    assert vague.semantic.penalty_threshold is None
    titled = await measure_rationale(case_from_files(change["files"], "Retry failed webhook deliveries", "",
                                                     commits), rubric, embedder)
    assert titled.semantic is not None
    assert titled.semantic.measured and titled.semantic.intent_sources == ("title",)


async def test_nothing_to_compare_is_not_measured_with_a_reason(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    no_intent = await measure_rationale(case_from_files({"a.py": "def f():\n    return 1\n"}), rubric, embedder)
    assert no_intent.semantic is not None and no_intent.semantic.reason is not None
    assert not no_intent.semantic.measured and "say too little" in no_intent.semantic.reason
    assert no_intent.evidence[0].kind == "semantic-not-measured"
    only_echo = await measure_rationale(
        case_from_files({"a.py": "# Rename the helper module to something clearer\n"},
                        "Rename the helper module to something clearer"), rubric, embedder)
    assert only_echo.semantic is not None and only_echo.semantic.reason is not None
    assert not only_echo.semantic.measured and "repeats its own description" in only_echo.semantic.reason


async def test_five_thousand_line_diff_stays_within_the_chunk_cap(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    functions = []
    for i in range(1001):
        functions.append(f"def compute_invoice_line_{i}(quantity, unit_price):\n"
                         f"    \"\"\"Invoice line {i}: quantity times unit price with tax.\"\"\"\n"
                         f"    subtotal = quantity * unit_price\n    return round(subtotal * 1.2, 2)\n")
    text = "\n".join(functions)
    assert len(text.splitlines()) >= 5000
    case = case_from_files({"billing/invoice_lines.py": text}, "Compute invoice lines with tax",
                           "Adds helpers that compute each invoice line's total including tax.")
    report = await measure_rationale(case, rubric, embedder)
    cap = rubric.rationale.max_chunks
    assert report.semantic is not None
    assert report.semantic.measured and report.semantic.chunks == cap
    capped = by_id(report, "semantic.chunk-cap")
    assert capped is not None and capped.facts["chunks_total"] >= 1000 and capped.facts["chunks_embedded"] == cap
    assert f"the {cap} that share most words with the intent" in capped.summary
    assert report.semantic.score is not None
    assert report.semantic.score >= rubric.intent.threshold


async def test_one_relevant_function_is_not_drowned_by_a_large_unrelated_change(
        embedder: SentenceEmbedder, rubric: Rubric) -> None:
    change = BY_ID["luhn-card-check"]
    noise = {f"vendor/table_{i}.py": f"ROWS_{i} = [{', '.join(str(j) for j in range(i, i + 40))}]\n"
             for i in range(30)}
    case = case_from_files({**noise, **change["files"]}, change["title"], change["body"])
    report = await measure_rationale(case, rubric, embedder)
    assert report.semantic is not None and report.semantic.score is not None
    assert report.semantic.score >= rubric.intent.threshold
    rationale = by_id(report, "semantic.rationale")
    assert rationale is not None
    assert rationale.facts["best_chunks"][0]["location"].startswith("payments/cards.py")


def pad(text: str, description: str) -> str:
    comment = "".join(f"# {line}\n" for line in textwrap.wrap(description, 70))
    return comment * 3 + text + f'\n\nDESCRIPTION = """{description}"""\n'


@pytest.mark.parametrize(("code_id", "description_id"), [
    ("login-rate-limit", "login-rate-limit"),            # honest code, padded
    ("dark-mode-toggle", "dark-mode-toggle"),
    ("login-rate-limit", "password-reset-expiry"),       # code for something else, padded with the description
    ("weekly-digest", "webhook-retry-backoff"),
])
async def test_padding_with_the_description_does_not_raise_r(
        embedder: SentenceEmbedder, rubric: Rubric, code_id: str, description_id: str) -> None:
    code, desc = BY_ID[code_id], BY_ID[description_id]
    ((path, text),) = code["files"].items()
    honest = await measure_rationale(case_from_files(code["files"], desc["title"], desc["body"]), rubric, embedder)
    for description in (desc["body"], desc["title"] + ". " + desc["body"]):
        padded = await measure_rationale(case_from_files({path: pad(text, description)}, desc["title"],
                                                         desc["body"]), rubric, embedder)
        assert padded.semantic is not None and honest.semantic is not None
        assert padded.semantic.score is not None and honest.semantic.score is not None
        assert padded.semantic.score <= honest.semantic.score + PADDING_MARGIN
        echo = by_id(padded, "semantic.intent-echo")
        assert echo is not None and echo.facts["words_removed"] > 0
    if code_id != description_id:
        assert padded.semantic is not None and padded.semantic.score is not None
        assert padded.semantic.score < rubric.intent.threshold


async def test_labelled_set_separates_matching_from_mismatched(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    scores = await score_labelled_set(embedder, rubric)
    assert len(scores.matching_raw) >= 20 and len(scores.mismatched_raw) >= 20
    assert scores.auc() >= 0.97
    threshold = rubric.intent.threshold
    false_positives = sum(1 for s in scores.matching_score if s < threshold)
    caught = sum(1 for s in scores.mismatched_score if s < threshold)
    assert false_positives <= 1
    assert caught >= 0.9 * len(scores.mismatched_score)


async def test_a_huge_description_is_cut_to_the_word_budget(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    change = BY_ID["article-slugs"]
    body = change["body"] + " " + "Unrelated chatter about the weather and lunch plans. " * 2000
    report = await measure_rationale(case_from_files(change["files"], change["title"], body), rubric, embedder)
    rationale = by_id(report, "semantic.rationale")
    assert rationale is not None
    facts = rationale.facts
    assert report.semantic is not None
    assert report.semantic.measured and facts["intent_truncated_to"] == rubric.rationale.max_intent_words
    assert facts["intent_words"] > rubric.rationale.max_intent_words


async def test_a_lying_title_over_an_empty_body_is_a_mismatch(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    # the change's commit messages would describe it faithfully; they are not intent, so the title is on its own
    change = BY_ID["webhook-retry-backoff"]
    lying = await measure_rationale(case_from_files(change["files"], "Fix typo in README", "",
                                                    ["Retry webhook deliveries with exponential backoff"]),
                                    rubric, embedder)
    assert lying.semantic is not None
    assert lying.semantic.anchors == ("README",) and lying.semantic.anchors_found == ()
    mismatch = by_id(lying, "semantic.intent-mismatch")
    assert mismatch is not None and "names `README` but the change does not touch it" in mismatch.summary


async def test_code_pasted_into_the_description_does_not_lift_r(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    code, desc = BY_ID["weekly-digest"], BY_ID["webhook-retry-backoff"]
    ((_path, text),) = code["files"].items()
    plain = await measure_rationale(case_from_files(code["files"], desc["title"], desc["body"]), rubric, embedder)
    pasted_body = desc["body"] + "\n\n<details><summary>diff</summary>\n\n```python\n" + text + "\n```\n</details>\n"
    pasted = await measure_rationale(case_from_files(code["files"], desc["title"], pasted_body), rubric, embedder)
    assert pasted.semantic is not None and plain.semantic is not None
    assert pasted.semantic.raw_similarity == plain.semantic.raw_similarity
    assert by_id(pasted, "semantic.intent-mismatch") is not None


PARAPHRASE = '''"""Outbound hooks used to vanish after one failed attempt; now each delivery is attempted again, waiting
twice as long every time with a random spread, up to six tries, and a delivery that never succeeds is flagged
as failed so the dashboard lists it."""
# Webhook deliveries that fail are retried with exponential backoff and jitter.
'''
SALAD = "# webhook retry backoff exponential jitter delivery failed dashboard outgoing attempts retries\n"


@pytest.mark.parametrize("prose", [PARAPHRASE, SALAD * 6], ids=["paraphrased comments", "keyword salad"])
async def test_comments_do_not_make_an_unrelated_change_read_like_its_description(
        embedder: SentenceEmbedder, rubric: Rubric, prose: str) -> None:
    """The digest code under the webhook PR's description, with comments written to match it: R keeps the code's
    own similarity, and the change is penalised as a mismatch as it is without the comments."""
    code, desc = BY_ID["weekly-digest"], BY_ID["webhook-retry-backoff"]
    ((path, text),) = code["files"].items()
    dressed = {path: prose + text}
    plain = await measure_rationale(case_from_files(code["files"], desc["title"], desc["body"]), rubric, embedder)
    gamed = await measure_rationale(case_from_files(dressed, desc["title"], desc["body"]), rubric, embedder)
    assert by_id(plain, "semantic.intent-mismatch") is not None
    mismatch = by_id(gamed, "semantic.intent-mismatch")
    assert mismatch is not None, [e.summary for e in gamed.evidence]
    assert gamed.semantic is not None
    assert gamed.semantic.score is not None and gamed.semantic.penalty_threshold is not None
    assert gamed.semantic.score < gamed.semantic.penalty_threshold
    lift = by_id(gamed, "semantic.prose-lift")  # the comments lifted R over the threshold: said, and R is the code's
    assert lift is not None and lift.facts["with_prose"] >= lift.facts["threshold"] > lift.facts["code_only"]
    assert lift.facts["code_only"] == gamed.semantic.score
    # the record keeps the vectors of the code-only measurement, so R recomputes to the R kept, not the lifted one
    assert recompute_r(gamed.semantic) == pytest.approx(gamed.semantic.score, abs=R_TOLERANCE)
    assert abs(recompute_r(gamed.semantic) - lift.facts["with_prose"]) > R_TOLERANCE


async def test_an_honest_change_keeps_its_comments(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    """Comments explaining an honest change are no reason for a penalty: the description matches the code."""
    change = BY_ID["webhook-retry-backoff"]
    ((path, text),) = change["files"].items()
    commented = {path: PARAPHRASE + text}
    honest = await measure_rationale(case_from_files(commented, change["title"], change["body"]), rubric, embedder)
    assert by_id(honest, "semantic.intent-mismatch") is None and by_id(honest, "semantic.prose-lift") is None


async def test_a_lying_title_over_an_accurate_body_is_named(embedder: SentenceEmbedder, rubric: Rubric) -> None:
    change = BY_ID["webhook-retry-backoff"]
    lying = await measure_rationale(case_from_files(change["files"], "Fix typo in README", change["body"]),
                                    rubric, embedder)
    title = by_id(lying, "semantic.title-mismatch")
    assert title is not None and title.severity == "medium" and "`README`" in title.summary
    honest = await measure_rationale(case_from_files(change["files"], change["title"], change["body"]),
                                     rubric, embedder)
    assert by_id(honest, "semantic.title-mismatch") is None
