"""Fixtures for the operations tests: real Redis, real arq workers, real subprocesses of the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

REDIS_URL = os.environ.get("LOGOMESH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_github_jwts() -> Iterator[None]:
    # githubkit caches App JWTs per app id for the process; this directory's App key differs from tests/app's
    from githubkit.cache import DEFAULT_CACHE_STRATEGY

    DEFAULT_CACHE_STRATEGY.cleanup()
    yield
    DEFAULT_CACHE_STRATEGY.cleanup()


@pytest.fixture
def prefix() -> str:
    return f"logomesh-ops:{uuid.uuid4().hex[:12]}:"


@pytest.fixture
async def redis(prefix: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.from_url(REDIS_URL)  # type: ignore[no-untyped-call]
    try:
        yield client
    finally:
        keys = [k async for k in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


def cli(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``logomesh …`` in a fresh interpreter, with this worktree's code first on the path."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "app.cli.main", *args], capture_output=True, text=True, env=full,
                          timeout=timeout, cwd=ROOT)


# the App's end-to-end harness (real uvicorn + Redis + git, fake GitHub on loopback), shared with tests/app
from tests.app.conftest import app_key, github, harness, repo, settings  # noqa: E402,F401
