"""What a PR author sees first, as GitHub renders the comment (cmark-gfm, GitHub's stylesheet, headless Chromium):
on six kinds of review, the first 400 px show the verdict, the rule that decided it and the first thing to fix
with its file:line; no internal path is shown anywhere; the comment with its details closed is at most 600 px."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checks.deciding import deciding_rule
from checks.fixes import what_to_fix
from checks.models import Evaluation, Evidence, Location
from checks.render import VERDICT_WORD, render_markdown, render_text, render_title
from checks.report import review_report
from tests.browser import above_the_fold, github_page, measure, screenshot
from tests.core.test_report import GOLDEN, banned_call_and_parametrized_failure, html_of, load

INTERNAL = ("/opt/logomesh", "/sandbox/", "/tmp/")
ENV_MESSAGE = ("ModuleNotFoundError: No module named 'requests' (imported by /sandbox/repo/shop/net.py:2 with "
               "/opt/logomesh/envs/project/bin/python, cache in /tmp/pytest-of-sandbox/pytest-0)")


def _score_reason(cis: float) -> str:
    return f"CIS {cis:.4f} against pass ≥ 0.70, fail < 0.50"


def intent_mismatch() -> Evaluation:
    e = load("pass")
    mismatch = Evidence(
        id="semantic.intent-mismatch", detective="semantic", kind="intent-mismatch", severity="high",
        summary="The title and body talk about invoices, refunds, exports, which the change never mentions, and the "
                "code does not read like the change described, so the integrity score is reduced (the intent penalty "
                "in the table). Closest: shop/cart.py:5; farthest: shop/discounts.py:20",
        location=Location(path="shop/cart.py", line=5), facts={"score": 0.1, "threshold": 0.35, "penalty": 0.3})
    return e.model_copy(update={"evidence": (mismatch, *e.evidence), "verdict": "fail", "cis_score": 0.26,
                                "intent_penalty": 0.3, "verdict_reasons": (_score_reason(0.26),)})


def environment_failure() -> Evaluation:
    e = load("pass")
    failing = Evidence(
        id="tests.environmental:tests/test_net.py::test_fetch", detective="tests", kind="test-environmental",
        severity="medium", summary=f"environmental: tests/test_net.py::test_fetch: {ENV_MESSAGE}",
        location=Location(path="tests/test_net.py", line=5),
        facts={"name": "tests/test_net.py::test_fetch", "message": f"/sandbox/repo/tests/test_net.py:5: {ENV_MESSAGE}"})
    return e.model_copy(update={"evidence": (failing, *e.evidence), "verdict": "neutral", "verdict_reasons": (
        e.verdict_reasons[0], "Rule of the Environment: 1 failing test(s) failed because of the sandbox, not this "
        f"change (first: tests/test_net.py::test_fetch: {ENV_MESSAGE})")})


def engine_unavailable() -> Evaluation:
    e = load("clean", GOLDEN)
    evidence = tuple(ev.model_copy(update={"summary": "Tests not measured: no Docker engine answers "
                                           "(DockerException); start the Docker engine, or set DOCKER_HOST to one "
                                           "that runs"}) if ev.kind == "tests-not-measured" else ev
                     for ev in e.evidence)
    return e.model_copy(update={"evidence": evidence})


CASES: dict[str, Callable[[], Evaluation]] = {
    "pass": lambda: load("pass"), "regression": lambda: load("fail"), "intent-mismatch": intent_mismatch,
    "banned-call-parametrized": banned_call_and_parametrized_failure, "environment": environment_failure,
    "engine-unavailable": engine_unavailable}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_first_400_px_show_verdict_rule_and_first_fix(name: str) -> None:
    e = CASES[name]()
    html = html_of(e)
    page = github_page(html)
    screenshot(page, f"fold-{name}", height=700)
    seen = above_the_fold(page, 400)
    assert f"LogoMesh: {VERDICT_WORD[e.verdict]}" in seen, seen
    if (rule := deciding_rule(e)) is not None:
        assert rule in seen, seen
    fixes = what_to_fix(e)
    if e.verdict != "pass":
        assert fixes
    if fixes:
        assert " ".join(fixes[0].title.split()) in seen, seen
        if fixes[0].location is not None:
            assert str(fixes[0].location) in seen, seen
    assert measure(page)["height"] <= 600


@pytest.mark.parametrize("name", [*sorted(CASES), "golden-clean", "golden-eval", "golden-shell", "golden-claims"])
def test_no_internal_path_reaches_an_author(name: str) -> None:
    """Internal paths planted in every text field a review carries never reach the comment, the check run's
    summary and title, the CLI's text and Markdown, or the JSON's what-to-fix."""
    e = CASES[name]() if name in CASES else load(name.removeprefix("golden-"), GOLDEN)
    planted = tuple(ev.model_copy(update={"summary": ev.summary + " (in /sandbox/repo/x.py, /tmp/tmpab12cd/y)",
                                          "facts": {**ev.facts, "message": "/opt/logomesh/envs/project/lib/python3.12"
                                                    "/site-packages/pkg/mod.py:3: Error"}})
                    for ev in e.evidence)
    opinions = tuple(op.model_copy(update={"argument": op.argument + " see /sandbox/repo/calc/ops.py"})
                     for op in e.opinions)
    e = e.model_copy(update={"evidence": planted, "opinions": opinions,
                             "verdict_reasons": (*e.verdict_reasons, "Rule of Completion: /tmp/logomesh-run/x")})
    texts = [render_markdown(e), render_markdown(e, place="check"), render_markdown(e, place="cli", dbom_id="d1"),
             render_text(e), render_title(e), review_report(e, "d1").model_dump_json(include={"what_to_fix", "title"})]
    for text in texts:
        for path in INTERNAL:
            assert path not in text, (path, text[text.find(path) - 80: text.find(path) + 80])
