"""The report a PR author reads: rendered as GitHub renders it (cmark-gfm, GitHub's stylesheet, headless Chromium).

The fixtures under ``tests/fixtures/reports/`` are real Evaluations of the bundled example: ``pass.json`` the
example PR, ``fail.json`` a change of its tax rate that breaks an existing test (``logomesh review … --format
json`` with the Docker sandbox).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from checks.deciding import RULES
from checks.fixes import what_to_fix
from checks.models import Evaluation, Evidence, JudicialOpinion, Location
from checks.render import Links, code, render_markdown, render_text, render_title
from tests.browser import gfm_to_html, github_page, measure, parse_html, screenshot

REPORTS = Path(__file__).parent.parent / "fixtures" / "reports"
GOLDEN = Path(__file__).parent / "golden"
LINKS = Links(changed={"shop/cart.py": {5}}, dbom_url="https://logomesh.example/dbom/abc.html")


def load(name: str, directory: Path = REPORTS) -> Evaluation:
    e = Evaluation.model_validate_json((directory / f"{name}.json").read_text(encoding="utf-8"))
    return e.model_copy(update={"inputs": e.inputs.model_copy(update={"repo": "acme/shop", "pr_number": 7})})


def html_of(e: Evaluation, place: str = "comment", links: Links | None = LINKS) -> str:
    return gfm_to_html(render_markdown(e, links=links, place=place))  # type: ignore[arg-type]


def test_a_failing_comment_leads_with_the_failing_test_its_location_and_message() -> None:
    dom = parse_html(html_of(load("fail")))
    heading = dom.find_all("h3")[0].text()
    assert "Fail · a test that passed before fails now" in heading  # the rule decided, not the score
    first = dom.find_all("li")[0]
    text = first.text()
    assert "passed before this change fails now" in text
    assert "tests/test_cart.py:8" in text and "tests/test_cart.py::test_total_includes_tax" in text
    assert "assert 3.75 == 3.6" in text and "/sandbox/repo" not in text
    link = first.find_all("a")[0]
    assert link.attrs["href"] == ("https://github.com/acme/shop/blob/88a96d559e4884b7a5971f48214e97a8a6b1b903/"
                                  "tests/test_cart.py#L8")
    assert "Fix the code" in text  # the hint


def test_details_are_collapsed_and_the_comment_has_no_escapes_in_code_and_no_empty_table() -> None:
    for name in ("pass", "fail"):
        dom = parse_html(html_of(load(name)))
        details = dom.find_all("details")
        assert len(details) == 1 and "open" not in details[0].attrs
        judges = [t for t in dom.find_all("table") if "Ruling" in t.text()]
        assert judges and all("details" in t.ancestors() for t in judges)
        for span in dom.find_all("code"):
            assert "\\" not in span.text(), span.text()
        for table in dom.find_all("table"):
            assert table.find_all("tbody") and table.find_all("tbody")[0].find_all("tr")
        assert "PASS" not in dom.text()  # a judge's PASS means "no veto": never shown as a verdict


def test_a_clean_pass_says_nothing_blocks_it_and_has_no_evidence_table_when_nothing_is_notable() -> None:
    e = load("pass")
    quiet = e.model_copy(update={"evidence": tuple(ev for ev in e.evidence if ev.severity == "info")})
    dom = parse_html(html_of(quiet))
    assert "Nothing blocks this change." in dom.text()
    assert not [t for t in dom.find_all("table") if "Severity" in t.text()]
    assert "Evidence" not in dom.text()


def test_evidence_is_sorted_worst_first_and_locations_of_added_lines_link_into_the_diff() -> None:
    dom = parse_html(html_of(load("fail"), place="check"))
    table = next(t for t in dom.find_all("table") if "Severity" in t.text())
    assert "details" not in table.ancestors()  # the check run carries the evidence open
    order = {"critical": 4, "high": 3, "medium": 2, "low": 1}
    severities = [row.find_all("td")[0].text() for row in table.find_all("tbody")[0].find_all("tr")]
    assert severities == sorted(severities, key=lambda s: -order[s])
    anchor = hashlib.sha256(b"shop/cart.py").hexdigest()
    hrefs = [a.attrs.get("href") for a in table.find_all("a")]
    assert f"https://github.com/acme/shop/pull/7/files#diff-{anchor}R5" in hrefs


def test_without_a_repository_nothing_is_linked() -> None:
    e = load("fail")
    local = e.model_copy(update={"inputs": e.inputs.model_copy(update={"repo": "local", "pr_number": None})})
    dom = parse_html(html_of(local, links=None))
    assert not [a for a in dom.find_all("a") if "github.com/" in (a.attrs.get("href") or "")
                and "logomesh/logomesh" not in (a.attrs.get("href") or "")]


def test_the_check_title_names_the_deciding_rule_else_the_score_and_the_first_fix() -> None:
    assert render_title(load("fail")) == "Fail · a test that passed before fails now · 2 to fix"
    assert render_title(load("pass")) == "Pass · CIS 0.88"
    held = load("pass").model_copy(update={"verdict": "neutral", "evidence": (), "opinions": ()})
    assert render_title(held).startswith("Neutral · CIS 0.88 · The score is held down by")


def test_a_verdict_a_rule_decided_is_named_above_a_legend_that_says_rules_come_first() -> None:
    """A failing verdict whose CIS sits in the pass band reads as the rule's doing, not as arithmetic."""
    e = load("fail").model_copy(update={"cis_score": 0.73})
    dom = parse_html(html_of(e))
    assert dom.find_all("h3")[0].text().endswith("Fail · a test that passed before fails now · 2 to fix")
    legend = dom.find_all("sub")[0].text()
    assert "pass ≥ 0.70, fail < 0.50" in legend and "Named rules decide before the score" in legend
    assert "decided by the rule: a test that passed before fails now" in render_text(e)


def test_heights_as_a_pr_author_sees_them() -> None:
    """Rendered at GitHub's comment width in a 1280 px wide window: a pass under 600 px, a failure under 900."""
    pages = {name: github_page(html_of(load(name))) for name in ("pass", "fail")}
    pages["shell"] = github_page(html_of(load("shell", GOLDEN)))
    heights = {name: measure(page)["height"] for name, page in pages.items()}
    for name, page in pages.items():
        screenshot(page, f"comment-{name}")
    assert heights["pass"] < 600, heights
    assert heights["fail"] < 900 and heights["shell"] < 900, heights


def _hostile() -> Evaluation:
    e = load("fail")
    name = "tests/t`x`.py::test_`@octocat` | <img src=x onerror=alert(1)> #12 www.evil.example"
    hostile = Evidence(id="tests.regressed:x", detective="tests", kind="test-regressed", severity="critical",
                       summary=f"regressed: {name}", location=Location(path="src/a|b`c`.py", line=3),
                       facts={"name": name, "message": "AssertionError: `@octocat` [x](https://evil.example) |"})
    kill = JudicialOpinion(judge="prosecutor", criterion_id="security", score=1, verdict="KILL",
                           argument="<script>alert(1)</script> @octocat see https://evil.example")
    return e.model_copy(update={"evidence": (hostile, *e.evidence), "opinions": (*e.opinions, kill)})


@pytest.mark.parametrize("place", ["comment", "check"])
def test_pr_text_in_code_spans_and_tables_stays_inert(place: str) -> None:
    html = html_of(_hostile(), place=place)
    dom = parse_html(html)
    assert not dom.find_all("img") and not dom.find_all("script")
    assert not [a for a in dom.find_all("a") if "evil" in (a.attrs.get("href") or "")]
    codes = [c.text() for c in dom.find_all("code")]
    assert "tests/t`x`.py::test_`@octocat` | <img src=x onerror=alert(1)> #12 www.evil.example" in codes
    for table in dom.find_all("table"):  # a "|" in a path never splits a cell
        widths = {len(row.find_all("td")) for row in table.find_all("tr") if row.find_all("td")}
        assert len(widths) <= 1, widths
    assert "@octocat" not in re.sub(r"<code>.*?</code>", "", html)  # no live mention outside code


def test_code_spans_fence_backticks_and_never_escape() -> None:
    assert code("a_b") == "`a_b`"
    assert code("x`y") == "``x`y``"
    assert code("`z`") == "`` `z` ``"
    assert code("a|b", in_table=True) == "`a\\|b`"


def test_fixes_say_a_failing_test_once_and_a_veto_when_it_decided() -> None:
    e = load("fail")
    fixes = what_to_fix(e)
    assert [f.kind for f in fixes].count("test-regressed") == 1
    assert not [f for f in fixes if f.kind == "test-failure"]  # the same test, said by the comparison
    vetoed = _hostile().model_copy(update={"verdict_reasons": (*e.verdict_reasons,
                                                                "Rejection-first policy: KILL from prosecutor")})
    assert what_to_fix(vetoed)[0].kind == "veto"


def test_a_neutral_verdict_always_says_why() -> None:
    e = load("pass").model_copy(update={"verdict": "neutral", "evidence": (), "opinions": ()})
    fixes = what_to_fix(e)
    assert fixes and fixes[0].kind == "low-score"
    assert "What to fix" in render_markdown(e)


def test_text_output_lists_what_to_fix() -> None:
    text = render_text(load("fail"))
    assert "What to fix:" in text and "tests/test_cart.py:8" in text and "assert 3.75 == 3.6" in text


def _regressed(name: str, message: str) -> Evidence:
    return Evidence(id=f"tests.regressed:{name}", detective="tests", kind="test-regressed", severity="critical",
                    summary=f"regressed: {name}", location=Location(path="tests/test_ops.py", line=12),
                    facts={"name": name, "message": message})


def banned_call_and_parametrized_failure() -> Evaluation:
    """The golden review of a change adding a shell call, whose parametrized test now fails four times."""
    e = load("shell", GOLDEN)
    failing = tuple(_regressed(f"tests/test_ops.py::test_div[{a}-{b}]", f"ZeroDivisionError: {a}/{b}")
                    for a, b in ((1, 0), (2, 0), (3, 0), (4, 0)))
    return e.model_copy(update={"evidence": (*failing, *e.evidence), "verdict": "fail", "verdict_reasons": (
        *e.verdict_reasons, "Rule of Regression: 4 test(s) passed at base and fail with this change (first: "
        "tests/test_ops.py::test_div[1-0])")})


def test_a_parametrized_test_failing_four_times_takes_one_slot_with_its_parameter_ids() -> None:
    e = banned_call_and_parametrized_failure()
    fixes = what_to_fix(e)
    regressed = [f for f in fixes if f.kind == "test-regressed"]
    assert len(regressed) == 1
    assert regressed[0].subject == "tests/test_ops.py::test_div[1-0, 2-0, 3-0, 4-0]"
    assert "4 parameter sets" in regressed[0].title and regressed[0].detail == "ZeroDivisionError: 1/0"
    shown = [f.kind for f in fixes[:5]]
    assert "constraint-violation" in shown and "veto" in shown  # neither pushed off the comment
    text = parse_html(html_of(e)).text()
    assert "test_div[1-0, 2-0, 3-0, 4-0]" in text and "more in" not in text


def test_every_named_rule_the_chief_justice_records_has_words_for_the_headline() -> None:
    """A rule added to the Chief Justice without words here would leave its verdict unexplained in the title."""
    source = (Path(__file__).resolve().parents[2] / "checks" / "chief_justice.py").read_text(encoding="utf-8")
    recorded = set(re.findall(r'f?"(Rule of (?:the )?[A-Z][A-Za-z-]*(?: [A-Z][A-Za-z-]*)*)', source))
    assert recorded, "no named rule found in checks/chief_justice.py"
    named = {rule.prefix.split(":")[0] for rule in RULES}
    assert recorded <= named, sorted(recorded - named)
    held = load("pass").model_copy(update={"verdict": "neutral", "verdict_reasons": (
        "CIS 0.8800 against pass ≥ 0.70, fail < 0.50",
        "Rule of Start-up Code: the change brings 1 piece(s) of start-up code into the test environment "
        "(first: sitecustomize.py (from lm_x-1.0.0))")})
    assert render_title(held).startswith("Neutral · a new dependency runs code at every interpreter start")
