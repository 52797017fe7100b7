"""The review's line comments: located in the diff, grouped, fingerprinted, synced across pushes without re-posts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checks.config import parse_repo_config
from checks.errors import ConfigError
from checks.line_comments import (
    LineComment,
    fingerprint,
    plan_line_comments,
    plan_sync,
    read_posted,
    unmeasured,
    wants_review,
)
from checks.models import Evaluation, Evidence, Location, TestRunResult

GOLDEN = Path(__file__).parent / "golden"
RUN = ("import subprocess\n\n\ndef run(ref):\n"
       "    return subprocess.check_output(f\"git log {ref}\", shell=True)\n")
TESTS = ("import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_n(n):\n    assert n < 2\n\n\n"
         "@pytest.mark.skip(reason='later')\ndef test_later():\n    assert False\n")


def _evaluation(*evidence: Evidence, verdict: str = "fail") -> Evaluation:
    data: dict[str, Any] = json.loads((GOLDEN / "shell.json").read_text())
    golden = Evaluation.model_validate(data)
    return golden.model_copy(update={"evidence": tuple(evidence), "verdict": verdict})


def _shell(line: int = 5) -> Evidence:
    return Evidence(id=f"repo.call:{line}", detective="repo_investigator", kind="constraint-violation",
                    summary="subprocess.check_output: subprocess with shell=True runs a shell command",
                    location=Location(path="calc/run.py", line=line), severity="critical", cwe="CWE-78",
                    facts={"rule": "call:subprocess.*"})


def _failing(param: str) -> Evidence:
    return Evidence(id=f"tests.new:{param}", detective="test_runner", kind="test-new-failing",
                    summary="a new test fails", location=Location(path="tests/test_n.py", line=6), severity="high",
                    facts={"name": f"tests/test_n.py::test_n[{param}]", "message": "assert 2 < 2"})


def _skip() -> Evidence:
    return Evidence(id="harness.skip", detective="harness", kind="harness-change",
                    summary="tests/test_n.py:9 adds a skip or xfail to an existing test file",
                    location=Location(path="tests/test_n.py", line=9), severity="medium",
                    facts={"mechanism": "skip"})


SOURCES = {"calc/run.py": RUN, "tests/test_n.py": TESTS}
CHANGED = {"calc/run.py": {1, 2, 3, 4, 5}, "tests/test_n.py": set(range(1, 12))}


def test_a_finding_on_a_changed_line_gets_a_comment_with_a_precise_hint_and_a_committable_suggestion() -> None:
    [comment] = plan_line_comments(_evaluation(_shell()), CHANGED, SOURCES)
    assert (comment.path, comment.line) == ("calc/run.py", 5)
    assert "list of arguments" in comment.body and "shell=True" in comment.body
    assert "```suggestion\n    return subprocess.check_output([\"git\", \"log\", ref])\n```" in comment.body
    assert f"<!-- logomesh:finding {comment.fingerprint} constraint-violation -->" in comment.body


def test_a_finding_outside_the_changed_lines_is_no_line_comment() -> None:
    assert plan_line_comments(_evaluation(_shell()), {"calc/run.py": {1, 2}}, SOURCES) == []
    assert plan_line_comments(_evaluation(_shell()), {}, SOURCES) == []


def test_a_parametrized_failure_is_one_comment_with_its_parameter_ids() -> None:
    comments = plan_line_comments(_evaluation(_failing("2"), _failing("3"), _shell()), CHANGED, SOURCES)
    assert [c.path for c in comments] == ["calc/run.py", "tests/test_n.py"]  # worst first
    body = comments[1].body
    assert body.count("::test_n") == 1 and "parameters `2`, `3`" in body and "assert 2 \\< 2" in body
    assert "suggestion" not in body  # a failing test has no certain rewrite


def test_a_skip_the_change_added_is_suggested_away() -> None:
    [comment] = plan_line_comments(_evaluation(_skip()), CHANGED, SOURCES)
    assert comment.line == 9 and "```suggestion\n\n```" in comment.body and "Remove the skip" in comment.body


def test_pr_text_in_a_comment_is_inert() -> None:
    hostile = _failing("x").model_copy(update={"facts": {
        "name": "tests/test_n.py::test_n[@octocat]", "message": "![x](https://evil.example/p.png) <img src=x>"}})
    [comment] = plan_line_comments(_evaluation(hostile), CHANGED, SOURCES)
    assert "<img" not in comment.body.replace("\\<", "") and "](" not in comment.body.replace("\\](", "")


def test_the_fingerprint_follows_the_finding_not_its_line_number() -> None:
    moved = {"calc/run.py": "\n\n" + RUN}
    first = plan_line_comments(_evaluation(_shell(5)), CHANGED, SOURCES)[0]
    again = plan_line_comments(_evaluation(_shell(7)), {"calc/run.py": {7}}, moved)[0]
    assert first.fingerprint == again.fingerprint and again.line == 7
    assert fingerprint("constraint-violation:CWE-78", "calc/run.py", "  a  b ") == \
        fingerprint("constraint-violation:CWE-78", "calc/run.py", "a b")
    assert fingerprint("r", "a.py", "x") != fingerprint("r", "b.py", "x")


def _posted(comment: LineComment, comment_id: int) -> Any:
    posted = read_posted(comment_id, comment.body)
    assert posted is not None
    return posted


def test_the_next_push_posts_only_new_findings_and_marks_gone_ones_fixed() -> None:
    shell = plan_line_comments(_evaluation(_shell()), CHANGED, SOURCES)[0]
    skip = plan_line_comments(_evaluation(_skip()), CHANGED, SOURCES)[0]
    posted = [_posted(shell, 1), _posted(skip, 2)]
    # next push: the shell call is still there, the skip is gone, a failing test is new
    now = plan_line_comments(_evaluation(_shell(), _failing("2")), CHANGED, SOURCES)
    plan = plan_sync(now, posted, "f" * 40, post_new=True)
    assert [c.path for c in plan.post] == ["tests/test_n.py"]
    assert [(i, b.split("\n")[0]) for i, b in plan.edit] == [(2, "✅ Fixed in ffffffffffff: ~~" +
                                                              skip.body.split("\n")[0] + "~~")]
    fixed = read_posted(2, plan.edit[0][1])
    assert fixed is not None and fixed.fixed and fixed.fingerprint == skip.fingerprint
    assert "suggestion" not in plan.edit[0][1]
    # and the push after: the fixed comment is left alone, nothing is posted twice
    again = plan_sync(now, [posted[0], fixed, _posted(now[1], 3)], "e" * 40, post_new=True)
    assert again.post == [] and again.edit == []


def test_a_finding_still_there_in_new_words_is_edited_in_place() -> None:
    one = plan_line_comments(_evaluation(_failing("2")), CHANGED, SOURCES)[0]
    two = plan_line_comments(_evaluation(_failing("2"), _failing("3")), CHANGED, SOURCES)[0]
    assert one.fingerprint == two.fingerprint
    plan = plan_sync([two], [_posted(one, 7)], "a" * 40, post_new=True)
    assert plan.post == [] and plan.edit == [(7, two.body)]


def test_no_new_comments_unless_the_mode_wants_them_but_fixed_ones_are_still_marked() -> None:
    shell = plan_line_comments(_evaluation(_shell()), CHANGED, SOURCES)[0]
    plan = plan_sync([], [_posted(shell, 1)], "b" * 40, post_new=False)
    assert plan.post == [] and len(plan.edit) == 1
    assert plan_sync([shell], [], "b" * 40, post_new=False).post == []
    assert wants_review("fail", "fail") and not wants_review("fail", "neutral")
    assert wants_review("always", "pass") and not wants_review("never", "fail")


def test_a_marker_written_by_hand_elsewhere_is_not_mistaken_for_a_finding() -> None:
    assert read_posted(1, "see <!-- logomesh:finding nothex -->") is None
    assert read_posted(1, "plain comment") is None


def test_the_review_mode_is_read_from_the_base_config() -> None:
    config = parse_repo_config("version: 1\nreview_comments: always\nreview_request_changes: true\n")
    assert config.review_comments == "always" and config.review_request_changes is True
    assert parse_repo_config(None).review_comments is None  # the App's setting decides
    with pytest.raises(ConfigError, match="review_comments"):
        parse_repo_config("version: 1\nreview_comments: sometimes\n")


def test_a_failing_test_is_not_marked_fixed_by_a_review_that_could_not_run_the_tests() -> None:
    failing = plan_line_comments(_evaluation(_failing("2")), CHANGED, SOURCES)[0]
    posted = [_posted(failing, 4)]
    not_run = _evaluation(_shell())
    assert not_run.tests is None or not_run.tests.status != "ran"
    assert plan_sync([], posted, "c" * 40, post_new=True, unseen=unmeasured(not_run)).edit == []
    ran = not_run.model_copy(update={"tests": TestRunResult(status="ran", collected=1, passed=1)})
    assert [i for i, _ in plan_sync([], posted, "c" * 40, post_new=True, unseen=unmeasured(ran)).edit] == [4]
