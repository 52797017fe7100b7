"""Property-based fuzz (hypothesis, bounded) of the webhook router, the receiver and ``.logomesh.yml``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.receiver.routing import ROUTES, Ignored, InstallationNote, ReviewRequest, route
from checks.config import RepoConfig, parse_repo_config
from checks.errors import ConfigError
from tests.app.conftest import Harness
from tests.hardening.conftest import Tally

pytestmark = pytest.mark.hardening("input")

KEYS = st.sampled_from(["action", "installation", "id", "repository", "full_name", "pull_request", "number",
                        "head", "base", "sha", "state", "draft", "changes", "title", "body", "issue", "comment",
                        "user", "login", "type", "check_run", "check_suite", "head_sha", "pull_requests",
                        "external_id", "requested_action", "identifier", "sender", "repositories",
                        "account"]) | st.text(max_size=8)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
                       max_leaves=30)
EVENT_ACTIONS = st.sampled_from(sorted(ROUTES)) | st.tuples(st.text(max_size=12), st.text(max_size=12))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event_action=EVENT_ACTIONS, payload=st.dictionaries(KEYS, JSONISH, max_size=8))
def test_the_router_answers_every_payload_without_raising(tally: Tally, event_action: tuple[str, str],
                                                          payload: dict[str, Any]) -> None:
    tally("router fuzz example")
    event, action = event_action
    payload = {**payload, "action": action} if action else payload
    outcome = route(event, payload, "fuzz-delivery")
    assert isinstance(outcome, ReviewRequest | InstallationNote | Ignored)
    if isinstance(outcome, ReviewRequest):
        assert isinstance(outcome.installation_id, int) and "/" in outcome.repo
        assert ReviewRequest.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome



CONFIG_KEYS = st.sampled_from(["version", "thresholds", "pass", "fail", "test", "command", "setup",
                               "timeout_seconds", "sandbox", "image", "ignore", "rejection_first", "rubric",
                               "sha256", "verdict", "memory_mb", "pids", "cpus", "testing"]) | st.text(max_size=6)
CONFIG_TREE = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(CONFIG_KEYS, inner,
                                                                                                   max_size=5),
                           max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300) | CONFIG_TREE.map(lambda tree: yaml.safe_dump(tree)))
def test_repo_config_parses_or_names_the_bad_field(tally: Tally, text: str) -> None:
    tally(".logomesh.yml fuzz example")
    try:
        config = parse_repo_config(text)
    except ConfigError as exc:
        assert exc.field and str(exc)
        return
    assert isinstance(config, RepoConfig) and config.sha256 is not None



@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=st.sampled_from(["pull_request", "issue_comment", "check_run", "check_suite", "installation", "ping",
                              "push", "x" * 40]),
       body=st.binary(max_size=200) | st.dictionaries(KEYS, JSONISH, max_size=6).map(lambda d: json.dumps(d).encode()),
       delivery=st.text(alphabet="abcdef0123456789-", min_size=1, max_size=36))
def test_the_receiver_never_answers_5xx(harness: Harness, tally: Tally, event: str, body: bytes,
                                       delivery: str) -> None:
    tally("receiver fuzz example (signed random body over HTTP)")
    async def post() -> httpx.Response:
        return await harness.post(event, body, delivery=delivery)

    answer = asyncio.run(post())
    assert answer.status_code in (200, 202, 400), (answer.status_code, answer.text)
    assert answer.headers["content-type"] == "application/json"

