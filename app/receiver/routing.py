"""The one table from a webhook (event, action) to what LogoMesh does about it.

A route reads only the payload (no I/O) and answers either a :class:`ReviewRequest` to enqueue, an
:class:`InstallationNote` to record, or an :class:`Ignored` with the reason. Untrusted fields are read
defensively: a payload that lacks what a route needs is ignored with a reason, never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["review", "recheck", "rerun"]
RECHECK_LINE = re.compile(r"^\s*/recheck\s*$", re.MULTILINE)
LLM_ACTION = "rerun-llm"


@dataclass(frozen=True)
class ReviewRequest:
    """One unit of work for the worker. ``head_sha`` None: use the PR's current head."""

    kind: Kind
    delivery_id: str
    installation_id: int
    repo: str
    pr_number: int | None
    head_sha: str | None
    reason: str
    requester: str | None = None
    comment_id: int | None = None
    with_llm: bool = False
    external_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # every field is a str, int, bool or None: a shallow copy is a whole one (asdict's deep copy costs 10x)
        return dict(vars(self))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReviewRequest:
        return cls(**dict(data))

    @property
    def owner(self) -> str:
        return self.repo.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repo.split("/", 1)[1]


@dataclass(frozen=True)
class InstallationNote:
    installation_id: int
    account: str
    action: str
    repos_added: tuple[str, ...] = ()
    repos_removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ignored:
    reason: str


Outcome = ReviewRequest | InstallationNote | Ignored
Route = Callable[[Mapping[str, Any], str, bool], Outcome]


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _base(payload: Mapping[str, Any]) -> tuple[int, str] | Ignored:
    installation = _int(_get(payload, "installation", "id"))
    repo = _str(_get(payload, "repository", "full_name"))
    if repo is None or "/" not in repo:
        return Ignored("payload has no repository.full_name")
    if installation is None:
        return Ignored("payload has no installation id (not delivered to an App installation)")
    return installation, repo


def pull_request(payload: Mapping[str, Any], delivery: str, review_drafts: bool) -> Outcome:
    action = payload.get("action")
    base = _base(payload)
    if isinstance(base, Ignored):
        return base
    pr = payload.get("pull_request")
    number = _int(_get(pr, "number"))
    head = _str(_get(pr, "head", "sha"))
    if number is None or head is None:
        return Ignored("payload has no pull_request.number/head.sha")
    if _get(pr, "state") == "closed":
        return Ignored("the pull request is closed")
    reason = f"pull_request.{action}"
    if action == "edited":
        changes = payload.get("changes")
        changed = set(changes) if isinstance(changes, Mapping) else set()
        if "base" in changed:  # retargeted: the diff, the base's tests and its .logomesh.yml all changed
            reason = "pull_request.edited:base"
        elif not ({"title", "body"} & changed):
            return Ignored("edited without a title/body/base change: neither the intent nor the base changed")
    if _get(pr, "draft") is True and action != "ready_for_review" and not review_drafts:
        return Ignored("draft pull request (LOGOMESH_REVIEW_DRAFTS is off)")
    return ReviewRequest("review", delivery, base[0], base[1], number, head, reason)


def issue_comment(payload: Mapping[str, Any], delivery: str, review_drafts: bool) -> Outcome:
    base = _base(payload)
    if isinstance(base, Ignored):
        return base
    if _get(payload, "issue", "pull_request") is None:
        return Ignored("comment on an issue, not a pull request")
    body = _get(payload, "comment", "body")
    if not isinstance(body, str) or not RECHECK_LINE.search(body):
        return Ignored("no /recheck command")
    if _get(payload, "comment", "user", "type") == "Bot":
        return Ignored("comment by a bot")
    number = _int(_get(payload, "issue", "number"))
    login = _str(_get(payload, "comment", "user", "login"))
    comment_id = _int(_get(payload, "comment", "id"))
    if number is None or login is None or comment_id is None:
        return Ignored("payload has no issue.number/comment.user.login/comment.id")
    return ReviewRequest("recheck", delivery, base[0], base[1], number, None, "/recheck",
                         requester=login, comment_id=comment_id)


def _rerun(payload: Mapping[str, Any], delivery: str, holder: str, reason: str, with_llm: bool) -> Outcome:
    base = _base(payload)
    if isinstance(base, Ignored):
        return base
    head = _str(_get(payload, holder, "head_sha"))
    if head is None:
        return Ignored(f"payload has no {holder}.head_sha")
    prs = _get(payload, holder, "pull_requests")
    number = _int(_get(prs[0], "number")) if isinstance(prs, list) and prs else None
    return ReviewRequest("rerun", delivery, base[0], base[1], number, head, reason, with_llm=with_llm,
                         requester=_str(_get(payload, "sender", "login")),
                         external_id=_str(_get(payload, holder, "external_id")))


def check_run(payload: Mapping[str, Any], delivery: str, review_drafts: bool) -> Outcome:
    action = payload.get("action")
    if action == "rerequested":
        return _rerun(payload, delivery, "check_run", "check_run.rerequested", False)
    identifier = _get(payload, "requested_action", "identifier")
    return _rerun(payload, delivery, "check_run", f"check_run.requested_action:{identifier}",
                  identifier == LLM_ACTION)


def check_suite(payload: Mapping[str, Any], delivery: str, review_drafts: bool) -> Outcome:
    return _rerun(payload, delivery, "check_suite", "check_suite.rerequested", False)


def installation(payload: Mapping[str, Any], delivery: str, review_drafts: bool) -> Outcome:
    installation_id = _int(_get(payload, "installation", "id"))
    if installation_id is None:
        return Ignored("payload has no installation.id")

    def names(key: str) -> tuple[str, ...]:
        items = payload.get(key)
        return tuple(n for n in (_str(_get(i, "full_name")) for i in items or ()) if n) \
            if isinstance(items, list) else ()

    return InstallationNote(installation_id, _str(_get(payload, "installation", "account", "login")) or "?",
                            str(payload.get("action")), names("repositories_added") or names("repositories"),
                            names("repositories_removed"))


ROUTES: dict[tuple[str, str], Route] = {
    **{("pull_request", a): pull_request
       for a in ("opened", "synchronize", "reopened", "ready_for_review", "edited")},
    ("issue_comment", "created"): issue_comment,
    ("check_run", "rerequested"): check_run,
    ("check_run", "requested_action"): check_run,
    ("check_suite", "rerequested"): check_suite,
    **{("installation", a): installation for a in ("created", "deleted", "suspend", "unsuspend",
                                                   "new_permissions_accepted")},
    **{("installation_repositories", a): installation for a in ("added", "removed")},
}


def route(event: str, payload: Mapping[str, Any], delivery_id: str, *, review_drafts: bool = False) -> Outcome:
    action = payload.get("action")
    handler = ROUTES.get((event, action if isinstance(action, str) else ""))
    if handler is None:
        return Ignored(f"{event}.{action} is not handled" if action else f"{event} is not handled")
    return handler(payload, delivery_id, review_drafts)
