"""Prometheus metrics of the receiver and the worker (prometheus-client, the process-wide default registry).

The receiver serves them at ``GET /metrics``; a worker serves its own on ``LOGOMESH_METRICS_PORT`` (each
process counts what it does: scrape both). Labels are bounded sets — never a repository, PR or installation,
whose number grows with the customers.

======================================  =========  ===================================================
name                                    type       labels
======================================  =========  ===================================================
logomesh_webhooks_total                 counter    event, outcome
logomesh_queue_depth                    gauge      queue (read from Redis at scrape time)
logomesh_job_stage_seconds              histogram  stage: clone, prepare, detectives, sandbox, red_agent,
                                                   judges, publish, total
logomesh_jobs_total                     counter    outcome: reviewed, superseded, failed, ignored, refused,
                                                   retried, cancelled
logomesh_cis                            histogram  verdict
logomesh_github_requests_total          counter    method, status
logomesh_github_rate_limit_remaining    gauge      (the last answer's X-RateLimit-Remaining; absent until
                                                   an answer carried it)
logomesh_llm_tokens_total               counter    kind: input, output
======================================  =========  ===================================================
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import MetricsHandler
from prometheus_client.metrics_core import GaugeMetricFamily
from prometheus_client.registry import Collector

from checks.models import Brief, Case, Deliberation, JudicialOpinion, ProbeResult, RedAnalysis, TestRunResult, TestSpec
from rubric import Rubric

log = structlog.get_logger("logomesh.metrics")

STAGES = ("clone", "prepare", "detectives", "sandbox", "red_agent", "judges", "publish", "total")
_STAGE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)


class UnsetGauge(Collector):
    """A gauge without labels that exports no sample until it is set.

    A ``Gauge`` starts at 0, which an alert on ``logomesh_github_rate_limit_remaining < 100`` reads as an
    exhausted rate limit in every process that has not called GitHub yet (a fresh worker, the receiver). Absent,
    the series makes no alert fire and ``absent()`` can still tell "never set" apart.
    """

    def __init__(self, name: str, documentation: str, registry: CollectorRegistry | None = REGISTRY) -> None:
        self.name, self.documentation = name, documentation
        self._value: float | None = None
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def set(self, value: float) -> None:
        with self._lock:
            self._value = float(value)

    def get(self) -> float | None:
        with self._lock:
            return self._value

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(self.name, self.documentation)]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation)
        if (value := self.get()) is not None:
            family.add_metric([], value)
        yield family


WEBHOOKS = Counter("logomesh_webhooks", "Webhook deliveries received, by event and outcome.", ["event", "outcome"])
QUEUE_DEPTH = Gauge("logomesh_queue_depth", "Jobs waiting in the arq queue (due or deferred).", ["queue"])
STAGE_SECONDS = Histogram("logomesh_job_stage_seconds", "Time a review spends in each stage.", ["stage"],
                          buckets=_STAGE_BUCKETS)
JOBS = Counter("logomesh_jobs", "Review jobs by how they ended.", ["outcome"])
CIS = Histogram("logomesh_cis", "Contextual Integrity Scores of completed reviews.", ["verdict"],
                buckets=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0))
GITHUB_REQUESTS = Counter("logomesh_github_requests", "Calls to the GitHub REST API.", ["method", "status"])
GITHUB_RATE_REMAINING = UnsetGauge("logomesh_github_rate_limit_remaining",
                                   "X-RateLimit-Remaining of the last GitHub answer that carried it.")
LLM_TOKENS = Counter("logomesh_llm_tokens", "Tokens used by the LLM judges.", ["kind"])


def queue_label(queue_name: str) -> str:
    """The ``queue`` label: ``logomesh:queue`` → ``logomesh`` (a Kubernetes label value has no colons, and the
    HPA selects on it)."""
    return queue_name.removesuffix(":queue").replace(":", "-") or "default"


_server_lock = threading.Lock()
_server_port: int | None = None
# set once the worker's start-up is done (model loaded, sandbox image checked): until then it is not ready
WORKER_READY = threading.Event()
_unready = ["starting: waiting for the Docker engine, loading the model and the sandbox image"]


def worker_unready(reason: str) -> None:
    """The worker's ``/readyz`` answers 503 with ``reason`` (e.g. the DBOM ledger accepts no writes)."""
    _unready[0] = reason
    WORKER_READY.clear()


def worker_ready() -> None:
    WORKER_READY.set()


class _WorkerHandler(MetricsHandler):
    """``/metrics`` as Prometheus serves it, plus ``/healthz`` (the process answers) and ``/readyz`` (start-up
    finished: the embedding model is loaded and the sandbox image checked, so a job taken now starts at once)."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/healthz", "/readyz"):
            ready = path == "/healthz" or WORKER_READY.is_set()
            body = b"ok\n" if ready else (_unready[0] + "\n").encode()
            self.send_response(200 if ready else 503)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve_worker_metrics(port: int, addr: str = "0.0.0.0") -> int | None:  # noqa: S104 - a pod's own port
    """Start the worker's metrics endpoint once per process; a port already in use is logged, not fatal."""
    global _server_port
    if port == 0:
        return None
    with _server_lock:
        if _server_port is None:
            try:
                server = ThreadingHTTPServer((addr, port), _WorkerHandler)
                threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
            except OSError as exc:
                log.warning("metrics port unavailable; this worker exports no metrics", port=port, error=str(exc))
                return None
            _server_port = port
        return _server_port


@contextmanager
def stage(name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        STAGE_SECONDS.labels(name).observe(time.perf_counter() - started)


def observe_github(method: str, status: int | None, headers: Any = None) -> None:
    GITHUB_REQUESTS.labels(method, str(status) if status is not None else "error").inc()
    remaining = headers.get("x-ratelimit-remaining") if headers is not None else None
    if isinstance(remaining, str) and remaining.isdigit():
        GITHUB_RATE_REMAINING.set(int(remaining))


class _Span:
    """Wall time from the first start to the last end of overlapping calls (the court runs them in parallel)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.first: float | None = None
        self.last: float | None = None

    @contextmanager
    def call(self) -> Iterator[None]:
        now = time.perf_counter()
        self.first = now if self.first is None else min(self.first, now)
        try:
            yield
        finally:
            self.last = time.perf_counter()

    def record(self) -> float | None:
        if self.first is None or self.last is None:
            return None
        elapsed = self.last - self.first
        STAGE_SECONDS.labels(self.name).observe(elapsed)
        return elapsed


class TimedSandbox:
    def __init__(self, inner: Any, span: _Span) -> None:
        self._inner, self._span = inner, span

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        with self._span.call():
            return await self._inner.run_tests(spec)  # type: ignore[no-any-return]

    async def run_probe(self, code: str, timeout_seconds: float, runtime: str = "python",
                        beside: str | None = None) -> ProbeResult:
        with self._span.call():
            return await self._inner.run_probe(code, timeout_seconds, runtime,  # type: ignore[no-any-return]
                                                 beside)


class TimedRedTeam:
    def __init__(self, inner: Any, span: _Span) -> None:
        self._inner, self._span = inner, span

    async def attack(self, case: Case, rubric: Rubric, sandbox: Any) -> RedAnalysis:
        with self._span.call():
            return await self._inner.attack(case, rubric, sandbox)  # type: ignore[no-any-return]


class TimedJudge:
    def __init__(self, inner: Any, span: _Span) -> None:
        self._inner, self._span = inner, span
        self.persona: str = inner.persona

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def deliberate(self, brief: Brief, rubric: Rubric) -> list[JudicialOpinion] | Deliberation:
        with self._span.call():
            return await self._inner.deliberate(brief, rubric)  # type: ignore[no-any-return]


class CourtTimer:
    """Wraps a review's parts so that the sandbox, the red agent and the judges report their wall time;
    ``detectives`` is the time from the start of the review to the first judge (the detectives' phase)."""

    def __init__(self) -> None:
        self.sandbox = _Span("sandbox")
        self.red_agent = _Span("red_agent")
        self.judges = _Span("judges")
        self.started = time.perf_counter()

    def wrap(self, parts: Any) -> None:
        self.started = time.perf_counter()
        if parts.sandbox is not None:
            parts.sandbox = TimedSandbox(parts.sandbox, self.sandbox)
        if parts.red_team is not None:
            parts.red_team = TimedRedTeam(parts.red_team, self.red_agent)
        parts.judges = [TimedJudge(j, self.judges) for j in parts.judges]

    def record(self) -> dict[str, float]:
        seen: dict[str, float] = {}
        if self.judges.first is not None:
            seen["detectives"] = self.judges.first - self.started
            STAGE_SECONDS.labels("detectives").observe(seen["detectives"])
        for span in (self.sandbox, self.red_agent, self.judges):
            if (elapsed := span.record()) is not None:
                seen[span.name] = elapsed
        return seen


def judge_names(judges: Sequence[Any]) -> list[str]:
    return [j.persona for j in judges]
