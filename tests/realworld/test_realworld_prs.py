"""Twenty real merged pull requests of four public projects, reviewed with zero configuration.

The bundles (``fixtures/``, MIT and BSD projects; see ``fixtures/README.md``) are cloned once per session. Each
PR is reviewed exactly as the CLI reviews it, with the real sandbox: the environment is detected and built
(network to the package index only, cached across PRs), the tests run at base and head. Every one must collect
and run its tests with no import error, and none of these ordinary, merged changes may be failed.
Rationale and the red agent are off here: this pins the environment and T.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.fixes import what_to_fix
from checks.render import Links, render_markdown
from tests.browser import gfm_to_html, parse_html

pytestmark = [pytest.mark.docker, pytest.mark.slow]
FIXTURES = Path(__file__).parent / "fixtures"
PRS = json.loads((FIXTURES / "prs.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("pr", PRS, ids=[p["id"] for p in PRS])
async def test_a_real_merged_pr_runs_its_tests_and_is_not_failed(
        projects: Path, docker_engine: docker.DockerClient, pr: dict[str, Any]) -> None:
    settings = load_settings(sandbox="docker", home=projects / ".lm", embedding="off", red_team="off")
    evaluation, _ = await review_repository(projects / pr["repo"], pr["base"], pr["head"], settings=settings,
                                            title=pr["title"], body=pr["body"] or "")
    head = evaluation.tests
    assert head is not None and head.status == "ran", (head and head.reason, head and head.output[-2000:])
    assert head.passed > 0 and head.collection_errors == ()
    assert not [t for t in head.tests if t.outcome == "error" and "ImportError" in (t.message or "")]
    assert head.environment is not None and head.environment.layout == "src" and head.environment.python == "3.11"
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", diff and diff.reason
    assert diff.regressed == () and diff.new_failing == ()
    assert evaluation.verdict != "fail", evaluation.verdict_reasons
    # what the author reads: a neutral says why in What to fix; code spans show paths and names unescaped
    comment = render_markdown(evaluation, links=Links(changed={}))
    if evaluation.verdict == "neutral":
        assert "**What to fix**" in comment and what_to_fix(evaluation), evaluation.verdict_reasons
    else:
        assert "Nothing blocks this change." in comment or "**Worth a look**" in comment
    dom = parse_html(gfm_to_html(comment))
    assert [c.text() for c in dom.find_all("code") if "\\" in c.text()] == []
    assert len(dom.find_all("details")) == 1
