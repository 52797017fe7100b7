"""The pure half of R: intent text, code text, identifier splitting, chunking, echo stripping, aggregation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks import rationale, rationale_vectors
from checks.diff import parse_diff
from checks.models import Case, ChangedFile
from rubric import Rubric, RubricError, build_rubric, load_rubric, merge_overrides, read_document
from tests.rationale.cases import case_from_files, new_file_diff


def test_identifiers_split_into_words() -> None:
    assert rationale.split_identifier("parseHTTPResponse_v2") == ["parse", "http", "response", "v", "2"]
    assert rationale.split_identifier("MAX_RETRY_COUNT") == ["max", "retry", "count"]
    assert rationale.code_words("def total_price(self, cartItems):  # sum the cart") == [
        "total", "price", "cart", "items", "sum", "cart"]


def test_markdown_is_stripped_to_prose() -> None:
    body = ("Fixes the `page_count` bug ![screenshot](https://x/y.png)\n<!-- template: describe -->\n"
            "See [the docs](https://example.com/docs) and <b>bold</b> **text**.")
    cleaned = rationale.clean_markdown(body)
    assert "screenshot" not in cleaned and "template" not in cleaned and "https" not in cleaned
    assert "page count" in cleaned and "the docs" in cleaned and "<b>" not in cleaned and "*" not in cleaned


def test_intent_sources_never_include_commit_messages() -> None:
    files = {"a.py": "x = 1\n"}
    full = rationale.build_intent(case_from_files(files, "Title here", "Body text", ["commit one"],
                                                  ["Issue about things"]))
    assert full.sources == ("title", "body", "linked-issue-1")
    assert "commit one" not in full.text
    empty = rationale.build_intent(case_from_files(files, "Title here", "  <!-- only a template -->  ",
                                                   ["Add caching", "Add caching", "Merge branch 'x'"]))
    assert empty.sources == ("title",) and "caching" not in empty.text


def test_code_blocks_details_and_pasted_code_are_not_intent() -> None:
    body = ("Adds a retry for webhook deliveries.\n\n```python\ndef exfiltrate(secret):\n    send(secret)\n```\n"
            "<details><summary>code</summary>\n\nupload_all_tokens_to_remote()\n</details>\n"
            "Then:\n    result = compute_totals(invoice_lines)\n")
    added = rationale.code_words("result = compute_totals(invoice_lines)")
    intent = rationale.build_intent(case_from_files({"a.py": "x = 1\n"}, "Retry webhooks", body), added, 3)
    assert "exfiltrate" not in intent.text and "upload" not in intent.text and "compute" not in intent.text
    assert "retry for webhook deliveries" in intent.text
    assert "body lines copied from the diff" in intent.dropped


def test_anchors_are_the_code_an_intent_names() -> None:
    anchors = rationale.intent_anchors("Fix `naturalsize` for floats in humanize.filesize; see https://x.org/a_b "
                                       "and _DescriptorBase, cache_key(), ZB to YB, `index.rst`")
    assert set(anchors) == {"naturalsize", "filesize", "_descriptorbase", "cache_key", "ZB", "YB", "index.rst"}
    changed = "+    suffixes = ('KB', 'MB', 'ZB', 'YB')\ndocs/index.rst"
    assert rationale.touches("YB", changed) and rationale.touches("index.rst", changed)
    assert not rationale.touches("KiB", changed) and not rationale.touches("B", changed + " B")


def test_a_change_touches_the_scopes_its_lines_are_in_not_a_header_s_parameters() -> None:
    head = ("class ParseError(ValueError):\n    pass\n\n\ndef load(fp, *, parse_float=float):\n"
            "    if 'b' not in fp.mode:\n        raise TypeError('open the file in binary mode')\n"
            "    return fp.read()\n")
    # git names the line above the hunk's context (the class), and a header's parameters are not code changed
    diff = ("diff --git a/p.py b/p.py\n--- a/p.py\n+++ b/p.py\n@@ -3,3 +3,5 @@ class ParseError(ValueError):\n"
            " \n def load(fp, *, parse_float=float):\n+    if 'b' not in fp.mode:\n"
            "+        raise TypeError('open the file in binary mode')\n     return fp.read()\n"
            "diff --git a/q.c b/q.c\n--- a/q.c\n+++ b/q.c\n@@ -1,2 +1,1 @@ int parse_value(char *parse_hint)\n"
            "-    old();\n")
    case = Case(base_sha="0" * 40, head_sha="1" * 40, title="t", diff=diff,
                files=(ChangedFile(path="p.py", status="modified", added_lines=(6, 7), content=head),
                       ChangedFile(path="q.c", status="modified", removed_count=1)))
    changed = rationale.change_text(case)
    assert rationale.touches("load", changed) and rationale.touches("parse_value", changed)
    assert not rationale.touches("ParseError", changed) and not rationale.touches("parse_float", changed)
    assert not rationale.touches("parse_hint", changed)


def test_files_most_changes_touch_do_not_single_one_out() -> None:
    assert not rationale.specific("index.rst") and not rationale.specific("docs/conf.py")
    assert not rationale.specific("setup.cfg") and not rationale.specific("CHANGES.rst")
    assert rationale.specific("filesize.py") and rationale.specific("cache_key")


def test_python_chunks_follow_the_enclosing_function(rubric: Rubric) -> None:
    base = "def untouched():\n    return 1\n\n\ndef shipping_cost(weight):\n    \"\"\"Price of a parcel.\"\"\"\n"
    head = base + "    return weight * 2\n"
    diff = ("diff --git a/ship.py b/ship.py\n--- a/ship.py\n+++ b/ship.py\n@@ -6,0 +7,1 @@\n"
            "+    return weight * 2\n")
    case = Case(base_sha="0" * 40, head_sha="1" * 40, title="t", diff=diff,
                files=(ChangedFile(path="ship.py", status="modified", added_lines=(7,), content=head),))
    code = rationale.build_code_chunks(case, rubric.model_copy(update={"rationale": rubric.rationale.model_copy(
        update={"min_chunk_words": 1})}), "t")
    (chunk,) = code.chunks
    assert chunk.label == "ship.py:shipping_cost" and chunk.location == "ship.py:7"
    # only the added line's words plus the function's name and docstring as context, never the untouched code
    assert chunk.words == ("weight",)
    assert "untouched" not in chunk.text and chunk.text == "ship shipping cost price of parcel weight"


def test_long_streams_are_windowed_within_the_limit(rubric: Rubric) -> None:
    text = "\n".join(f"value_{i} = compute_item_{i}(source)" for i in range(400))
    code = rationale.build_code_chunks(case_from_files({"gen.py": text}), rubric, "nothing")
    assert code.total_chunks > 1
    assert all(c.size <= rubric.rationale.window_words for c in code.chunks)


def test_echo_of_the_description_is_removed(rubric: Rubric) -> None:
    body = "Retry failed webhook deliveries with exponential backoff and jitter"
    text = f"# {body}\n# {body}\ndef send(url):\n    return post(url)\n"
    code = rationale.build_code_chunks(case_from_files({"h.py": text}), rubric, body)
    assert code.echo_words_removed == 14  # 7 meaningful words, twice
    assert [c.text for c in code.chunks] == ["send send url post url"]


def test_cap_keeps_a_deterministic_sample(rubric: Rubric) -> None:
    files = {f"m{i}.py": f"def handler_{i}(request):\n    return render_page_{i}(request, template_{i})\n"
             for i in range(rubric.rationale.max_chunks + 20)}
    first = rationale.build_code_chunks(case_from_files(files), rubric, "x")
    second = rationale.build_code_chunks(case_from_files(dict(reversed(list(files.items())))), rubric, "x")
    assert first.total_chunks == rubric.rationale.max_chunks + 20
    assert len(first.chunks) == rubric.rationale.max_chunks and first.chunks == second.chunks


def test_aggregate_is_size_weighted_top_k() -> None:
    assert rationale_vectors.aggregate([0.9, 0.1, 0.5, 0.2], [10, 100, 30, 5], top_k=2) == pytest.approx(
        (0.9 * 10 + 0.5 * 30) / 40)
    assert rationale_vectors.aggregate([0.3], [0], top_k=3) == pytest.approx(0.3)


def test_new_file_diff_round_trips_through_the_diff_parser() -> None:
    (delta,) = parse_diff(new_file_diff("x.py", "a\nb\n"))
    assert delta.added_lines == (1, 2) and delta.added_text == ("a", "b")


@pytest.mark.parametrize(("field", "value"), [("top_k", 0), ("window_words", 400), ("max_chunks", 0),
                                              ("echo_ngram", 1)])
def test_rubric_rejects_bad_rationale_constants(field: str, value: int) -> None:
    with pytest.raises(RubricError) as err:
        build_rubric(merge_overrides(read_document(), {"rationale": {field: value}}))
    assert err.value.field == f"rationale.{field}"


def test_rubric_loads_the_new_constants() -> None:
    rules = load_rubric().rationale
    assert rules.top_k >= 1 and rules.window_words <= 180 and rules.max_chunks >= 1
    assert rules.calibration.raw_low < rules.calibration.raw_high


def test_hostile_markdown_is_cleaned_in_linear_time() -> None:
    # quadratic regexes would take minutes on these; bounded ones finish at once
    for body in ("[" * 60_000, "![" * 30_000, "<a" * 30_000, "[x](" * 15_000):
        assert isinstance(rationale.clean_markdown(body), str)


def test_intent_is_limited_to_the_rubric_word_budget() -> None:
    text, cut = rationale.limit_words("word " * 5000, 1024)
    assert cut and len(text.split()) == 1024
    assert rationale.limit_words("a b c", 1024) == ("a b c", False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("abcXYZ_ (#)=.\n09"), max_size=80), min_size=1, max_size=60))
def test_chunks_respect_the_window_and_are_deterministic(lines: list[str]) -> None:
    rubric = load_rubric()
    text = "\n".join(lines)
    case = case_from_files({"pkg/mod.py": text, "web/app.js": text})
    first = rationale.build_code_chunks(case, rubric, "intent words here")
    again = rationale.build_code_chunks(case, rubric, "intent words here")
    assert first == again
    assert len(first.chunks) <= rubric.rationale.max_chunks
    assert all(0 < c.size <= rubric.rationale.window_words for c in first.chunks)
    assert all(c.start_line <= c.end_line for c in first.chunks)


def test_paths_the_caller_dropped_are_not_read_from_the_diff(rubric: Rubric) -> None:
    case = case_from_files({"src/app.py": "def run_server(port):\n    return serve_forever(port)\n",
                            "vendor/lib.py": "def vendored_helper():\n    return other_thing()\n"})
    kept = case.model_copy(update={"files": tuple(f for f in case.files if f.path == "src/app.py")})
    code = rationale.build_code_chunks(kept, rubric, "x")
    assert {c.path for c in code.chunks} == {"src/app.py"} and code.files == 1


def test_a_typo_sized_edit_adds_few_new_words() -> None:
    from checks.models import Case, ChangedFile

    diff = ("diff --git a/docs/a.rst b/docs/a.rst\n--- a/docs/a.rst\n+++ b/docs/a.rst\n@@ -1,2 +1,2 @@\n"
            "-By overrding the expire method, a subclass will be able to track expired items\n"
            "+By overriding the expire method, a subclass will be able to track expired items\n"
            " context\n")
    case = Case(base_sha="a" * 40, head_sha="b" * 40, diff=diff,
                files=(ChangedFile(path="docs/a.rst", status="modified", added_lines=(1,)),))
    assert rationale.new_words(case) == 1  # "overriding": every other word was there before
