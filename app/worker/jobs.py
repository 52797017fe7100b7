"""The arq worker: ``review_pull_request`` turns one queued request into a completed check run and comment.

At-least-once delivery, so every step is idempotent: the check run is found again by ``external_id``, the
comment by its marker, and a per-PR Redis lock keeps two jobs of one PR from interleaving. A job for a head
SHA that is no longer the PR's newest is **superseded**: its check run is completed ``neutral``,
"superseded by <sha>". Whatever fails after the check run exists, it ends ``completed`` with a human message.
GitHub 5xx and rate limits are retried by arq (``Retry(defer=…)``) up to ``max_tries``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol, TypeVar

import structlog
from arq import Retry
from arq.connections import ArqRedis
from redis.asyncio.lock import Lock
from redis.exceptions import RedisError

from app.github import GitHubApp, GitHubError, GitHubNotFound, GitHubRetryable
from app.metrics import (
    CIS,
    JOBS,
    STAGE_SECONDS,
    WORKER_READY,
    CourtTimer,
    serve_worker_metrics,
    stage,
    worker_ready,
    worker_unready,
)
from app.queue import JOB_NAME, Keys, redis_settings
from app.receiver.routing import ReviewRequest
from app.review.assembly import court_parts, prepare
from app.settings import Settings
from app.worker import fairness
from app.worker.liveness import Heartbeat, Ownership, lock_claim
from app.worker.presence import Owners, Presence, Sweeper
from app.worker.publish import (
    CommentMode,
    Publication,
    Publisher,
    Target,
    external_id,
    load_publication,
    pr_from_external_id,
    public_reason,
    save_publication,
)
from app.worker.workspace import CloneSpec, WorkspaceError, checkout
from checks.court import review
from checks.errors import ConfigError
from checks.line_comments import LineComment, ReviewMode, plan_line_comments
from checks.models import Evaluation
from rubric import RubricError

log = structlog.get_logger("logomesh.worker")
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
LOCK_RETRY_SECONDS = 5
LOCK_POLL_SECONDS = 0.5
WATCH_SECONDS = 1.0  # how often a running review looks for a newer head
OUTAGE_BASE_SECONDS = 2.0
OUTAGE_MAX_DEFER = 120.0
T = TypeVar("T")
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")
TIMEOUT_MARGIN_SECONDS = 30


class DbomWriter(Protocol):
    """Where the worker records a review's DBOM; answers the record id that the public URL names."""

    async def append(self, evaluation: Evaluation, *, installation_id: int,
                     entanglement: Mapping[str, Any]) -> str: ...

    async def close(self) -> None: ...


DbomFactory = Callable[[Settings], Awaitable[DbomWriter | None]]


async def default_dbom_writer(settings: Settings) -> DbomWriter | None:
    """The DBOM ledger configured by the settings (SQLite by default, PostgreSQL for many workers)."""
    from app.ledger import Entanglement, open_ledger

    ledger = await open_ledger(settings)

    class LedgerWriter:
        async def append(self, evaluation: Evaluation, *, installation_id: int,
                         entanglement: Mapping[str, Any]) -> str:
            # what only the worker knows (sandbox image digest, tool versions…) overrides the evaluation's view
            record = await ledger.append(evaluation, installation_id=installation_id,
                                         entanglement=Entanglement.from_evaluation(evaluation, **entanglement))
            return str(record.id)

        async def close(self) -> None:
            await ledger.close()

    return LedgerWriter()


def review_deadline(job_timeout: int) -> float:
    """Seconds the clone and the court may take: arq's own timeout must never be the one that fires, or the
    check run would stay in_progress."""
    return float(max(5, job_timeout - min(TIMEOUT_MARGIN_SECONDS, job_timeout // 4)))


class DbomUnavailable(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Abandoned(Exception):
    """Another try took this job over (this one was cut off from Redis longer than its claims live): it publishes
    nothing and records nothing; the try that holds the job does."""


class Superseded(Exception):
    def __init__(self, newer: str) -> None:
        self.newer = newer
        super().__init__(newer)


def entanglement(evaluation: Evaluation) -> dict[str, Any]:
    """The DBOM's entangled inputs as the worker saw them: the PR's identity and the exact commits reviewed."""
    return {
        "repo": evaluation.inputs.repo, "pr_number": evaluation.inputs.pr_number,
        "base_sha": evaluation.inputs.base, "head_sha": evaluation.inputs.head,
        "diff_sha256": evaluation.inputs.diff_sha256, "pr_text_sha256": evaluation.inputs.intent_sha256,
        "config_sha256": evaluation.inputs.config_sha256, "rubric_version": evaluation.rubric.version,
        "rubric_sha256": evaluation.rubric.sha256,
    }


async def _resolve_pr(redis: ArqRedis, keys: Keys, req: ReviewRequest) -> int | None:
    if req.pr_number is not None:
        return req.pr_number
    from_ext = pr_from_external_id(req.external_id)
    if from_ext is not None:
        return from_ext
    if req.head_sha is not None:
        value = await redis.get(keys.sha(req.repo, req.head_sha))
        if value is not None:
            return int(value)
    return None


async def _may_recheck(github: GitHubApp, req: ReviewRequest) -> bool:
    assert req.requester is not None
    try:
        data = await github.request(req.installation_id, "GET",
                                    f"/repos/{req.repo}/collaborators/{req.requester}/permission")
    except GitHubNotFound:
        return False
    return data.get("permission") in WRITE_PERMISSIONS or data.get("role_name") in WRITE_PERMISSIONS


async def _latest(redis: ArqRedis, keys: Keys, req: ReviewRequest, pr: int, head: str) -> str | None:
    """The newer head this job is superseded by, if any."""
    value = await redis.get(keys.latest(req.repo, pr))
    latest = value.decode() if isinstance(value, bytes) else value
    return latest if latest and latest != head else None


class Reviewed(NamedTuple):
    evaluation: Evaluation
    changed: dict[str, set[int]]
    comment: CommentMode  # the repository's comment setting, else the App's
    line_comments: tuple[LineComment, ...] = ()
    review: ReviewMode = "fail"  # the repository's review_comments setting, else the App's
    request_changes: bool = False


async def run_court(ctx: dict[str, Any], settings: Settings, req: ReviewRequest, target: Target,
                    pr: Mapping[str, Any]) -> Reviewed:
    github: GitHubApp = ctx["github"]
    token = await github.installation_token(req.installation_id)
    spec = CloneSpec(url=f"{settings.github_web_url}/{req.repo}.git", head_sha=target.head_sha,
                     base_sha=pr["base"]["sha"], token=token)
    job_settings = settings.model_copy(update={"llm_provider": "anthropic" if settings.llm_provider == "offline"
                                               else settings.llm_provider}) if req.with_llm else settings
    cloning = time.perf_counter()
    async with checkout(spec, settings) as repo:
        STAGE_SECONDS.labels("clone").observe(time.perf_counter() - cloning)
        with stage("prepare"):
            prepared = await asyncio.to_thread(
                prepare, repo, spec.base_sha, spec.head_sha, settings=job_settings, title=pr.get("title") or "",
                body=pr.get("body") or "", repo_name=req.repo, pr_number=target.pr_number)
        async with court_parts(repo, prepared, job_settings) as parts:
            timer = CourtTimer()
            timer.wrap(parts)
            evaluation = await review(prepared.case, prepared.rubric, parts)
            timer.record()
    changed = {f.path: set(f.added_lines) for f in prepared.case.files}
    sources = {f.path: f.content for f in prepared.case.files if f.content is not None}
    config = prepared.config
    return Reviewed(evaluation, changed, config.comment or settings.comment,
                    tuple(plan_line_comments(evaluation, changed, sources)),
                    config.review_comments or settings.review_comments,
                    settings.review_request_changes if config.review_request_changes is None
                    else config.review_request_changes)


async def review_pull_request(ctx: dict[str, Any], data: dict[str, Any]) -> str:
    started = time.perf_counter()
    try:
        result = await _review_pull_request(ctx, data)
    except fairness.Deferred:
        raise
    except Retry:
        JOBS.labels("retried").inc()
        raise
    except asyncio.CancelledError:
        JOBS.labels("cancelled").inc()
        raise
    JOBS.labels(result.split(":", 1)[0].split(" ", 1)[0] if result.startswith(
        ("ignored", "refused", "failed", "superseded")) else "reviewed").inc()
    STAGE_SECONDS.labels("total").observe(time.perf_counter() - started)
    return result


async def _review_pull_request(ctx: dict[str, Any], data: dict[str, Any]) -> str:
    settings: Settings = ctx["settings"]
    redis: ArqRedis = ctx["redis"]
    keys = Keys(settings.redis_prefix)
    job_id = str(ctx.get("job_id") or data.get("delivery_id"))
    liveness = float(settings.job_liveness_seconds)
    async with Heartbeat(liveness) as heartbeat:
        if ctx.get("job_id"):  # run by arq: this try owns the job (and arq's mark lives no longer than the try)
            await heartbeat.own(Ownership(redis, keys.owner(job_id), job_id, uuid.uuid4().hex, liveness))
        try:
            return await _review_with_lease(ctx, data, heartbeat)
        finally:
            if heartbeat.job is not None:
                with contextlib.suppress(Exception):
                    await heartbeat.job.release()


async def _review_with_lease(ctx: dict[str, Any], data: dict[str, Any], heartbeat: Heartbeat) -> str:
    """One of the installation's slots (:mod:`app.worker.fairness`), held while the heartbeat beats."""
    settings: Settings = ctx["settings"]
    redis: ArqRedis = ctx["redis"]
    keys = Keys(settings.redis_prefix)
    installation_id = int(data["installation_id"])
    job_id = str(ctx.get("job_id") or data.get("delivery_id"))
    if not await fairness.acquire(redis, keys, installation_id, job_id, cap=settings.installation_concurrency,
                                  lease_seconds=heartbeat.liveness):
        log.info("installation at its concurrency cap; deferring", installation_id=installation_id,
                 job_id=job_id, cap=settings.installation_concurrency)
        JOBS.labels("deferred").inc()
        await fairness.uncount_try(redis, job_id)
        raise fairness.Deferred(defer=fairness.defer_seconds())

    async def renew_lease() -> None:
        # a lease that lapsed while Redis was away is taken again: the review is running, the slot is its own
        if not await fairness.renew(redis, keys, installation_id, job_id, lease_seconds=heartbeat.liveness):
            await fairness.acquire(redis, keys, installation_id, job_id, cap=settings.installation_concurrency,
                                   lease_seconds=heartbeat.liveness)

    heartbeat.add("installation lease", renew_lease)
    try:
        return await _review_with_slot(ctx, data, heartbeat)
    finally:
        heartbeat.drop("installation lease")
        with contextlib.suppress(Exception):
            await fairness.release(redis, keys, installation_id, job_id)


async def _pull(ctx: dict[str, Any], req: ReviewRequest, pr_number: int) -> dict[str, Any]:
    """The pull request as the API has it now."""
    pr: dict[str, Any] = await ctx["github"].request(req.installation_id, "GET",
                                                     f"/repos/{req.repo}/pulls/{pr_number}")
    return pr


async def _explain_refusal(ctx: dict[str, Any], req: ReviewRequest, pr_number: int, reason: str) -> None:
    """A refused ``/recheck`` gets a reply saying why, once a day per person and PR (the 😕 alone says nothing,
    and a reply to every repeated command would let anyone make the App spam the PR)."""
    settings: Settings = ctx["settings"]
    requester = req.requester if req.requester and LOGIN.match(req.requester) else None
    if requester is None:
        return
    fresh = await ctx["redis"].set(Keys(settings.redis_prefix).refusal(req.repo, pr_number, requester), "1",
                                   nx=True, ex=86_400)
    if fresh:
        publisher: Publisher = ctx["publisher"]
        await publisher.reply(req.installation_id, req.repo, pr_number,
                              f"@{requester} `/recheck` was not run: {reason}.")


async def _open_pull_request(ctx: dict[str, Any], req: ReviewRequest, bound: Any) -> tuple[int, dict[str, Any]] | str:
    """The PR this job is about and its state from the API, or the reason the job ends here."""
    github: GitHubApp = ctx["github"]
    publisher: Publisher = ctx["publisher"]
    keys = Keys(ctx["settings"].redis_prefix)
    pr_number = await _resolve_pr(ctx["redis"], keys, req)
    if pr_number is None:
        bound.info("no pull request known for this head", head_sha=req.head_sha)
        return "ignored: no pull request for this head"
    bound = bound.bind(pr=pr_number)
    if req.kind == "recheck":
        assert req.comment_id is not None
        if not await _may_recheck(github, req):
            await publisher.react(req.installation_id, req.repo, req.comment_id, "confused")
            await _explain_refusal(ctx, req, pr_number, "only people with write access to the repository can "
                                   "ask for a review; pushing a commit reviews the pull request again")
            bound.info("/recheck refused: no write access", requester=req.requester)
            return "refused: requester lacks write access"
    pr = await _pull(ctx, req, pr_number)
    if req.kind == "recheck":
        assert req.comment_id is not None
        # accept only what will run: a 🚀 on a closed PR would promise a review that never comes
        accepted = pr.get("state") == "open"
        await publisher.react(req.installation_id, req.repo, req.comment_id, "rocket" if accepted else "confused")
        if not accepted:
            await _explain_refusal(ctx, req, pr_number, "the pull request is not open; reopen it to review it again")
            bound.info("/recheck refused: the pull request is not open", requester=req.requester)
            return "refused: pull request is not open"
    if pr.get("state") != "open":
        bound.info("pull request is not open")
        return "ignored: pull request is not open"
    return pr_number, pr


def head_to_review(req: ReviewRequest, pr: Mapping[str, Any]) -> str | None:
    """The commit this job reviews: the PR's current head as the API says, never an event's older view of it.

    A push event whose head is no longer the PR's head arrived late (a newer push was delivered first): it has
    nothing left to review (None). An edit of the title or body (or a retarget) applies to the current head. A
    re-run of a check run reviews the commit that run belongs to."""
    current = str(pr["head"]["sha"])
    if req.kind == "rerun" and req.head_sha:
        return req.head_sha
    if req.kind == "review" and req.head_sha and req.head_sha != current \
            and not req.reason.startswith("pull_request.edited"):
        return None
    return current


async def _newer_head(ctx: dict[str, Any], req: ReviewRequest, pr_number: int, head: str) -> str | None:
    """The PR's head when it is no longer ``head``, asked of the API (the Redis hint only says when to ask)."""
    pr = await _pull(ctx, req, pr_number)
    current = str(pr["head"]["sha"])
    return current if current != head else None


async def _watch_for_newer_head(ctx: dict[str, Any], req: ReviewRequest, pr_number: int, head: str) -> str:
    """Return once a newer head is confirmed: the receiver's ``latest`` key changes as a push is accepted, and
    each new value is checked with the API (a late event must not stop a review of the current head)."""
    keys = Keys(ctx["settings"].redis_prefix)
    asked: set[str] = set()
    while True:
        await asyncio.sleep(WATCH_SECONDS)
        try:
            hint = await _latest(ctx["redis"], keys, req, pr_number, head)
        except RedisError:  # Redis away: keep reviewing; the check before publishing decides
            continue
        if hint is None or hint in asked:
            continue
        asked.add(hint)
        with contextlib.suppress(GitHubError):  # GitHub down: keep reviewing, the check before publishing decides
            newer = await _newer_head(ctx, req, pr_number, head)
            if newer is not None:
                return newer


async def _until_superseded(ctx: dict[str, Any], req: ReviewRequest, pr_number: int, head: str,
                            work: Awaitable[T]) -> T:
    """Run ``work``, cancelling it (containers and all) as soon as a newer head is pushed: Superseded."""
    task = asyncio.ensure_future(work)
    if req.kind == "recheck":  # asked for by a person: runs to its end
        return await task
    watcher = asyncio.ensure_future(_watch_for_newer_head(ctx, req, pr_number, head))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, watcher):
            if not pending.done():
                pending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(task, watcher, return_exceptions=True)
    if task.done() and not task.cancelled():
        return task.result()
    raise Superseded(watcher.result())


async def _acquire_pr_lock(ctx: dict[str, Any], req: ReviewRequest, pr_number: int, head: str,
                           bound: Any, heartbeat: Heartbeat) -> Lock:
    """The PR's lock. A review still holding it is told to stop (it watches the latest head), so waiting is
    short and costs no try; a job that finds its own token (an earlier try that died) takes it over. The lock
    lives ``job_liveness_seconds`` past the holder's last heartbeat: a dead holder's lapses in seconds."""
    settings: Settings = ctx["settings"]
    redis: ArqRedis = ctx["redis"]
    keys = Keys(settings.redis_prefix)
    lock_key = keys.lock(req.repo, pr_number)
    lock = Lock(redis, lock_key, timeout=heartbeat.liveness)
    token = str(ctx.get("job_id") or req.delivery_id).encode()
    job_id = token.decode()
    claim = f"lock of {req.repo}#{pr_number}"
    heartbeat.lost = None if heartbeat.lost == claim else heartbeat.lost
    deadline = time.monotonic() + review_deadline(settings.job_timeout_seconds)
    waited = False
    while not await lock.acquire(blocking=False, token=token):
        if await redis.get(lock_key) == token:
            lock.local.token = token
            await lock.reacquire()
            bound.info("took over the lock of an earlier try of this job")
            heartbeat.add(claim, lock_claim(lock, claim))
            return lock
        if not waited:
            bound.info("another review of this PR is running; waiting for it")
            waited = True
        if req.kind != "recheck" and (hint := await _latest(redis, keys, req, pr_number, head)) \
                and (newer := await _newer_head(ctx, req, pr_number, head)):
            bound.info("superseded while waiting", hint=hint)
            raise Superseded(newer)
        if time.monotonic() > deadline:
            await fairness.uncount_try(redis, job_id)  # waiting for a live review is not a failed try
            raise Retry(defer=LOCK_RETRY_SECONDS)
        await asyncio.sleep(LOCK_POLL_SECONDS)
    heartbeat.add(claim, lock_claim(lock, claim))
    return lock


async def _ride_out(ctx: dict[str, Any], bound: Any, *, what: str, key: str, budget_seconds: int,
                    retry_after: float = 0.0, **detail: Any) -> None:
    """Retry through an outage of ``what`` (GitHub, the DBOM ledger): exponential backoff that honours
    Retry-After, not counted against ``max_tries``, for up to ``budget_seconds`` from the job's first failure.
    Returns when that budget is spent (the caller gives up with a message); otherwise raises :class:`arq.Retry`."""
    redis: ArqRedis = ctx["redis"]
    job_id = str(ctx.get("job_id") or "")
    state = json.loads(await redis.get(key) or "null") or {"began": time.time(), "attempts": 0}
    if time.time() - state["began"] >= budget_seconds:
        bound.warning(f"{what} kept failing; giving up", attempts=state["attempts"], **detail)
        return
    state["attempts"] += 1
    defer = max(retry_after, min(OUTAGE_MAX_DEFER, OUTAGE_BASE_SECONDS * 2 ** (state["attempts"] - 1)))
    await redis.set(key, json.dumps(state), ex=budget_seconds + 3600)
    if job_id:
        await fairness.uncount_try(redis, job_id)
    bound.warning(f"{what} is unavailable; retrying", defer=defer, attempt=state["attempts"], **detail)
    raise Retry(defer=defer)


async def _outage(ctx: dict[str, Any], exc: GitHubRetryable, bound: Any) -> None:
    """Ride out a GitHub outage (5xx, rate limits) for up to ``github_outage_seconds``."""
    settings: Settings = ctx["settings"]
    job_id = str(ctx.get("job_id") or "")
    try:
        await _ride_out(ctx, bound, what="GitHub", key=Keys(settings.redis_prefix).outage(job_id),
                        budget_seconds=settings.github_outage_seconds, retry_after=exc.retry_after,
                        status=exc.status)
    except Retry as retry:
        raise retry from exc


async def _review_with_slot(ctx: dict[str, Any], data: dict[str, Any], heartbeat: Heartbeat) -> str:
    settings: Settings = ctx["settings"]
    redis: ArqRedis = ctx["redis"]
    keys = Keys(settings.redis_prefix)
    req = ReviewRequest.from_dict(data)
    job_id = str(ctx.get("job_id") or req.delivery_id)
    bound = log.bind(delivery_id=req.delivery_id, installation_id=req.installation_id, repo=req.repo,
                     job_id=ctx.get("job_id"), kind=req.kind, job_try=ctx.get("job_try"))
    try:
        opened = await _open_pull_request(ctx, req, bound)
    except GitHubRetryable as exc:
        await _outage(ctx, exc, bound)
        await _complete_started_run(ctx, job_id, f"GitHub kept failing: {exc}", bound)
        return f"failed: GitHub unavailable: {exc}"
    except GitHubError as exc:
        # Nothing was started on GitHub yet: there is no check run to complete.
        bound.warning("cannot start the review", error=str(exc))
        return f"failed before the check run: {exc}"
    if isinstance(opened, str):
        # an earlier try of this job (its worker died) may have started a check run: it must not stay in progress
        await _complete_started_run(ctx, job_id, "The pull request is no longer open; nothing was reviewed.",
                                    bound, title="The pull request was closed")
        return opened
    pr_number, pr = opened
    head = head_to_review(req, pr)
    bound = bound.bind(pr=pr_number)
    if head is None:
        bound.info("a late event for an older head", event_head=req.head_sha, head=pr["head"]["sha"])
        newer = str(pr["head"]["sha"])
        await _complete_started_run(ctx, job_id, f"A newer commit was pushed: superseded by {newer}.", bound,
                                    title=f"Superseded by {newer[:12]}")
        return f"ignored: {req.head_sha} is no longer the head of the pull request"
    target = Target(req.installation_id, req.repo, pr_number, head)
    bound = bound.bind(head_sha=head)
    # a Retry keeps the outage's clock
    result = await _review_and_publish(ctx, req, target, pr, job_id, bound, heartbeat)
    with contextlib.suppress(Exception):
        await redis.delete(keys.outage(job_id), keys.publication(job_id), keys.run(job_id))
    return result


async def _complete_started_run(ctx: dict[str, Any], job_id: str, message: str, bound: Any, *,
                                title: str | None = None) -> None:
    """A try that ends before it reviews (it gives up, the PR was closed or moved on) still completes the check run
    an earlier try created: with ``title`` as a plain neutral outcome, without one as LogoMesh's own failure."""
    redis: ArqRedis = ctx["redis"]
    keys = Keys(ctx["settings"].redis_prefix)
    saved = await redis.get(keys.run(job_id))
    if not saved:
        return
    run = json.loads(saved)
    target = Target(int(run["installation_id"]), str(run["repo"]), int(run["pr_number"]), str(run["head_sha"]))
    if title is None:
        await _give_up(ctx["publisher"], target, int(run["check_run_id"]), message, bound)
    else:
        try:
            await ctx["publisher"].finish_neutral(target, int(run["check_run_id"]), title, message)
        except GitHubError as exc:
            bound.error("could not complete the check run of an earlier try", error=str(exc))
            return
        bound.info("completed the check run an earlier try started", title=title)
    await redis.delete(keys.run(job_id), keys.outage(job_id), keys.publication(job_id))


@dataclass(frozen=True)
class Deps:
    """What a review job uses from the worker's context (arq's ``ctx`` dict), typed."""

    settings: Settings
    redis: ArqRedis
    publisher: Publisher
    dbom: DbomWriter | None
    keys: Keys

    @classmethod
    def of(cls, ctx: dict[str, Any]) -> Deps:
        settings: Settings = ctx["settings"]
        return cls(settings, ctx["redis"], ctx["publisher"], ctx.get("dbom"), Keys(settings.redis_prefix))

    @property
    def publication_ttl(self) -> int:
        return max(self.settings.github_outage_seconds, self.settings.ledger_outage_seconds) + 3600


async def _review_and_publish(ctx: dict[str, Any], req: ReviewRequest, target: Target, pr: dict[str, Any],
                              job_id: str, bound: Any, heartbeat: Heartbeat) -> str:
    """Start the check run, take the PR's lock, decide (:func:`_decide`) unless a decision is already durable,
    publish it (:func:`_publish`); every failure completes the check run with what went wrong."""
    deps = Deps.of(ctx)
    settings, publisher = deps.settings, deps.publisher
    pending = await load_publication(deps.redis, deps.keys, job_id)
    check_run_id: int | None = pending.check_run_id if pending else None
    lock: Lock | None = None
    finished = False  # the check run carries the verdict: a later failure must not turn it neutral
    try:
        try:
            if check_run_id is None:
                # the run shows in progress at once, even while an older review of this PR winds down
                check_run_id = await publisher.start_check_run(target, external_id(target.pr_number,
                                                                                     req.delivery_id))
                await deps.redis.set(deps.keys.run(job_id), json.dumps({
                    "check_run_id": check_run_id, "installation_id": target.installation_id, "repo": target.repo,
                    "pr_number": target.pr_number, "head_sha": target.head_sha}),
                    ex=settings.job_timeout_seconds + deps.publication_ttl)
            lock = await _acquire_pr_lock(ctx, req, target.pr_number, target.head_sha, bound, heartbeat)
            if pending is None:
                decided = await _decide(ctx, deps, req, target, pr, job_id, check_run_id, heartbeat)
                if decided is None:
                    return await _closed(publisher, target, check_run_id, bound)
                pending = decided
            elif await _closed_or_superseded(ctx, req, target):
                await deps.redis.delete(deps.keys.publication(job_id))
                return await _closed(publisher, target, check_run_id, bound)
            if not pending.recorded:
                if not await heartbeat.owns_job():
                    raise Abandoned()  # one DBOM per decision: the try that holds the job records it
                pending = await _record(deps, req, job_id, pending)
                worker_ready()
            if heartbeat.lost is not None:
                # Redis was away longer than the lock lives: publish only once the PR is ours again
                bound.warning("the PR's lock lapsed during the review; taking it again before publishing",
                              claim=heartbeat.lost)
                lock = await _acquire_pr_lock(ctx, req, target.pr_number, target.head_sha, bound, heartbeat)
                if await _closed_or_superseded(ctx, req, target):
                    await deps.redis.delete(deps.keys.publication(job_id))
                    return await _closed(publisher, target, check_run_id, bound)
            if not await heartbeat.owns_job():
                raise Abandoned()
            publishing = time.perf_counter()
            pending = await _publish_check_run(deps, target, job_id, pending)
            finished = True
            return await _publish_comment(deps, target, job_id, pending, bound, publishing)
        except Abandoned:
            bound.warning("another try took this job over while this one was cut off from Redis; it publishes")
            return "abandoned: another try holds this job"
        except Superseded as exc:
            assert check_run_id is not None
            await publisher.finish_neutral(target, check_run_id, f"Superseded by {exc.newer[:12]}",
                                           f"A newer commit was pushed: superseded by {exc.newer}.")
            bound.info("superseded", newer=exc.newer)
            return f"superseded by {exc.newer}"
        except GitHubRetryable as exc:
            await _outage(ctx, exc, bound)
            if finished:
                bound.warning("the verdict is on the check run; the PR comment could not be posted", error=str(exc))
                return "failed: comment not posted (GitHub unavailable)"
            await _give_up(publisher, target, check_run_id, f"GitHub kept failing: {exc}", bound)
            return "failed: GitHub unavailable"
        except DbomUnavailable as exc:
            # no verdict is ever published without its audit record: the decision is kept (Redis) and its
            # recording retried through the outage, never the review; then say why there is none
            worker_unready(f"the DBOM ledger cannot be written: {exc.reason}")
            try:
                await _ride_out(ctx, bound, what="the DBOM ledger", key=deps.keys.outage(job_id) + ":ledger",
                                budget_seconds=settings.ledger_outage_seconds, error=exc.reason)
            except Retry as retry:
                raise retry from exc
            worker_ready()
            await deps.redis.delete(deps.keys.publication(job_id))
            await _give_up(publisher, target, check_run_id,
                           f"The audit record (DBOM) could not be written ({exc.reason}); LogoMesh publishes no "
                           "verdict without it.", bound)
            return "failed: DBOM unavailable"
        except WorkspaceError as exc:
            await _give_up(publisher, target, check_run_id, f"The repository could not be cloned: {exc.reason}",
                           bound)
            return f"failed: clone: {exc.reason}"
        except (ConfigError, RubricError) as exc:
            await _give_up(publisher, target, check_run_id,
                           f"The base branch's `.logomesh.yml` (or the rubric it overrides) is invalid: {exc}", bound,
                           ours=False)
            return f"failed: configuration: {exc}"
        except TimeoutError:
            await _give_up(publisher, target, check_run_id,
                           f"The review did not finish within {settings.job_timeout_seconds}s.", bound)
            return "failed: timeout"
        except GitHubError as exc:
            if finished:
                bound.warning("the verdict is on the check run; the PR comment could not be posted", error=str(exc))
                return f"failed: comment not posted: {exc}"
            await _give_up(publisher, target, check_run_id, f"A GitHub call failed: {exc}", bound)
            return f"failed: {exc}"
        except Retry:
            raise  # arq runs the job again later (a wait, an outage): not a failure, the check run stays in progress
        except Exception as exc:
            # A failure of LogoMesh itself must never leave the run in_progress nor fail the PR; its detail (which
            # may name the operator's hosts and paths) goes to the logs, under the delivery id the author sees.
            bound.exception("review crashed")
            await _give_up(publisher, target, check_run_id,
                           f"LogoMesh failed while reviewing ({type(exc).__name__}); its operators find the detail "
                           f"in its logs under delivery `{req.delivery_id}`.", bound)
            return f"failed: {type(exc).__name__}"
    finally:
        if lock is not None:
            with contextlib.suppress(Exception):
                await lock.release()




async def _decide(ctx: dict[str, Any], deps: Deps, req: ReviewRequest, target: Target, pr: dict[str, Any],
                  job_id: str, check_run_id: int, heartbeat: Heartbeat) -> Publication | None:
    """Review the head, record its DBOM and make the decision durable (a GitHub failure from then on retries the
    publication, not the review); None when the PR was closed meanwhile."""
    settings = deps.settings
    async with asyncio.timeout(review_deadline(settings.job_timeout_seconds)):
        reviewed = await _until_superseded(
            ctx, req, target.pr_number, target.head_sha, run_court(ctx, settings, req, target, pr))
    if await _closed_or_superseded(ctx, req, target):
        return None
    if not await heartbeat.owns_job():
        raise Abandoned()
    # the decision is durable before the ledger is asked: a ledger outage retries the recording, not the review
    pending = Publication(check_run_id, reviewed.evaluation, None, reviewed.changed, comment=reviewed.comment,
                          recorded=deps.dbom is None, line_comments=reviewed.line_comments, review=reviewed.review,
                          request_changes=reviewed.request_changes)
    await save_publication(deps.redis, deps.keys, job_id, pending, deps.publication_ttl)
    return pending


async def _record(deps: Deps, req: ReviewRequest, job_id: str, pending: Publication) -> Publication:
    """Write the decision's DBOM (:class:`DbomUnavailable` when the ledger cannot take it) and keep that it was."""
    assert deps.dbom is not None
    evaluation = pending.evaluation
    try:
        record_id = await deps.dbom.append(evaluation, installation_id=req.installation_id,
                                           entanglement=entanglement(evaluation))
    except Exception as exc:
        raise DbomUnavailable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    settings = deps.settings
    dbom_url = f"{settings.public_url}/dbom/{record_id}.html" if settings.public_url else None
    pending = replace(pending, dbom_url=dbom_url, recorded=True)
    await save_publication(deps.redis, deps.keys, job_id, pending, deps.publication_ttl)
    return pending


async def _publish_check_run(deps: Deps, target: Target, job_id: str, pending: Publication) -> Publication:
    """The verdict on the check run, once: a retry after this point only posts the comment."""
    if not pending.check_run_done:
        await deps.publisher.finish(target, pending.check_run_id, pending.evaluation, pending.dbom_url,
                                    pending.changed)
        pending = replace(pending, check_run_done=True)
        await save_publication(deps.redis, deps.keys, job_id, pending, deps.publication_ttl)
    return pending


async def _publish_comment(deps: Deps, target: Target, job_id: str, pending: Publication, bound: Any,
                           publishing: float) -> str:
    """The PR comment (as the comment mode asks), then the decision's record goes: the job is done."""
    evaluation = pending.evaluation
    await deps.publisher.comment(target, pending)
    try:
        outcome = await deps.publisher.review(target, pending)
        if outcome.posted or outcome.edited:
            bound.info("line comments", posted=outcome.posted, edited=outcome.edited)
    except GitHubError as exc:  # the verdict stands on the check run and in the comment: the review is extra
        bound.warning("the review's line comments could not be posted", error=str(exc))
    await deps.redis.delete(deps.keys.publication(job_id))
    STAGE_SECONDS.labels("publish").observe(time.perf_counter() - publishing)
    CIS.labels(evaluation.verdict).observe(evaluation.cis_score)
    bound.info("reviewed", verdict=evaluation.verdict, cis=evaluation.cis_score, dbom=pending.dbom_url)
    return f"{evaluation.verdict} {evaluation.cis_score:.4f}"


async def _closed_or_superseded(ctx: dict[str, Any], req: ReviewRequest, target: Target) -> bool:
    """Before anything is published, the PR as the API has it now: True when it was closed (no verdict, no
    comment); a newer head (for push reviews) raises Superseded."""
    pr = await _pull(ctx, req, target.pr_number)
    if pr.get("state") != "open":
        return True
    current = str(pr["head"]["sha"])
    if req.kind != "recheck" and current != target.head_sha:
        raise Superseded(current)
    return False


async def _closed(publisher: Publisher, target: Target, check_run_id: int, bound: Any) -> str:
    await publisher.finish_neutral(target, check_run_id, "The pull request was closed",
                                   "The pull request was closed during the review; LogoMesh publishes no verdict "
                                   "on a closed pull request.")
    bound.info("closed during the review")
    return "ignored: pull request closed during the review"


async def _give_up(publisher: Publisher, target: Target, check_run_id: int | None, message: str,
                   bound: Any, *, ours: bool = True) -> None:
    bound.warning("review failed", reason=message)
    if check_run_id is None:
        return
    advice = ("This is a problem of LogoMesh, not of the pull request: comment `/recheck` to try again."
              if ours else "Fix the configuration on the base branch, then comment `/recheck`.")
    try:
        await publisher.finish_neutral(target, check_run_id, "LogoMesh could not review this change",
                                       f"{public_reason(message)}\n\n{advice}")
    except GitHubError as exc:
        bound.error("could not complete the check run", error=str(exc))


def _presence(redis: ArqRedis, settings: Settings) -> Presence:
    return Presence(redis, Keys(settings.redis_prefix), settings.worker_id, float(settings.job_liveness_seconds))


def _engine_sweeper() -> tuple[Owners, Sweeper]:
    """Read the worker ids on the engine's sandbox objects; remove those of the given (gone) workers."""
    from sandbox.docker_sandbox import docker_client
    from sandbox.janitor import owners, sweep

    def on_engine(work: Callable[[Any], T]) -> T:
        client = docker_client()
        try:
            return work(client)
        finally:
            client.close()

    async def engine_owners() -> set[str]:
        return await asyncio.to_thread(on_engine, owners)

    async def sweep_gone(gone: Collection[str]) -> int:
        # only the gone workers' objects: by age it could reach a CLI review or another tool on the same engine
        swept = await asyncio.to_thread(on_engine, lambda client: sweep(client, math.inf, gone_workers=gone))
        return swept.containers + swept.volumes + swept.images

    return engine_owners, sweep_gone


def worker_options(settings: Settings, dbom_factory: DbomFactory = default_dbom_writer) -> dict[str, Any]:
    """Keyword arguments for :class:`arq.worker.Worker` (the CLI and the tests build the worker from these)."""
    if not settings.worker_id:  # this process's name on its sandbox objects (app.worker.presence)
        settings = settings.model_copy(update={
            "worker_id": f"{re.sub(r'[^A-Za-z0-9_.-]', '-', socket.gethostname())[:60]}-{uuid.uuid4().hex[:12]}"})

    async def startup(ctx: dict[str, Any]) -> None:
        from app.worker.startup import start_up

        serve_worker_metrics(settings.metrics_port)
        ctx["startup"] = await start_up(settings)
        ctx["settings"] = settings
        ctx["github"] = GitHubApp(settings)
        ctx["publisher"] = Publisher(ctx["github"], settings.check_name, llm_available=settings.llm_key() is not None,
                                     web_url=settings.github_web_url)
        ctx["dbom"] = await dbom_factory(settings)
        if settings.sandbox != "off":
            ctx["presence"] = asyncio.ensure_future(_presence(ctx["redis"], settings).run(*_engine_sweeper()))
        WORKER_READY.set()

    async def shutdown(ctx: dict[str, Any]) -> None:
        if ctx.get("presence") is not None:
            ctx["presence"].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ctx["presence"]
            with contextlib.suppress(Exception):
                await _presence(ctx["redis"], settings).withdraw()
        if ctx.get("dbom") is not None:
            await ctx["dbom"].close()

    from arq.worker import func

    return {
        "functions": [func(review_pull_request, name=JOB_NAME, timeout=settings.job_timeout_seconds,
                           max_tries=settings.max_tries)],
        "queue_name": settings.queue_name,
        "redis_settings": redis_settings(settings, patient=True),
        "on_startup": startup,
        "on_shutdown": shutdown,
        "max_jobs": settings.concurrency,
        "job_timeout": settings.job_timeout_seconds,
        "max_tries": settings.max_tries,
        "health_check_interval": 10,
        "health_check_key": Keys(settings.redis_prefix).health(),
        "keep_result": 24 * 3600,
        # SIGTERM: take no new job, give running ones this long, then cancel them (arq re-queues them)
        "job_completion_wait": settings.drain_seconds,
    }
