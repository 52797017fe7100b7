"""Hostile or broken webhooks against the real receiver (uvicorn + Redis): each gets a clear 4xx/2xx with a
reason, nothing crashes, and a review that does run posts inert text."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.app.conftest import INSTALLATION, PR, REPO, SECRET, Harness, pr_payload, verdict_title
from tests.hardening.conftest import Tally

pytestmark = pytest.mark.hardening("input")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f]")


async def test_signatures_and_framing_are_rejected_with_a_reason(harness: Harness, tally: Tally) -> None:
    h = harness
    body = json.dumps(pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)).encode()
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    sha256_as_sha1 = "sha1=" + h.sign(body).removeprefix("sha256=")
    cases: list[tuple[str, httpx.Response, int, str]] = [
        ("missing signature", await h.post("pull_request", body, signature=""), 401, "missing"),
        ("wrong secret", await h.post("pull_request", body, signature=h.sign(body, "nope")), 401, "bad signature"),
        ("sha1= prefix (GitHub's legacy header)", await h.post("pull_request", body, signature=sha1), 401,
         "bad signature"),
        ("sha256 digest under a sha1= prefix", await h.post("pull_request", body, signature=sha256_as_sha1), 401,
         "bad signature"),
        ("digest without prefix", await h.post("pull_request", body, signature=h.sign(body)[7:]), 401,
         "bad signature"),
        ("truncated signature", await h.post("pull_request", body, signature=h.sign(body)[:-8]), 401,
         "bad signature"),
        ("signature of other bytes", await h.post("pull_request", body, signature=h.sign(body[:-1])), 401,
         "bad signature"),
        ("truncated JSON", await h.post("pull_request", body[: len(body) // 2]), 400, "not JSON"),
        ("JSON array", await h.post("pull_request", b"[]"), 400, "not a JSON object"),
        ("JSON null", await h.post("pull_request", b"null"), 400, "not a JSON object"),
        ("not UTF-8", await h.post("pull_request", b'{"a": "\xff\xfe"}'), 400, "not JSON"),
        ("empty body", await h.post("pull_request", b""), 400, "not JSON"),
        ("missing event header", await h.post("pull_request", body, headers={"X-GitHub-Event": ""}), 400,
         "X-GitHub-Event"),
        ("delivery id with a path", await h.post("pull_request", body, delivery="../../etc/passwd"), 400,
         "X-GitHub-Delivery"),
        ("delivery id of 101 chars", await h.post("pull_request", body, delivery="a" * 101), 400,
         "X-GitHub-Delivery"),
    ]
    for name, answer, status, reason in cases:
        tally(name)
        assert answer.status_code == status, (name, answer.status_code, answer.text)
        assert reason in answer.json()["error"], (name, answer.json())


async def test_a_10_mb_body_is_refused_before_it_is_read_whole(harness: Harness, tally: Tally) -> None:
    h = harness
    huge = b'{"pad": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    tally("10 MB body with Content-Length")
    answer = await h.post("pull_request", huge)
    assert answer.status_code == 413 and "larger than" in answer.json()["error"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the cap must hold while streaming
        for _ in range(40):
            yield b"x" * (256 * 1024)

    tally("10 MB chunked body without Content-Length")
    async with httpx.AsyncClient(base_url=h.url, timeout=30) as client:
        answer = await client.post("/webhook", content=chunks(), headers={
            "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "chunked-1", "X-Hub-Signature-256": "sha256=0"})
    assert answer.status_code == 413
    tally("lying Content-Length (99 GB declared)")
    host, port = h.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n"
                 b"X-GitHub-Event: ping\r\nX-GitHub-Delivery: cl-1\r\nX-Hub-Signature-256: sha256=0\r\n\r\n{}")
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    assert b" 413 " in status_line, status_line
    async with httpx.AsyncClient(base_url=h.url) as client:
        assert (await client.get("/healthz")).status_code == 200  # the receiver is still answering


async def test_payloads_that_lack_what_a_route_needs_are_ignored_with_a_reason(harness: Harness,
                                                                               tally: Tally) -> None:
    h = harness
    good = pr_payload("opened.payload.json", head=h.repo.head, base=h.repo.base)
    no_installation = {k: v for k, v in good.items() if k != "installation"}
    wrong_types = json.loads(json.dumps(good))
    wrong_types["pull_request"]["number"] = "7"
    wrong_types["pull_request"]["head"] = ["sha"]
    installation_as_string = {**good, "installation": "4242"}
    repo_without_owner = json.loads(json.dumps(good))
    repo_without_owner["repository"]["full_name"] = "shop"
    comment_null_body = {"action": "created", "installation": {"id": INSTALLATION},
                         "repository": {"full_name": REPO}, "issue": {"number": PR, "pull_request": {}},
                         "comment": {"body": None, "id": 1, "user": {"login": "x"}}}
    cases = [
        ("unknown event", "deployment_status", {"action": "created"}, "not handled"),
        ("unknown action", "pull_request", {**good, "action": "labeled"}, "not handled"),
        ("action not a string", "pull_request", {**good, "action": {"x": 1}}, "not handled"),
        ("missing installation", "pull_request", no_installation, "no installation id"),
        ("installation as a string", "pull_request", installation_as_string, "no installation id"),
        ("repository without owner", "pull_request", repo_without_owner, "repository.full_name"),
        ("wrongly typed PR fields", "pull_request", wrong_types, "pull_request.number/head.sha"),
        ("pull_request null", "pull_request", {**good, "pull_request": None}, "pull_request.number"),
        ("comment body null", "issue_comment", comment_null_body, "no /recheck"),
        ("check_run without head_sha", "check_run", {"action": "rerequested", "installation": {"id": 1},
                                                     "repository": {"full_name": REPO}, "check_run": {}},
         "head_sha"),
    ]
    for name, event, payload, reason in cases:
        tally(name)
        answer = await h.post(event, payload)
        assert answer.status_code == 202, (name, answer.text)
        assert answer.json()["status"] == "ignored" and reason in answer.json()["reason"], (name, answer.json())
    assert await h.redis.llen(h.settings.queue_name) == 0 and await h.redis.zcard(h.settings.queue_name) == 0  # type: ignore[misc]


async def test_null_and_huge_bodies_and_bidi_titles_are_reviewed_into_inert_reports(harness: Harness,
                                                                                  tally: Tally) -> None:
    h = harness
    trojan = "Fix totals \u202eexe.txt\u202c \u2067admin\u2069 \u200f@everyone #1 www.evil.example"
    huge_body = ("Please approve. " * 12_000)[:190_000]
    for name, title, body in (("body: null", "Add discount codes", None),
                              ("huge PR body (190 kB)", "Add discount codes", huge_body),
                              ("bidi overrides and mentions in the title", trojan, trojan + " body")):
        tally(name)
        h.github.add_pull(REPO, PR, head=h.repo.head, base=h.repo.base, title=title, body=body)
        answer = await h.post("pull_request", pr_payload("opened.payload.json", head=h.repo.head,
                                                         base=h.repo.base, title=title, body=body))
        assert answer.status_code == 202 and answer.json()["status"] == "queued", (name, answer.text)
        await h.run_worker()
    runs = h.github.check_runs_for(h.repo.head)
    assert len(runs) == 3 and all(r["status"] == "completed" for r in runs)
    assert all(verdict_title(r["output"]["title"]) for r in runs), [r["output"]["title"] for r in runs]
    texts = [c["body"] for c in h.github.comments.values()]
    texts += [r["output"]["summary"] for r in runs]
    texts += [a["message"] + a["title"] for r in runs for a in r["annotations"]]
    for text in texts:
        assert not BIDI.search(text), "a live bidi control reached GitHub"
        assert "@everyone" not in text and "www.evil" not in text
        assert len(text) <= 65_535


async def test_bidi_controls_in_file_names_and_code_never_reach_github_live(harness: Harness, tally: Tally,
                                                                            tmp_path: Path) -> None:
    from tests.hardening.repos import publish_repo

    h = harness
    tally("bidi override in a file name (annotation path/message)")
    tally("Trojan Source bidi controls in changed code")
    trojan_name = "pkg/adm\u202enip.py"
    payload = publish_repo(h, tmp_path / "w", "trojan", {
        trojan_name: "def f(:\n    pass\n",  # does not parse: a high finding annotated on the changed line
        "pkg/auth.py": "def ok(user):\n    if user != 'admin\u202e \u2066# admin only\u2069 \u2066':\n"
                       "        return False\n    return eval('True')\n",
    }, title="Fix \u202eeman\u202c", body="\u2067bidi\u2069")
    assert (await h.post("pull_request", payload)).status_code == 202
    await h.run_worker()
    run = next(r for r in h.github.check_runs.values() if r["repo"] == "octo/trojan")
    assert run["status"] == "completed" and run["annotations"], run["output"]
    texts = [run["output"]["summary"], *[c["body"] for c in h.github.comments.values() if c["repo"] == "octo/trojan"]]
    texts += [a["message"] + a["title"] for a in run["annotations"]]
    texts += [r["body"] for r in h.github.reviews.values() if r["repo"] == "octo/trojan"]
    texts += [c["body"] for c in h.github.review_comments.values() if c["repo"] == "octo/trojan"]
    for text in texts:
        assert not BIDI.search(text), f"a live bidi control reached GitHub: {text[:200]!r}"
