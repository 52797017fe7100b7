"""Metrics and logs of a real webhook → queue → worker → review round trip."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import httpx
import structlog
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from app.logs import REDACTED, configure
from app.metrics import UnsetGauge, queue_label
from tests.app.conftest import INSTALLATION, PR, REPO, SECRET, Harness, pr_payload

STAGES_WITHOUT_SANDBOX = ("clone", "prepare", "detectives", "judges", "publish", "total")
ROOT = Path(__file__).resolve().parents[2]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        answer = await client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(answer.text) for s in family.samples}


async def test_metrics_count_webhooks_queue_depth_stages_and_github_calls(harness: Harness) -> None:
    queue = queue_label(harness.settings.queue_name)
    before = await scrape(harness.url)

    def delta(after: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    payload = pr_payload("opened.payload.json", head=harness.repo.head, base=harness.repo.base)
    assert (await harness.post("pull_request", payload)).status_code == 202
    assert (await harness.post("pull_request", payload, signature="sha256=" + "0" * 64)).status_code == 401
    assert (await harness.post("ping", {"zen": "Keep it logically awesome."})).status_code == 200
    assert (await harness.post("x-made-up-by-the-sender", {"a": 1})).status_code == 202

    after = await scrape(harness.url)
    assert delta(after, "logomesh_webhooks_total", event="pull_request", outcome="queued") == 1
    assert delta(after, "logomesh_webhooks_total", event="pull_request", outcome="http_401") == 1
    assert delta(after, "logomesh_webhooks_total", event="ping", outcome="pong") == 1
    # a sender's made-up event name never becomes a label of its own
    assert delta(after, "logomesh_webhooks_total", event="other", outcome="ignored") == 1
    assert not any(labels and dict(labels).get("event") == "x-made-up-by-the-sender" for _, labels in after)
    assert after[("logomesh_queue_depth", (("queue", queue),))] == 1

    stages = {s: sample("logomesh_job_stage_seconds_count", stage=s) for s in STAGES_WITHOUT_SANDBOX}
    cis = sum(sample("logomesh_cis_count", verdict=v) for v in ("pass", "neutral", "fail"))
    reviewed = sample("logomesh_jobs_total", outcome="reviewed")
    github_posts = sample("logomesh_github_requests_total", method="POST", status="201")
    await harness.run_worker()

    for name, count in stages.items():
        assert sample("logomesh_job_stage_seconds_count", stage=name) == count + 1, name
    assert sum(sample("logomesh_cis_count", verdict=v) for v in ("pass", "neutral", "fail")) == cis + 1
    assert sample("logomesh_jobs_total", outcome="reviewed") == reviewed + 1
    # token, check run, comment: at least three 201s from GitHub
    assert sample("logomesh_github_requests_total", method="POST", status="201") >= github_posts + 3
    final = await scrape(harness.url)
    assert final[("logomesh_queue_depth", (("queue", queue),))] == 0


async def test_logs_are_json_lines_with_bound_context_and_never_a_secret(harness: Harness) -> None:
    stream = io.StringIO()
    configure(harness.settings, stream=stream)
    try:
        payload = pr_payload("opened.payload.json", head=harness.repo.head, base=harness.repo.base)
        delivery = str(uuid.uuid4())
        assert (await harness.post("pull_request", payload, delivery=delivery)).status_code == 202
        assert (await harness.post("pull_request", payload, signature="sha256=" + "1" * 64)).status_code == 401
        await harness.run_worker()
        tokens = list(harness.github.tokens)
        assert tokens, "the worker minted no installation token"
        # a careless log line elsewhere must still come out scrubbed
        log = structlog.get_logger("logomesh.test")
        log.error("careless", header=f"Authorization: token {tokens[0]}", secret=SECRET,
                  nested={"pem": harness.settings.private_key_pem()})
        logging.getLogger("some.library").warning("git said: https://x-access-token:%s@github", tokens[0])
    finally:
        root = logging.getLogger()
        for handler in list(root.handlers):
            if getattr(handler, "_logomesh", False):
                root.removeHandler(handler)
        structlog.reset_defaults()

    text = stream.getvalue()
    events = [json.loads(line) for line in text.splitlines()]
    assert events and all("event" in e and "timestamp" in e and "level" in e for e in events)
    queued = next(e for e in events if e["event"] == "queued" and e.get("delivery_id") == delivery)
    reviewed = next(e for e in events if e["event"] == "reviewed" and e.get("delivery_id") == delivery)
    for event in (queued, reviewed):
        assert event["installation_id"] == INSTALLATION
        assert event["repo"] == REPO and event["pr"] == PR
        assert event["head_sha"] == harness.repo.head
        assert event["job_id"] == delivery

    secrets = [SECRET, *tokens, *[line for line in harness.settings.private_key_pem().splitlines()
                                  if len(line) >= 40 and "-----" not in line]]
    for secret in secrets:
        assert secret not in text
    careless = next(e for e in events if e["event"] == "careless")
    assert careless["secret"] == REDACTED and REDACTED in careless["header"]
    assert any(REDACTED in e["event"] for e in events if e.get("logger") == "some.library")


def samples(text: str) -> dict[str, float]:
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_rate_limit_gauge_has_no_sample_until_github_answered() -> None:
    """A 0 before the first GitHub call would fire every ``remaining < 100`` alert in a fresh process."""
    code = textwrap.dedent("""
        from prometheus_client import generate_latest
        from app.metrics import observe_github
        print(generate_latest().decode(), "---")
        observe_github("GET", None)  # a call that never got an answer
        observe_github("GET", 502, {"content-type": "text/html"})  # an answer without the header
        print(generate_latest().decode(), "---")
        observe_github("GET", 200, {"x-ratelimit-remaining": "4321"})
        print(generate_latest().decode())
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    fresh, unanswered, answered = result.stdout.split("---")
    name = "logomesh_github_rate_limit_remaining"
    assert f"# TYPE {name} gauge" in fresh  # described, so a dashboard finds it, but no value
    assert name not in samples(fresh)
    assert name not in samples(unanswered)
    assert samples(answered)[name] == 4321


def test_an_unset_gauge_exports_only_what_was_set() -> None:
    registry = CollectorRegistry()
    gauge = UnsetGauge("example_remaining", "An example.", registry=registry)
    assert gauge.get() is None and "example_remaining" not in samples(generate_latest(registry).decode())
    gauge.set(0)  # a real 0 is exported: only "never set" is absent
    assert samples(generate_latest(registry).decode())["example_remaining"] == 0
    gauge.set(17)
    assert samples(generate_latest(registry).decode())["example_remaining"] == 17
