"""End to end: a signed real webhook → receiver → Redis → arq worker (burst) → clone over git smart HTTP →
court → DBOM (SQLite) → check run and comment on the fake GitHub, validated against GitHub's schemas."""

from __future__ import annotations

from app.worker.publish import pr_from_external_id
from checks.render import MARKER
from tests.app.conftest import PR, REPO, Harness, pr_payload, verdict_title


async def test_opened_pull_request_gets_a_completed_check_run_and_one_comment(harness: Harness) -> None:
    payload = pr_payload("opened.payload.json", head=harness.repo.head, base=harness.repo.base)
    answer = await harness.post("pull_request", payload)
    assert answer.status_code == 202, answer.text
    assert answer.json()["status"] == "queued"

    await harness.run_worker()

    runs = harness.github.check_runs_for(harness.repo.head)
    assert len(runs) == 1
    run = runs[0]
    assert run["status"] == "completed"
    assert run["name"] == "LogoMesh"
    assert pr_from_external_id(run["external_id"]) == PR
    assert run["history"][0]["status"] == "in_progress"
    assert run["conclusion"] in {"success", "neutral", "failure"}
    assert verdict_title(run["output"]["title"])
    assert "What to fix" in run["output"]["summary"] or "Nothing blocks this change" in run["output"]["summary"]
    assert MARKER not in run["output"]["summary"]  # the marker finds our comment, never a check run
    assert len(run["output"]["summary"]) <= 65_535
    assert run["actions"] == []  # no LLM is configured: no "Re-run with LLM" button
    records = await harness.dbom.records()
    assert len(records) == 1
    assert records[0]["entanglement"]["head_sha"] == harness.repo.head
    dbom_url = f"https://logomesh.test/dbom/{records[0]['id']}.html"  # the page a person reads
    assert run["details_url"] == dbom_url
    assert dbom_url in run["output"]["summary"]
    # the eval() the PR adds is annotated on its changed line
    eval_notes = [a for a in run["annotations"] if a["path"] == "shop/discount.py"]
    assert eval_notes and all(a["start_line"] == 3 for a in eval_notes)

    comments = [c for c in harness.github.comments.values() if c["repo"] == REPO and c["issue_number"] == PR]
    assert len(comments) == 1
    assert MARKER in comments[0]["body"] and dbom_url in comments[0]["body"]
    # the clone went through git smart HTTP with the installation token in a header, not in the URL
    assert harness.github.git_requests and all(r["authorized"] for r in harness.github.git_requests)
    assert not any(r["url_has_credentials"] for r in harness.github.git_requests)
