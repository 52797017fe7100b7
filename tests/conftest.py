"""Fixtures shared across test packages: the fake Anthropic Messages API (one loopback server per session), and the
strict type check started in the background as soon as the session knows it will run it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.core.type_check import TypeCheck
from tests.judges.fake_anthropic import FakeAnthropic, FakeAnthropicServer

TYPE_CHECK = pytest.StashKey[TypeCheck]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """mypy over the whole tree takes minutes of one core: it runs niced beside the tests before its own."""
    if any(item.name == TypeCheck.TEST for item in session.items):
        session.config.stash[TYPE_CHECK] = TypeCheck.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    check = session.config.stash.get(TYPE_CHECK, None)
    if check is not None:
        check.stop()


@pytest.fixture
def type_check(request: pytest.FixtureRequest) -> TypeCheck:
    """The session's background type check, or one started now (a run that collected the test some other way)."""
    check = request.config.stash.get(TYPE_CHECK, None)
    if check is None:
        check = request.config.stash[TYPE_CHECK] = TypeCheck.start()
    return check


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
