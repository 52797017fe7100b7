"""The queue between the receiver and the worker: arq on Redis, plus the few Redis keys both sides share.

arq keeps a job's result under its id and silently refuses a second job with the same id, so a job id of
``repo#pr@sha`` would drop a ``/recheck`` of an already reviewed head. The job id is the **delivery id**
(unique per webhook; a redelivery is a replay we want dropped) and the worker serialises per PR with a lock.

Keys (all under ``settings.redis_prefix``)::

    delivery:<id>            SET NX, TTL ≥ 30 days: a delivery we already accepted
    latest:<owner/repo>#<n>  the newest head SHA announced for a PR (supersede)
    sha:<owner/repo>@<sha>   the PR a head SHA belongs to (check runs of forks carry no pull_requests)
    lock:<owner/repo>#<n>    held by the worker reviewing that PR (renewed by its heartbeat: app.worker.liveness)
    owner:<job id>           the try that runs the job (a fencing token renewed by its heartbeat)
    worker:<worker id>       a live worker process (renewed while it runs: app.worker.presence)
    publication:<job id>     a decision made and recorded (DBOM) but not yet published: retries publish it
    outage:<job id>          when this job first met a GitHub outage, and how often it retried since
    run:<job id>             the check run this job created (so a try that cannot even read the PR completes it)
    installation:<id>        what we know about an installation
    refusal:<repo>:<n>:<who> a refused ``/recheck`` was explained to that person (one reply a day)

A delivery that asks for a review is accepted in **one round trip** (:func:`accept_delivery`): a Lua script
dedupes the delivery, announces the head and enqueues the arq job atomically, exactly as
``ArqRedis.enqueue_job`` would (same job key, serialisation, expiry and queue score).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from arq.connections import ArqRedis, RedisSettings
from arq.constants import expires_extra_ms, job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from arq.utils import timestamp_ms
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, NoScriptError, TimeoutError

from app.receiver.routing import ReviewRequest
from app.settings import Settings

JOB_NAME = "review_pull_request"
SHA_TTL = timedelta(days=90)


@dataclass(frozen=True)
class Keys:
    prefix: str

    def delivery(self, delivery_id: str) -> str:
        return f"{self.prefix}delivery:{delivery_id}"

    def latest(self, repo: str, pr: int) -> str:
        return f"{self.prefix}latest:{repo}#{pr}"

    def sha(self, repo: str, sha: str) -> str:
        return f"{self.prefix}sha:{repo}@{sha}"

    def lock(self, repo: str, pr: int) -> str:
        return f"{self.prefix}lock:{repo}#{pr}"

    def publication(self, job_id: str) -> str:
        return f"{self.prefix}publication:{job_id}"

    def outage(self, job_id: str) -> str:
        return f"{self.prefix}outage:{job_id}"

    def refusal(self, repo: str, pr: int, requester: str) -> str:
        """Set once a refused ``/recheck`` was explained to ``requester`` on this PR (one reply a day)."""
        return f"{self.prefix}refusal:{repo}:{pr}:{requester}"

    def worker(self, worker_id: str) -> str:
        return f"{self.prefix}worker:{worker_id}"

    def owner(self, job_id: str) -> str:
        return f"{self.prefix}owner:{job_id}"

    def run(self, job_id: str) -> str:
        return f"{self.prefix}run:{job_id}"

    def installation(self, installation_id: int) -> str:
        return f"{self.prefix}installation:{installation_id}"

    def health(self) -> str:
        return f"{self.prefix}health-check"


REDIS_BACKOFF_CAP_SECONDS = 4.0


def redis_settings(settings: Settings, *, patient: bool = False) -> RedisSettings:
    """How to reach Redis. The receiver is impatient (GitHub waits 10 s for its answer: a delivery it cannot
    enqueue goes to its spool at once); a worker is ``patient``: every command rides out an outage of up to
    ``settings.redis_outage_seconds``, retried with exponential backoff, so a restart of Redis neither ends the
    worker nor the review in flight."""
    redis = RedisSettings.from_dsn(settings.redis_url)
    if patient:
        # each attempt costs up to the connect timeout plus the backoff (capped): enough attempts to span the outage
        attempts = max(1, math.ceil(settings.redis_outage_seconds / (REDIS_BACKOFF_CAP_SECONDS + redis.conn_timeout)))
        redis.retry = Retry(ExponentialBackoff(cap=REDIS_BACKOFF_CAP_SECONDS, base=0.25), attempts)
        redis.retry_on_error = [ConnectionError, TimeoutError, OSError]  # OSError: a refused connect
        redis.retry_on_timeout = True
        redis.conn_retries = attempts
        redis.conn_retry_delay = int(REDIS_BACKOFF_CAP_SECONDS)
    return redis


# KEYS: delivery, arq job, arq result, queue, latest (or the delivery again), sha (or the delivery again)
# ARGV: event, delivery TTL s, job bytes, job expiry ms, score, job id, head sha, pr number, sha TTL s, what to set
_ACCEPT = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return 0 end
if ARGV[10] == 'latest+sha' then redis.call('SET', KEYS[5], ARGV[7], 'EX', ARGV[9]) end
if ARGV[10] ~= 'none' then redis.call('SET', KEYS[6], ARGV[8], 'EX', ARGV[9]) end
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then return 1 end
redis.call('PSETEX', KEYS[2], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[6])
return 2
"""
_ACCEPT_SHA = hashlib.sha1(_ACCEPT.encode(), usedforsecurity=False).hexdigest()  # the name Redis caches it under
Accepted = Literal["duplicate", "already queued", "queued"]


async def accept_delivery(redis: ArqRedis, settings: Settings, event: str, request: ReviewRequest,
                          delivery_ttl: timedelta) -> Accepted:
    """Dedupe the delivery, announce its head and enqueue its review: one atomic round trip to Redis."""
    keys = Keys(settings.redis_prefix)
    delivery_key = keys.delivery(request.delivery_id)
    announce = "none"
    latest_key = sha_key = delivery_key  # unused placeholders keep KEYS' positions
    if request.pr_number is not None and request.head_sha is not None:
        announce = "latest+sha" if request.kind == "review" else "sha"
        latest_key = keys.latest(request.repo, request.pr_number)
        sha_key = keys.sha(request.repo, request.head_sha)
    now = timestamp_ms()
    job = serialize_job(JOB_NAME, (request.to_dict(),), {}, None, now, serializer=redis.job_serializer)
    keys_and_args = (
        delivery_key, job_key_prefix + request.delivery_id, result_key_prefix + request.delivery_id,
        settings.queue_name, latest_key, sha_key,
        event, int(delivery_ttl.total_seconds()), job, expires_extra_ms, now, request.delivery_id,
        request.head_sha or "", request.pr_number if request.pr_number is not None else "",
        int(SHA_TTL.total_seconds()), announce)
    try:  # EVALSHA: the script's text crosses the wire once per server
        answer = await redis.execute_command("EVALSHA", _ACCEPT_SHA, 6, *keys_and_args)  # type: ignore[no-untyped-call]
    except NoScriptError:
        await redis.execute_command("SCRIPT LOAD", _ACCEPT)  # type: ignore[no-untyped-call]
        answer = await redis.execute_command("EVALSHA", _ACCEPT_SHA, 6, *keys_and_args)  # type: ignore[no-untyped-call]
    outcomes: tuple[Accepted, ...] = ("duplicate", "already queued", "queued")
    return outcomes[int(answer)]
