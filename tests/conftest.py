"""Fixtures shared across test packages: the fake Anthropic Messages API (one loopback server per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.judges.fake_anthropic import FakeAnthropic, FakeAnthropicServer


@pytest.fixture(scope="session")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    server = FakeAnthropicServer(FakeAnthropic())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fake(anthropic_server: FakeAnthropicServer) -> FakeAnthropic:
    """The session's fake Anthropic, reset: no scripts, no recorded requests, default answers."""
    anthropic_server.fake.reset()
    return anthropic_server.fake
