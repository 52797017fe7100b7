"""The queue between the receiver and the worker: arq on Redis, plus the few Redis keys both sides share.

arq keeps a job's result under its id and silently refuses a second job with the same id, so a job id of
``repo#pr@sha`` would drop a ``/recheck`` of an already reviewed head. The job id is the **delivery id**
(unique per webhook; a redelivery is a replay we want dropped) and the worker serialises per PR with a lock.

Keys (all under ``settings.redis_prefix``)::

    delivery:<id>            SET NX, TTL ≥ 30 days: a delivery we already accepted
    latest:<owner/repo>#<n>  the newest head SHA announced for a PR (supersede)
    sha:<owner/repo>@<sha>   the PR a head SHA belongs to (check runs of forks carry no pull_requests)
    lock:<owner/repo>#<n>    held by the worker reviewing that PR
    publication:<job id>     a decision made and recorded (DBOM) but not yet published: retries publish it
    outage:<job id>          when this job first met a GitHub outage, and how often it retried since
    run:<job id>             the check run this job created (so a try that cannot even read the PR completes it)
    installation:<id>        what we know about an installation
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from arq.connections import ArqRedis, RedisSettings
from arq.jobs import Job

from app.routing import ReviewRequest
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

    def run(self, job_id: str) -> str:
        return f"{self.prefix}run:{job_id}"

    def installation(self, installation_id: int) -> str:
        return f"{self.prefix}installation:{installation_id}"

    def health(self) -> str:
        return f"{self.prefix}health-check"


def redis_settings(settings: Settings) -> RedisSettings:
    return RedisSettings.from_dsn(settings.redis_url)


async def enqueue_review(redis: ArqRedis, settings: Settings, request: ReviewRequest) -> Job | None:
    """Announce the head (for supersede and SHA → PR mapping) and enqueue; None if arq already has the job."""
    keys = Keys(settings.redis_prefix)
    if request.pr_number is not None and request.head_sha is not None:
        async with redis.pipeline(transaction=True) as pipe:
            if request.kind == "review":
                pipe.set(keys.latest(request.repo, request.pr_number), request.head_sha, ex=SHA_TTL)
            pipe.set(keys.sha(request.repo, request.head_sha), str(request.pr_number), ex=SHA_TTL)
            await pipe.execute()
    return await redis.enqueue_job(JOB_NAME, request.to_dict(), _job_id=request.delivery_id,
                                   _queue_name=settings.queue_name)
