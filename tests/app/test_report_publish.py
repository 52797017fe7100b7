"""What reaches GitHub: annotations one per problem, titled in words; the comment only when it is wanted.

Against the loopback fake GitHub, which validates every request against the official REST schemas.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.github import GitHubApp
from app.settings import Settings
from app.worker.publish import Publication, Publisher, Target, check_annotations, comment_wanted
from checks.config import parse_repo_config
from checks.errors import ConfigError
from checks.models import Evaluation, Evidence, Location
from checks.render import MARKER
from tests.app.conftest import INSTALLATION, PR, REPO
from tests.app.fakegithub import FakeGitHub

REPORTS = Path(__file__).parent.parent / "fixtures" / "reports"


def load(name: str) -> Evaluation:
    e = Evaluation.model_validate_json((REPORTS / f"{name}.json").read_text(encoding="utf-8"))
    return e.model_copy(update={"inputs": e.inputs.model_copy(update={"repo": REPO, "pr_number": PR})})


def test_a_failing_test_is_annotated_where_it_failed_with_its_message_in_words() -> None:
    notes = check_annotations(load("fail"), {"shop/cart.py": {5}})
    test_notes = [n for n in notes if n["path"] == "tests/test_cart.py"]
    assert len(test_notes) == 1  # the run and the comparison with the base name it: one annotation
    note = test_notes[0]
    assert note["start_line"] == 8 and note["annotation_level"] == "failure"
    assert note["title"] == "A test that passed before this change fails now"
    assert "tests/test_cart.py::test_total_includes_tax" in note["message"]
    assert "assert 3.75 == 3.6" in note["message"] and "Fix the code" in note["message"]
    mutant = [n for n in notes if n["path"] == "shop/cart.py"]  # a change no test notices, on its changed line
    assert mutant and mutant[0]["annotation_level"] == "notice" and "surviving" not in mutant[0]["title"].lower()


def test_two_findings_on_one_line_are_one_annotation_led_by_the_worst() -> None:
    e = load("pass")
    where = Location(path="shop/discounts.py", line=12)
    both = (Evidence(id="a", detective="repo", kind="constraint-violation", severity="high", location=where,
                     summary="eval: code built from a string is evaluated", cwe="CWE-95"),
            Evidence(id="b", detective="red", kind="red-finding", severity="critical", location=where,
                     summary="eval reached by the payload __import__('os')", cwe="CWE-95"))
    notes = check_annotations(e.model_copy(update={"evidence": (*e.evidence, *both)}), {"shop/discounts.py": {12}})
    on_line = [n for n in notes if (n["path"], n["start_line"]) == ("shop/discounts.py", 12)]
    assert len(on_line) == 1
    assert on_line[0]["title"] == "The red team exploited this code" and on_line[0]["annotation_level"] == "failure"
    assert "Also on this line: The change breaks a rule of this repository" in on_line[0]["message"]
    assert not any("constraint-violation" in n["title"] or ": " in n["title"] for n in notes)


@pytest.mark.parametrize(("mode", "verdict", "action"), [
    ("always", "pass", "post"), ("on-change", "fail", "post"), ("on-change", "neutral", "post"),
    ("on-change", "pass", "update"), ("never", "fail", "skip"),
])
def test_comment_modes(mode: str, verdict: str, action: str) -> None:
    assert comment_wanted(mode, verdict) == action


def test_the_repository_chooses_its_comment_mode_and_a_bad_one_is_named() -> None:
    assert parse_repo_config("comment: never\n").comment == "never"
    assert parse_repo_config(None).comment is None  # the App's setting then
    with pytest.raises(ConfigError, match="comment"):
        parse_repo_config("comment: sometimes\n")


async def test_on_change_a_first_pass_adds_no_comment_but_a_stale_comment_is_brought_up_to_date(
        settings: Settings, github: FakeGitHub) -> None:
    publisher = Publisher(GitHubApp(settings), "LogoMesh")
    target = Target(INSTALLATION, REPO, PR, "0" * 40)
    passed, failed = load("pass"), load("fail")

    assert await publisher.comment(target, Publication(1, passed, None, {}, comment="on-change")) is None
    assert github.comments == {}  # a clean pass is on the check run only

    first = await publisher.comment(target, Publication(1, failed, None, {}, comment="on-change"))
    assert first is not None and "What to fix" in github.comments[first]["body"]

    again = await publisher.comment(target, Publication(1, passed, None, {}, comment="on-change"))
    assert again == first and len(github.comments) == 1  # the earlier fail is never left standing
    assert MARKER in github.comments[first]["body"] and "Nothing blocks this change" in github.comments[first]["body"]

    assert await publisher.comment(target, Publication(1, failed, None, {}, comment="never")) is None
    assert "Nothing blocks this change" in github.comments[first]["body"]  # never: not touched


async def test_always_comments_on_a_pass_with_links_into_the_pr(settings: Settings, github: FakeGitHub) -> None:
    publisher = Publisher(GitHubApp(settings), "LogoMesh", web_url="https://ghe.example")
    target = Target(INSTALLATION, REPO, PR, "0" * 40)
    made = await publisher.comment(target, Publication(1, load("fail"), "https://lm.test/dbom/x.html",
                                                       {"shop/cart.py": {5}}, comment="always"))
    assert made is not None
    body = github.comments[made]["body"]
    assert f"https://ghe.example/{REPO}/pull/{PR}/files#diff-" in body and "https://lm.test/dbom/x.html" in body
    assert "/recheck" in body
