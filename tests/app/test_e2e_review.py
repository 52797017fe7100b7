"""End to end (signed webhook → receiver → Redis → worker → fake GitHub, requests validated against GitHub's
schemas): a failing pull request gets ONE review with line comments on the lines it adds, a committable
suggestion where the rewrite is certain; the next push posts only what is new; a fixed finding's comment says so."""

from __future__ import annotations

import uuid
from typing import Any

import structlog.testing

from checks.line_comments import MARKER
from tests.app.conftest import PR, REPO, Harness, git, pr_payload

RUN = "import subprocess\n\n\ndef log(ref):\n    return subprocess.run(f\"git log {ref}\", shell=True, check=True)\n"
MOVED = ("import subprocess\n\n\ndef log(ref):\n    \"\"\"The history of ``ref``.\"\"\"\n"
         "    return subprocess.run(f\"git log {ref}\", shell=True, check=True)\n")
LOAD = "import yaml\n\n\ndef settings(text):\n    return yaml.load(text)\n"
STRICT = "version: 1\nthresholds: {pass: 0.95, fail: 0.9}\n"
FIXED = "import subprocess\n\n\ndef log(ref):\n    return subprocess.run([\"git\", \"log\", ref], check=True)\n"


def _push(h: Harness, parent: str, files: dict[str, str], message: str) -> str:
    """A commit on ``parent`` with ``files``, made available in the served repository."""
    branch = f"review-{uuid.uuid4().hex[:8]}"
    git(h.repo.work, "checkout", "-q", "-b", branch, parent)
    for path, text in files.items():
        (h.repo.work / path).parent.mkdir(parents=True, exist_ok=True)
        (h.repo.work / path).write_text(text)
    git(h.repo.work, "add", "-A")
    git(h.repo.work, "commit", "-q", "-m", message)
    sha = git(h.repo.work, "rev-parse", "HEAD")
    git(h.repo.bare, "fetch", "-q", str(h.repo.work), f"+refs/heads/{branch}:refs/heads/{branch}")
    return sha


def _strict_base(h: Harness) -> str:
    """A base whose ``.logomesh.yml`` fails what the sandbox-less review scores (no Docker needed here)."""
    return _push(h, h.repo.base, {".logomesh.yml": STRICT}, "Hold changes to a high bar")


async def _review(h: Harness, base: str, head: str, event: str) -> None:
    h.github.add_pull(REPO, PR, head=head, base=base, title="Show the git log of a ref",
                      body="Adds tools/run.py: log(ref) runs git log for a ref.")
    answer = await h.post("pull_request", pr_payload(event, head=head, base=base))
    assert answer.status_code == 202, answer.text
    await h.run_worker()
    [run] = h.github.check_runs_for(head)
    assert run["conclusion"] == "failure", run["output"]["title"]


def _by_path(h: Harness) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for comment in h.github.review_comments.values():
        out.setdefault(comment["path"], []).append(comment)
    return out


async def test_a_failing_pr_gets_line_comments_that_follow_it_across_pushes(harness: Harness) -> None:
    h = harness
    base = _strict_base(h)
    first = _push(h, base, {"tools/run.py": RUN}, "Show the git log of a ref")
    await _review(h, base, first, "opened.payload.json")

    [review] = h.github.reviews.values()
    assert review["event"] == "COMMENT" and review["commit_id"] == first and review["body"]
    [shell] = _by_path(h)["tools/run.py"]
    assert shell["line"] == 5 and shell["side"] == "RIGHT" and shell["pull_request_review_id"] == review["id"]
    body = shell["body"]
    assert "list of arguments" in body and MARKER.search(body)
    assert "```suggestion\n    return subprocess.run([\"git\", \"log\", ref], check=True)\n```" in body

    # the same finding, moved a line down, and a new one: a second review with the new one only
    second = _push(h, first, {"tools/run.py": MOVED, "tools/config.py": LOAD}, "Document log; read settings")
    await _review(h, base, second, "synchronize.payload.json")
    assert len(h.github.reviews) == 2
    comments = _by_path(h)
    assert len(comments["tools/run.py"]) == 1 and comments["tools/run.py"][0]["edits"] == 0
    [load] = comments["tools/config.py"]
    assert load["line"] == 5 and "```suggestion\n    return yaml.safe_load(text)\n```" in load["body"]

    # the shell call is fixed: its comment says so (no suggestion left to commit); nothing is re-posted
    third = _push(h, second, {"tools/run.py": FIXED}, "Run git without a shell")
    with structlog.testing.capture_logs() as logs:
        await _review(h, base, third, "synchronize.payload.json")
    assert len(h.github.reviews) == 2
    comments = _by_path(h)
    [shell] = comments["tools/run.py"]
    assert shell["body"].startswith(f"✅ Fixed in {third[:12]}") and "suggestion" not in shell["body"]
    assert MARKER.search(shell["body"]).group(3) == " fixed"  # type: ignore[union-attr]
    assert len(comments["tools/config.py"]) == 1 and comments["tools/config.py"][0]["edits"] == 0
    assert any(entry.get("event") == "line comments" and entry.get("edited") == 1 for entry in logs)


async def test_a_review_github_refuses_never_fails_the_check_run(harness: Harness) -> None:
    h = harness
    base = _strict_base(h)
    head = _push(h, base, {"tools/run.py": RUN}, "Show the git log of a ref")
    h.github.fail("pulls/create-review", status=500, times=5)
    with structlog.testing.capture_logs() as logs:
        await _review(h, base, head, "opened.payload.json")
    assert h.github.reviews == {}
    assert any("line comments could not be posted" in str(entry.get("event")) for entry in logs)
    assert len(h.comments()) == 1  # the PR comment is there, the check run carries the verdict


async def test_never_means_no_review(harness: Harness) -> None:
    h = harness
    h.settings = h.settings.model_copy(update={"review_comments": "never"})
    base = _strict_base(h)
    head = _push(h, base, {"tools/run.py": RUN}, "Show the git log of a ref")
    await _review(h, base, head, "opened.payload.json")
    assert h.github.reviews == {} and not h.github.posted("pulls/list-review-comments")


async def test_request_changes_only_where_configured(harness: Harness) -> None:
    h = harness
    h.settings = h.settings.model_copy(update={"review_request_changes": True})
    base = _strict_base(h)
    head = _push(h, base, {"tools/run.py": RUN}, "Show the git log of a ref")
    await _review(h, base, head, "opened.payload.json")
    [review] = h.github.reviews.values()
    assert review["event"] == "REQUEST_CHANGES" and review["state"] == "CHANGES_REQUESTED"


SQL = ("import sqlite3\n\n\ndef find(conn, name):\n"
       "    return conn.execute(f\"SELECT * FROM users WHERE name = '{name}'\").fetchall()\n")


async def test_string_built_sql_gets_a_parameter_suggestion(harness: Harness) -> None:
    h = harness
    h.settings = h.settings.model_copy(update={"red_team": "on"})  # its static taint pass needs no sandbox
    base = _strict_base(h)
    head = _push(h, base, {"shop/users.py": SQL}, "Find users by name")
    await _review(h, base, head, "opened.payload.json")
    [comment] = _by_path(h)["shop/users.py"]
    assert comment["line"] == 5 and comment["body"].startswith("**SQL injection \\(not confirmed\\)**")
    assert "query parameter" in comment["body"]
    assert ("```suggestion\n    return conn.execute(\"SELECT * FROM users WHERE name = ?\", (name,)).fetchall()\n```"
            in comment["body"])
