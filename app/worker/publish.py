"""What a user sees: the check run on the head commit and one PR comment, both idempotent.

The check run is found again by its ``external_id`` (``logomesh:pr=<n>:delivery=<id>``), so a retried job
re-uses it instead of stacking a second one, and the PR number survives where GitHub leaves
``pull_requests`` empty (forks). The comment is found by the hidden marker :data:`checks.render.MARKER` and
edited in place on re-runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from app.github import GitHubApp
from app.queue import Keys
from checks.fixes import WORDS, what_to_fix, worst_first
from checks.line_comments import LineComment, ReviewMode, plan_sync, read_posted, unmeasured, wants_review
from checks.models import SEVERITY_ORDER, Evaluation
from checks.redaction import redact_internal_paths
from checks.render import MARKER, Links, render_markdown, render_title

MAX_SUMMARY = 65_535
MAX_ANNOTATIONS_PER_REQUEST = 50
MAX_ANNOTATIONS = 500
CONCLUSION = {"pass": "success", "neutral": "neutral", "fail": "failure"}
LEVEL = {"critical": "failure", "high": "failure", "medium": "warning", "low": "notice"}
RERUN_ACTION = {"label": "Re-run with LLM", "description": "Review again with the LLM judges",
                "identifier": "rerun-llm"}
EXTERNAL_ID = re.compile(r"^logomesh:pr=(\d+):")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f]")


def external_id(pr_number: int, delivery_id: str) -> str:
    return f"logomesh:pr={pr_number}:delivery={delivery_id}"


def pr_from_external_id(value: str | None) -> int | None:
    match = EXTERNAL_ID.match(value or "")
    return int(match.group(1)) if match else None


def clip(text: str, limit: int = MAX_SUMMARY) -> str:
    if len(text) <= limit:
        return text
    note = "\n\n… (truncated: the full report is in the DBOM)\n"
    return text[: limit - len(note)] + note


# What a PR author may read of LogoMesh's own failures: never the operator's network or file system. An address
# (IPv4, IPv6, host:port of a private name), a path of the worker's machine or a traceback goes to the logs only.
_ADDRESS = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\[[0-9A-Fa-f:]+\](?::\d+)?"
                      r"|\b[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{0,4}){2,7}\b")
_INTERNAL_HOST = re.compile(r"(?<![\w./-])(?:localhost|[a-z0-9-]+(?:\.(?:local|internal|svc|cluster\.local|lan))+|"
                            r"[a-z][a-z0-9-]*):\d{2,5}\b", re.IGNORECASE)
_HOST_PATH = re.compile(r"(?<![\w.])/(?:opt|tmp|var|home|root|srv|run|usr|etc|proc|sandbox|work)(?:/[^\s'\",)]*)?")


def public_reason(text: str) -> str:
    """``text`` with the worker's addresses, internal host names with ports and local paths replaced by words."""
    text = text.split("\nTraceback (most recent call last)", 1)[0]
    text = _ADDRESS.sub("[internal address]", text)
    text = _INTERNAL_HOST.sub("[internal address]", text)
    return _HOST_PATH.sub("[internal path]", text)


def visible_bidi(text: str) -> str:
    """Bidi controls shown as ``<U+202E>``: live, they make an annotation read differently (Trojan Source),
    and a reader should see that a file name or line carries them."""
    return BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def check_annotations(evaluation: Evaluation, changed: dict[str, set[int]]) -> list[dict[str, Any]]:
    """One annotation per problem on the line that matters, titled in words: every fact to fix that has a line
    (a failing test where it failed, a finding, the description's mismatch), then the lesser facts on lines the
    change added (e.g. a change to a line that no test notices). Facts on one line are one annotation, led by the
    worst. PR text is untrusted, so it is only ever plain text."""
    by_line: dict[tuple[str, int], list[tuple[str, str, str]]] = {}
    for fix in what_to_fix(evaluation):
        if fix.location is not None and fix.location.line is not None and fix.severity in LEVEL:
            message = " — ".join(p for p in (fix.subject, fix.detail if fix.detail != fix.title else "", fix.hint)
                                 if p)
            by_line.setdefault((fix.location.path, fix.location.line), []).append(
                (fix.severity, fix.title, message))
    for ev in worst_first(evaluation.evidence):
        where = ev.location
        if ev.severity not in LEVEL or where is None or where.line is None or (where.path, where.line) in by_line:
            continue
        if where.line not in changed.get(where.path, set()):
            continue
        title = WORDS.get(ev.kind, (ev.kind.replace("-", " ").capitalize(), ""))[0]
        by_line[(where.path, where.line)] = [(ev.severity, title, ev.summary + (f" ({ev.cwe})" if ev.cwe else ""))]
    out: list[dict[str, Any]] = []
    for (path, line), found in by_line.items():
        severity, title, message = max(found, key=lambda f: SEVERITY_ORDER[f[0]])
        also = [t for _, t, _ in found if t != title]
        if also:
            message += " Also on this line: " + "; ".join(dict.fromkeys(also)) + "."
        out.append({"path": path, "start_line": line, "end_line": line, "annotation_level": LEVEL[severity],
                    "title": visible_bidi(" ".join(title.split()))[:255],
                    "message": visible_bidi(redact_internal_paths(message))[:4000]})
    return out[:MAX_ANNOTATIONS]


CommentMode = Literal["always", "on-change", "never"]


def comment_wanted(mode: str, verdict: str) -> Literal["post", "update", "skip"]:
    """What to do with the PR comment: ``post`` (create or edit), ``update`` (edit ours if there is one, so it
    never shows a stale verdict, but do not add one), or ``skip``."""
    if mode == "never":
        return "skip"
    if mode == "always" or verdict != "pass":
        return "post"
    return "update"


@dataclass(frozen=True)
class Publication:
    """A decision made that still has to be recorded (its DBOM written) and reach GitHub: kept in Redis so that a
    ledger or GitHub failure retries the recording and the publication alone, never the review."""

    check_run_id: int
    evaluation: Evaluation
    dbom_url: str | None
    changed: dict[str, set[int]]
    check_run_done: bool = False  # the check run already carries the verdict: only the comment is left
    comment: CommentMode = "on-change"
    recorded: bool = True  # the DBOM is written (False: the ledger was away; nothing is published before it is)
    line_comments: tuple[LineComment, ...] = ()  # the findings on changed lines (checks/line_comments.py)
    review: ReviewMode = "fail"
    request_changes: bool = False

    def to_json(self) -> str:
        return json.dumps({"check_run_id": self.check_run_id, "evaluation": self.evaluation.model_dump(mode="json"),
                           "dbom_url": self.dbom_url, "check_run_done": self.check_run_done, "comment": self.comment,
                           "recorded": self.recorded,
                           "changed": {path: sorted(lines) for path, lines in self.changed.items()},
                           "line_comments": [c.to_json() for c in self.line_comments], "review": self.review,
                           "request_changes": self.request_changes})

    @classmethod
    def from_json(cls, text: str | bytes) -> Publication:
        data = json.loads(text)
        return cls(int(data["check_run_id"]), Evaluation.model_validate(data["evaluation"]), data["dbom_url"],
                   {path: set(lines) for path, lines in data["changed"].items()}, bool(data.get("check_run_done")),
                   data.get("comment", "on-change"), bool(data.get("recorded", True)),
                   tuple(LineComment.from_json(c) for c in data.get("line_comments", [])),
                   data.get("review", "fail"), bool(data.get("request_changes", False)))


async def save_publication(redis: Any, keys: Keys, job_id: str, publication: Publication, ttl: int) -> None:
    await redis.set(keys.publication(job_id), publication.to_json(), ex=ttl)


async def load_publication(redis: Any, keys: Keys, job_id: str) -> Publication | None:
    """The job's pending publication; one this version cannot read (saved by an older one) is dropped, and the
    job reviews again."""
    text = await redis.get(keys.publication(job_id))
    if not text:
        return None
    try:
        return Publication.from_json(text)
    except (ValueError, KeyError, TypeError):
        await redis.delete(keys.publication(job_id))
        return None


class ReviewOutcome(NamedTuple):
    posted: int  # line comments posted in a new review
    edited: int  # line comments edited in place (new words, or marked fixed)


@dataclass(frozen=True)
class Target:
    installation_id: int
    repo: str
    pr_number: int
    head_sha: str


class Publisher:
    """``llm_available``: offer the "Re-run with LLM" button only where an LLM is configured."""

    def __init__(self, github: GitHubApp, check_name: str, *, llm_available: bool = False,
                 web_url: str = "https://github.com") -> None:
        self.github = github
        self.check_name = check_name
        self.llm_available = llm_available
        self.web_url = web_url

    async def start_check_run(self, t: Target, ext_id: str) -> int:
        """The check run for this job, created ``in_progress`` once (re-used when a retry finds it)."""
        data = await self.github.request(t.installation_id, "GET", f"/repos/{t.repo}/commits/{t.head_sha}/check-runs",
                                         params={"check_name": self.check_name, "filter": "all", "per_page": 100})
        for run in data.get("check_runs", []):
            if run.get("external_id") == ext_id:
                return int(run["id"])
        created = await self.github.request(t.installation_id, "POST", f"/repos/{t.repo}/check-runs", json={
            "name": self.check_name, "head_sha": t.head_sha, "status": "in_progress", "external_id": ext_id,
            "output": {"title": "Reviewing…", "summary": "LogoMesh is reviewing this change."},
        })
        return int(created["id"])

    async def finish_neutral(self, t: Target, check_run_id: int, title: str, summary: str) -> None:
        await self.github.request(t.installation_id, "PATCH", f"/repos/{t.repo}/check-runs/{check_run_id}", json={
            "status": "completed", "conclusion": "neutral",
            "output": {"title": title[:255], "summary": clip(summary)},
        })

    async def finish(self, t: Target, check_run_id: int, evaluation: Evaluation, dbom_url: str | None,
                     changed: dict[str, set[int]]) -> None:
        title = render_title(evaluation)
        summary = clip(render_markdown(evaluation, links=Links(self.web_url, changed, dbom_url), place="check"))
        notes = check_annotations(evaluation, changed)
        batches: Sequence[list[dict[str, Any]]] = [notes[i:i + MAX_ANNOTATIONS_PER_REQUEST]
                                                   for i in range(0, len(notes), MAX_ANNOTATIONS_PER_REQUEST)] or [[]]
        path = f"/repos/{t.repo}/check-runs/{check_run_id}"
        # Extra annotation batches go first: once completed, the run should not change under the reader's eyes.
        for batch in batches[1:]:
            await self.github.request(t.installation_id, "PATCH", path, json={
                "output": {"title": title, "summary": summary, "annotations": batch}})
        body: dict[str, Any] = {
            "status": "completed", "conclusion": CONCLUSION[evaluation.verdict],
            "output": {"title": title, "summary": summary, "annotations": batches[0]},
            "actions": [RERUN_ACTION] if self.llm_available else [],
        }
        if dbom_url:
            body["details_url"] = dbom_url
        await self.github.request(t.installation_id, "PATCH", path, json=body)

    async def comment(self, t: Target, publication: Publication) -> int | None:
        """The PR comment as the publication's comment mode wants it (:func:`comment_wanted`); its id, or None."""
        action = comment_wanted(publication.comment, publication.evaluation.verdict)
        if action == "skip":
            return None
        links = Links(self.web_url, publication.changed, publication.dbom_url)
        return await self.upsert_comment(t, render_markdown(publication.evaluation, links=links),
                                         create=action == "post")

    async def upsert_comment(self, t: Target, body: str, *, create: bool = True) -> int | None:
        """Edit our marked comment on the PR, or create it (unless ``create`` is false). Returns the comment id.

        Ours means written by this App's own bot login: another app or a person quoting the marker is left alone."""
        body = clip(body)
        login = await self.github.bot_login()
        async for comment in self.github.paginate(t.installation_id,
                                                  f"/repos/{t.repo}/issues/{t.pr_number}/comments"):
            user = comment.get("user") or {}
            if MARKER in (comment.get("body") or "") and user.get("login") == login:
                await self.github.request(t.installation_id, "PATCH",
                                          f"/repos/{t.repo}/issues/comments/{comment['id']}", json={"body": body})
                return int(comment["id"])
        if not create:
            return None
        created = await self.github.request(t.installation_id, "POST",
                                            f"/repos/{t.repo}/issues/{t.pr_number}/comments", json={"body": body})
        return int(created["id"])

    async def review(self, t: Target, publication: Publication) -> ReviewOutcome:
        """The line comments, kept in step with the findings (:func:`checks.line_comments.plan_sync`): new findings
        in ONE review on the head commit (a COMMENT, or REQUEST_CHANGES on a fail where configured), a finding still
        there in new words edited in place, a finding gone edited to say it was fixed at this head. Only comments
        written by this App's bot login count as posted."""
        if publication.review == "never":
            return ReviewOutcome(0, 0)
        login = await self.github.bot_login()
        posted = []
        async for comment in self.github.paginate(t.installation_id, f"/repos/{t.repo}/pulls/{t.pr_number}/comments"):
            found = read_posted(int(comment["id"]), comment.get("body") or "")
            if found is not None and (comment.get("user") or {}).get("login") == login:
                posted.append(found)
        verdict = publication.evaluation.verdict
        plan = plan_sync(list(publication.line_comments), posted, t.head_sha,
                         post_new=wants_review(publication.review, verdict),
                         unseen=unmeasured(publication.evaluation))
        for comment_id, body in plan.edit:
            await self.github.request(t.installation_id, "PATCH", f"/repos/{t.repo}/pulls/comments/{comment_id}",
                                      json={"body": body})
        if plan.post:
            event = "REQUEST_CHANGES" if publication.request_changes and verdict == "fail" else "COMMENT"
            count = len(plan.post)
            await self.github.request(t.installation_id, "POST", f"/repos/{t.repo}/pulls/{t.pr_number}/reviews", json={
                "commit_id": t.head_sha, "event": event,
                "body": f"LogoMesh: {count} finding{'s' if count != 1 else ''} on the lines this change adds. "
                        "The check run has the whole report.",
                "comments": [{"path": c.path, "line": c.line, "side": "RIGHT", "body": c.body} for c in plan.post],
            })
        return ReviewOutcome(len(plan.post), len(plan.edit))

    async def reply(self, installation_id: int, repo: str, pr_number: int, text: str) -> int:
        """A plain comment on the PR (no marker: it is an answer to a person, not the report)."""
        created = await self.github.request(installation_id, "POST", f"/repos/{repo}/issues/{pr_number}/comments",
                                            json={"body": clip(text)})
        return int(created["id"])

    async def react(self, installation_id: int, repo: str, comment_id: int, content: str) -> None:
        await self.github.request(installation_id, "POST", f"/repos/{repo}/issues/comments/{comment_id}/reactions",
                                  json={"content": content})
