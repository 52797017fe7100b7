"""R with the real all-MiniLM-L6-v2: ranking, fallback, the chunk cap, the padding attack, the labelled set."""

from __future__ import annotations

import textwrap

import pytest

from checks import cis
from checks.rationale import measure_rationale
from tests.rationale.calibrate import score_labelled_set
from tests.rationale.cases import BY_ID, case_from_files, matching, mismatched
from tests.rationale.labelled_changes import CHANGES

pytestmark = pytest.mark.model

# How much pasting the PR's own description into the code may raise R at most (documented in docs/rationale.md).
PADDING_MARGIN = 0.02


def by_id(report, evidence_id):
    return next((e for e in report.evidence if e.id == evidence_id), None)


@pytest.mark.parametrize("change_id", ["shipping-cost-zones", "login-rate-limit", "go-health-endpoint",
                                       "install-docs"])
async def test_matching_description_scores_higher_than_another_prs(embedder, rubric, change_id):
    index = next(i for i, c in enumerate(CHANGES) if c["id"] == change_id)
    honest = await measure_rationale(matching(CHANGES[index]), rubric, embedder)
    other = await measure_rationale(mismatched(index), rubric, embedder)
    assert honest.semantic.measured and other.semantic.measured
    assert honest.semantic.score > other.semantic.score
    assert honest.semantic.raw_similarity > other.semantic.raw_similarity + 0.1
    assert honest.semantic.score >= rubric.intent.threshold and by_id(honest, "semantic.intent-mismatch") is None
    mismatch = by_id(other, "semantic.intent-mismatch")
    assert mismatch is not None and mismatch.kind == "intent-mismatch" and mismatch.severity in ("medium", "high")
    assert mismatch.facts["penalty"] == pytest.approx(
        cis.intent_penalty(rubric, other.semantic.score, other.semantic.penalty_threshold), abs=1e-4)
    assert "×" in mismatch.summary


async def test_report_records_raw_calibrated_sources_and_chunks(embedder, rubric):
    report = await measure_rationale(matching(BY_ID["orders-csv-export"]), rubric, embedder)
    result = report.semantic
    assert result.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert result.intent_sources == ("title", "body") and result.chunks >= 1
    assert result.score == pytest.approx(cis.rationale_score(rubric, result.raw_similarity), abs=1e-4)
    main = by_id(report, "semantic.rationale")
    assert main.kind == "semantic" and main.facts["raw_similarity"] == result.raw_similarity
    assert main.facts["intent_sources"] == ["title", "body"] and "title + body" in main.summary
    assert main.facts["best_chunks"][0]["location"].startswith("shop/export.py:")


async def test_commit_messages_are_never_intent_and_a_short_title_is_not_measured(embedder, rubric):
    change = BY_ID["webhook-retry-backoff"]
    commits = ["Retry webhook deliveries with exponential backoff", "Mark deliveries failed"]
    vague = await measure_rationale(case_from_files(change["files"], "Webhook fixes", "", commits), rubric, embedder)
    # the change's own commit messages would make it explain itself: they are not intent, and two words are too
    # few to compare — not measured, so no penalty on an honest short title
    assert not vague.semantic.measured and "too little" in vague.semantic.reason
    assert vague.semantic.penalty_threshold is None
    titled = await measure_rationale(case_from_files(change["files"], "Retry failed webhook deliveries", "",
                                                     commits), rubric, embedder)
    assert titled.semantic.measured and titled.semantic.intent_sources == ("title",)


async def test_nothing_to_compare_is_not_measured_with_a_reason(embedder, rubric):
    no_intent = await measure_rationale(case_from_files({"a.py": "def f():\n    return 1\n"}), rubric, embedder)
    assert not no_intent.semantic.measured and "say too little" in no_intent.semantic.reason
    assert no_intent.evidence[0].kind == "semantic-not-measured"
    only_echo = await measure_rationale(
        case_from_files({"a.py": "# Rename the helper module to something clearer\n"},
                        "Rename the helper module to something clearer"), rubric, embedder)
    assert not only_echo.semantic.measured and "repeats its own description" in only_echo.semantic.reason


async def test_five_thousand_line_diff_stays_within_the_chunk_cap(embedder, rubric):
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
    assert report.semantic.measured and report.semantic.chunks == cap
    capped = by_id(report, "semantic.chunk-cap")
    assert capped is not None and capped.facts["chunks_total"] >= 1000 and capped.facts["chunks_embedded"] == cap
    assert f"the {cap} that share most words with the intent" in capped.summary
    assert report.semantic.score >= rubric.intent.threshold


async def test_one_relevant_function_is_not_drowned_by_a_large_unrelated_change(embedder, rubric):
    change = BY_ID["luhn-card-check"]
    noise = {f"vendor/table_{i}.py": f"ROWS_{i} = [{', '.join(str(j) for j in range(i, i + 40))}]\n"
             for i in range(30)}
    case = case_from_files({**noise, **change["files"]}, change["title"], change["body"])
    report = await measure_rationale(case, rubric, embedder)
    assert report.semantic.score >= rubric.intent.threshold
    assert by_id(report, "semantic.rationale").facts["best_chunks"][0]["location"].startswith("payments/cards.py")


def pad(text: str, description: str) -> str:
    comment = "".join(f"# {line}\n" for line in textwrap.wrap(description, 70))
    return comment * 3 + text + f'\n\nDESCRIPTION = """{description}"""\n'


@pytest.mark.parametrize(("code_id", "description_id"), [
    ("login-rate-limit", "login-rate-limit"),            # honest code, padded
    ("dark-mode-toggle", "dark-mode-toggle"),
    ("login-rate-limit", "password-reset-expiry"),       # code for something else, padded with the description
    ("weekly-digest", "webhook-retry-backoff"),
])
async def test_padding_with_the_description_does_not_raise_r(embedder, rubric, code_id, description_id):
    code, desc = BY_ID[code_id], BY_ID[description_id]
    ((path, text),) = code["files"].items()
    honest = await measure_rationale(case_from_files(code["files"], desc["title"], desc["body"]), rubric, embedder)
    for description in (desc["body"], desc["title"] + ". " + desc["body"]):
        padded = await measure_rationale(case_from_files({path: pad(text, description)}, desc["title"],
                                                         desc["body"]), rubric, embedder)
        assert padded.semantic.score <= honest.semantic.score + PADDING_MARGIN
        echo = by_id(padded, "semantic.intent-echo")
        assert echo is not None and echo.facts["words_removed"] > 0
    if code_id != description_id:
        assert padded.semantic.score < rubric.intent.threshold


async def test_labelled_set_separates_matching_from_mismatched(embedder, rubric):
    scores = await score_labelled_set(embedder, rubric)
    assert len(scores.matching_raw) >= 20 and len(scores.mismatched_raw) >= 20
    assert scores.auc() >= 0.97
    threshold = rubric.intent.threshold
    false_positives = sum(1 for s in scores.matching_score if s < threshold)
    caught = sum(1 for s in scores.mismatched_score if s < threshold)
    assert false_positives <= 1
    assert caught >= 0.9 * len(scores.mismatched_score)


async def test_a_huge_description_is_cut_to_the_word_budget(embedder, rubric):
    change = BY_ID["article-slugs"]
    body = change["body"] + " " + "Unrelated chatter about the weather and lunch plans. " * 2000
    report = await measure_rationale(case_from_files(change["files"], change["title"], body), rubric, embedder)
    facts = by_id(report, "semantic.rationale").facts
    assert report.semantic.measured and facts["intent_truncated_to"] == rubric.rationale.max_intent_words
    assert facts["intent_words"] > rubric.rationale.max_intent_words


async def test_a_lying_title_over_an_empty_body_is_a_mismatch(embedder, rubric):
    # the change's commit messages would describe it faithfully; they are not intent, so the title is on its own
    change = BY_ID["webhook-retry-backoff"]
    lying = await measure_rationale(case_from_files(change["files"], "Fix typo in README", "",
                                                    ["Retry webhook deliveries with exponential backoff"]),
                                    rubric, embedder)
    assert lying.semantic.anchors == ("README",) and lying.semantic.anchors_found == ()
    mismatch = by_id(lying, "semantic.intent-mismatch")
    assert mismatch is not None and "names `README` but the change does not touch it" in mismatch.summary


async def test_code_pasted_into_the_description_does_not_lift_r(embedder, rubric):
    code, desc = BY_ID["weekly-digest"], BY_ID["webhook-retry-backoff"]
    ((_path, text),) = code["files"].items()
    plain = await measure_rationale(case_from_files(code["files"], desc["title"], desc["body"]), rubric, embedder)
    pasted_body = desc["body"] + "\n\n<details><summary>diff</summary>\n\n```python\n" + text + "\n```\n</details>\n"
    pasted = await measure_rationale(case_from_files(code["files"], desc["title"], pasted_body), rubric, embedder)
    assert pasted.semantic.raw_similarity == plain.semantic.raw_similarity
    assert by_id(pasted, "semantic.intent-mismatch") is not None


PARAPHRASE = '''"""Outbound hooks used to vanish after one failed attempt; now each delivery is attempted again, waiting
twice as long every time with a random spread, up to six tries, and a delivery that never succeeds is flagged
as failed so the dashboard lists it."""
# Webhook deliveries that fail are retried with exponential backoff and jitter.
'''
SALAD = "# webhook retry backoff exponential jitter delivery failed dashboard outgoing attempts retries\n"


@pytest.mark.parametrize("prose", [PARAPHRASE, SALAD * 6], ids=["paraphrased comments", "keyword salad"])
async def test_comments_do_not_make_an_unrelated_change_read_like_its_description(embedder, rubric, prose):
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
    assert gamed.semantic.score < gamed.semantic.penalty_threshold
    lift = by_id(gamed, "semantic.prose-lift")  # the comments lifted R over the threshold: said, and R is the code's
    assert lift is not None and lift.facts["with_prose"] >= lift.facts["threshold"] > lift.facts["code_only"]
    assert lift.facts["code_only"] == gamed.semantic.score


async def test_an_honest_change_keeps_its_comments(embedder, rubric):
    """Comments explaining an honest change are no reason for a penalty: the description matches the code."""
    change = BY_ID["webhook-retry-backoff"]
    ((path, text),) = change["files"].items()
    commented = {path: PARAPHRASE + text}
    honest = await measure_rationale(case_from_files(commented, change["title"], change["body"]), rubric, embedder)
    assert by_id(honest, "semantic.intent-mismatch") is None and by_id(honest, "semantic.prose-lift") is None


async def test_a_lying_title_over_an_accurate_body_is_named(embedder, rubric):
    change = BY_ID["webhook-retry-backoff"]
    lying = await measure_rationale(case_from_files(change["files"], "Fix typo in README", change["body"]),
                                    rubric, embedder)
    title = by_id(lying, "semantic.title-mismatch")
    assert title is not None and title.severity == "medium" and "`README`" in title.summary
    honest = await measure_rationale(case_from_files(change["files"], change["title"], change["body"]),
                                     rubric, embedder)
    assert by_id(honest, "semantic.title-mismatch") is None
