"""The webhook receiver (Starlette on uvicorn): verify, parse, route, enqueue, answer 202. No review work here.

Routes::

    POST /webhook           X-Hub-Signature-256 checked on the raw bytes (constant time, gidgethub)
    GET  /healthz           the process answers
    GET  /readyz            Redis and the database answer
    GET  /metrics           Prometheus text format (see app.metrics)
    GET  /setup             the GitHub App manifest flow (see app.receiver.manifest)
    GET  /dbom/{id}[.html]  the signed audit records, when the ledger is built in (see app.receiver.dbom_routes)

Status codes of ``/webhook``: 202 accepted (queued, recorded or ignored with a reason; or ``spooled`` when Redis
is away: kept on local disk and admitted when it returns, :mod:`app.receiver.spool`), 200 ping or replayed delivery,
400 malformed headers/JSON, 401 bad or missing signature, 413 body above the cap, 503 Redis down and the spool full.

The body is parsed once, after the signature verified, by orjson: strict RFC 8259 JSON in UTF-8, so NaN, a byte
order mark, invalid UTF-8 or nesting deeper than 1024 levels is a 400 like any other malformed body. A delivery
that asks for a review costs one Redis round trip (:func:`app.queue.accept_delivery`) and one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import structlog
from arq import create_pool
from arq.connections import ArqRedis
from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event
from redis.exceptions import RedisError
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.metrics import QUEUE_DEPTH, WEBHOOKS, queue_label
from app.queue import Keys, accept_delivery, redis_settings
from app.receiver.routing import Ignored, InstallationNote, ReviewRequest, route
from app.receiver.spool import Spool, SpoolFull
from app.settings import Settings

log = structlog.get_logger("logomesh.web")
# the X-GitHub-Event header is the sender's to choose: only these become metric labels
KNOWN_EVENTS = frozenset({"ping", "pull_request", "check_run", "check_suite", "issue_comment", "installation",
                          "installation_repositories"})

# an unverified header is logged clipped to this many characters
HEADER_LOG_CHARS = 100


class BodyTooLarge(Exception):
    pass


async def _read_capped(request: Request, cap: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(code: int, **body: Any) -> JSONResponse:
    response = JSONResponse(body, status_code=code)
    response.outcome = str(body.get("status", f"http_{code}")).replace(" ", "_")  # type: ignore[attr-defined]
    return response


async def ping_database(url: str, timeout: float = 3.0) -> None:
    """Open and close one connection (SQLite file or PostgreSQL); raises when the database does not answer."""
    if url.startswith("sqlite"):
        import aiosqlite

        path = url.split(":///", 1)[1] if ":///" in url else ":memory:"
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        async with aiosqlite.connect(path, timeout=timeout) as db:
            await db.execute("SELECT 1")
        return
    if url.startswith("postgresql"):
        import asyncpg

        dsn = "postgresql://" + url.split("://", 1)[1]
        conn = await asyncpg.connect(dsn, timeout=timeout)
        try:
            await conn.execute("SELECT 1")
        finally:
            await conn.close()
        return
    raise ValueError(f"unsupported database URL scheme: {url.split(':', 1)[0]}")


def _log_rejected_signature(request: Request, body: bytes, reason: str) -> None:
    """One warning per rejected delivery (a forgery, a probe, or a secret out of step with GitHub's), with what
    tells them apart; never the body nor the signature. The headers are unverified, so they are clipped."""
    log.warning("webhook signature rejected", reason=reason,
                delivery_id=request.headers.get("x-github-delivery", "")[:HEADER_LOG_CHARS],
                github_event=request.headers.get("x-github-event", "")[:HEADER_LOG_CHARS],
                client=request.client.host if request.client else None, body_bytes=len(body))


async def webhook(request: Request) -> Response:
    response = await _webhook(request)
    event = request.headers.get("x-github-event", "")
    outcome = f"http_{response.status_code}"
    if response.status_code in (200, 202):  # the answer's status, kept beside it (never re-parsed)
        outcome = getattr(response, "outcome", outcome)
    WEBHOOKS.labels(event if event in KNOWN_EVENTS else "other", outcome).inc()
    return response


async def _webhook(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    redis: ArqRedis = request.app.state.redis
    started = time.perf_counter()
    try:
        body = await _read_capped(request, settings.max_body_bytes)
    except BodyTooLarge:
        return _answer(413, error=f"body larger than {settings.max_body_bytes} bytes")
    except ClientDisconnect:
        return _answer(400, error="client disconnected")
    signature = request.headers.get("x-hub-signature-256")
    if not signature:
        _log_rejected_signature(request, body, "missing")
        return _answer(401, error="missing X-Hub-Signature-256")
    if not signature.startswith("sha256="):
        # gidgethub honours whatever algorithm the prefix names; this header must be HMAC-SHA256 only
        _log_rejected_signature(request, body, "malformed")
        return _answer(401, error="bad signature: X-Hub-Signature-256 must start with sha256=")
    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else ""
    try:
        validate_event(body, signature=signature, secret=secret)
    except ValidationFailure:
        _log_rejected_signature(request, body, "mismatch")
        return _answer(401, error="bad signature")
    event = request.headers.get("x-github-event", "")
    delivery = request.headers.get("x-github-delivery", "")
    if not event or not delivery or len(delivery) > 100 or not delivery.replace("-", "").isalnum():
        return _answer(400, error="missing or malformed X-GitHub-Event / X-GitHub-Delivery")
    try:
        payload = orjson.loads(body)  # strict RFC 8259 UTF-8 JSON, a third of the standard library's time
    except orjson.JSONDecodeError:
        return _answer(400, error="body is not JSON")
    if not isinstance(payload, dict):
        return _answer(400, error="body is not a JSON object")
    bound = log.bind(delivery_id=delivery, github_event=event, action=payload.get("action"))
    if event == "ping":
        bound.info("ping", zen=payload.get("zen"))
        return _answer(200, status="pong")
    try:
        return await admit(settings, redis, event, payload, delivery, bound, started)
    except RedisError as exc:
        bound.error("redis unavailable", error=str(exc))
        keys = Keys(settings.redis_prefix)
        with contextlib.suppress(RedisError):
            await redis.delete(keys.delivery(delivery))
        spool: Spool | None = getattr(request.app.state, "spool", None)
        if spool is not None:
            try:
                await asyncio.to_thread(spool.put, delivery, event, body)
            except (SpoolFull, OSError, sqlite3.Error) as spool_error:
                bound.error("the spool cannot keep the delivery", error=str(spool_error))
            else:
                bound.warning("delivery spooled until Redis returns")
                request.app.state.spool_wakeup.set()
                return _answer(202, status="spooled", job_id=delivery)
        return _answer(503, error="queue unavailable, please redeliver")


async def admit(settings: Settings, redis: ArqRedis, event: str, payload: dict[str, Any], delivery: str,
                bound: Any, started: float) -> JSONResponse:
    """Route a verified delivery and dedupe/enqueue/record it; raises RedisError when Redis does not answer."""
    keys = Keys(settings.redis_prefix)
    ttl = timedelta(days=settings.delivery_ttl_days)
    outcome = route(event, payload, delivery, review_drafts=settings.review_drafts)  # pure: no I/O
    if isinstance(outcome, ReviewRequest):  # dedupe + announce + enqueue: one round trip
        accepted = await accept_delivery(redis, settings, event, outcome, ttl)
        if accepted == "duplicate":
            bound.info("replayed delivery ignored")
            return _answer(200, status="duplicate", delivery=delivery)
        bound.info("queued", installation_id=outcome.installation_id, repo=outcome.repo,
                   pr=outcome.pr_number, head_sha=outcome.head_sha, kind=outcome.kind, job_id=delivery,
                   ms=round((time.perf_counter() - started) * 1000, 2))
        return _answer(202, status=accepted, job_id=delivery)
    if not await redis.set(keys.delivery(delivery), event, nx=True, ex=ttl):
        bound.info("replayed delivery ignored")
        return _answer(200, status="duplicate", delivery=delivery)
    if isinstance(outcome, InstallationNote):
        note = {"account": outcome.account, "action": outcome.action,
                "repos_added": ",".join(outcome.repos_added), "repos_removed": ",".join(outcome.repos_removed)}
        await redis.hset(keys.installation(outcome.installation_id), mapping=note)  # type: ignore[misc]
        bound.info("installation recorded", installation_id=outcome.installation_id, account=outcome.account)
        return _answer(202, status="recorded")
    assert isinstance(outcome, Ignored)
    bound.info("ignored", reason=outcome.reason)
    return _answer(202, status="ignored", reason=outcome.reason)


async def drain_spool(app: Starlette, *, idle_seconds: float = 2.0) -> None:
    """Replay spooled deliveries through :func:`admit` while Redis answers; runs for the receiver's lifetime."""
    spool: Spool = app.state.spool
    wakeup: asyncio.Event = app.state.spool_wakeup
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wakeup.wait(), idle_seconds)
        wakeup.clear()
        for entry in await asyncio.to_thread(spool.oldest):
            bound = log.bind(delivery_id=entry.delivery, github_event=entry.event)
            try:
                payload = orjson.loads(entry.body)
                await admit(app.state.settings, app.state.redis, entry.event, payload, entry.delivery, bound,
                            time.perf_counter())
            except RedisError:
                break  # still away: the next round tries again
            except Exception:
                bound.exception("a spooled delivery could not be admitted; it is dropped")
            else:
                bound.info("spooled delivery admitted", waited=round(time.time() - entry.received_at, 1))
            await asyncio.to_thread(spool.remove, entry.delivery)


async def healthz(request: Request) -> Response:
    return _answer(200, status="ok")


async def readyz(request: Request) -> Response:
    problems: dict[str, str] = {}
    try:
        await request.app.state.redis.ping()
    except (RedisError, OSError) as exc:
        problems["redis"] = str(exc) or type(exc).__name__
    try:
        ledger = getattr(request.app.state, "ledger", None)
        check = ledger.ping() if ledger is not None else ping_database(request.app.state.settings.database_url)
        await asyncio.wait_for(check, 5.0)
    except Exception as exc:
        problems["database"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if problems:
        return _answer(503, status="not ready", problems=problems)
    return _answer(200, status="ready")


async def metrics(request: Request) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

    settings: Settings = request.app.state.settings
    try:
        depth = await asyncio.wait_for(request.app.state.redis.zcard(settings.queue_name), 2.0)
        QUEUE_DEPTH.labels(queue_label(settings.queue_name)).set(depth)
    except (RedisError, OSError, TimeoutError) as exc:
        log.warning("queue depth unavailable", error=str(exc) or type(exc).__name__)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def create_app(settings: Settings, *, env_path: Path = Path(".env")) -> Starlette:
    from app.receiver.dbom_routes import dbom_routes, open_ledger_if_built
    from app.receiver.manifest import manifest_routes

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.redis = await create_pool(redis_settings(settings), default_queue_name=settings.queue_name)
        app.state.spool = Spool(settings.home / "spool" / "deliveries.sqlite3")
        app.state.spool_wakeup = asyncio.Event()
        draining = asyncio.ensure_future(drain_spool(app))
        try:
            app.state.ledger = await open_ledger_if_built(settings)
        except Exception as exc:
            log.error("the DBOM ledger cannot be opened", error=str(exc))
            app.state.ledger = None
        try:
            yield
        finally:
            draining.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await draining
            app.state.spool.close()
            await app.state.redis.aclose()
            if app.state.ledger is not None:
                await app.state.ledger.close()

    routes = [
        Route("/webhook", webhook, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *manifest_routes(settings, env_path),
        *dbom_routes(),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
