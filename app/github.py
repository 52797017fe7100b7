"""The one adapter between LogoMesh and the GitHub REST API (github.com or GHES, by base URL).

githubkit does the App authentication (a JWT signed with the App's key) and the HTTP; this module adds what a
bot needs on top: installation tokens cached and refreshed well before their 1 h expiry, timeouts, retries
that honour ``retry-after`` / ``x-ratelimit-reset``, and mutating calls serialised per installation (GitHub's
advice against secondary rate limits).

Exceptions::

    GitHubError              a call failed; ``status`` (None: no answer), ``method``, ``path``
    ├── GitHubNotFound       404
    └── GitHubRetryable      5xx, secondary/primary rate limit, timeout; ``retry_after`` seconds
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.exception import RateLimitExceeded, RequestFailed, RequestTimeout
from githubkit.retry import RetryChainDecision, RetryRateLimit, RetryServerError

from app.logs import REDACTOR
from app.metrics import observe_github
from app.settings import Settings

TOKEN_REFRESH_MARGIN = timedelta(minutes=10)
MUTATING = frozenset({"POST", "PATCH", "PUT", "DELETE"})
MAX_RETRY_WAIT = 60.0


class GitHubError(RuntimeError):
    def __init__(self, method: str, path: str, status: int | None, message: str) -> None:
        self.method, self.path, self.status = method, path, status
        super().__init__(f"GitHub {method} {path} → {status if status is not None else 'no answer'}: {message}")


class GitHubNotFound(GitHubError):
    pass


class GitHubRetryable(GitHubError):
    def __init__(self, method: str, path: str, status: int | None, message: str, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(method, path, status, message)


def _retry_after(response: httpx.Response | None) -> float:
    """Seconds to wait, from ``retry-after`` or ``x-ratelimit-reset`` (GitHub's documented order)."""
    if response is None:
        return 5.0
    value = response.headers.get("retry-after")
    if value and value.strip().isdigit():
        return float(value)
    reset = response.headers.get("x-ratelimit-reset")
    if reset and reset.strip().isdigit() and response.headers.get("x-ratelimit-remaining") == "0":
        return max(1.0, float(reset) - time.time())
    return 5.0 if response.status_code < 500 else 2.0


@dataclass
class _Token:
    value: str
    expires_at: datetime


@dataclass
class GitHubApp:
    """Everything the worker asks of GitHub, for any installation. Create one per process (lifecycle hook)."""

    settings: Settings
    max_retries: int = 1
    _tokens: dict[int, _Token] = field(default_factory=dict)
    _token_locks: dict[int, asyncio.Lock] = field(default_factory=dict)
    _write_locks: dict[int, asyncio.Lock] = field(default_factory=dict)
    _bot_login: str | None = None

    async def bot_login(self) -> str:
        """The login GitHub gives this App's own comments (``<slug>[bot]``), asked once of ``GET /app``: whatever
        another app or user writes, only a comment by this login is LogoMesh's own."""
        if self._bot_login is None:
            data = await self._call(self._app_client(), "GET", "/app", installation_id=None)
            self._bot_login = f"{data['slug']}[bot]"
        return self._bot_login

    def _client(self, auth: Any) -> GitHub[Any]:
        retry = RetryChainDecision(RetryRateLimit(max_retry=self.max_retries),
                                   RetryServerError(max_retry=self.max_retries))
        return GitHub(auth, base_url=self.settings.github_api_url, timeout=self.settings.github_timeout_seconds,
                      auto_retry=retry, http_cache=False, user_agent="LogoMesh")

    def _app_client(self) -> GitHub[Any]:
        return self._client(AppAuthStrategy(str(self.settings.app_id), self.settings.private_key_pem()))

    async def installation_token(self, installation_id: int) -> str:
        """A token for ``installation_id``, cached and refreshed ``TOKEN_REFRESH_MARGIN`` before it expires."""
        lock = self._token_locks.setdefault(installation_id, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(installation_id)
            if cached is not None and cached.expires_at - TOKEN_REFRESH_MARGIN > datetime.now(UTC):
                return cached.value
            path = f"/app/installations/{installation_id}/access_tokens"
            data = await self._call(self._app_client(), "POST", path, installation_id=None)
            expires = datetime.strptime(data["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            REDACTOR.add(data["token"])
            self._tokens[installation_id] = _Token(data["token"], expires)
            return str(data["token"])

    async def request(self, installation_id: int, method: str, path: str, *, json: Any = None,
                      params: dict[str, Any] | None = None) -> Any:
        token = await self.installation_token(installation_id)
        return await self._call(self._client(TokenAuthStrategy(token)), method, path, json=json, params=params,
                                installation_id=installation_id)

    async def paginate(self, installation_id: int, path: str, params: dict[str, Any] | None = None,
                       *, key: str | None = None, max_pages: int = 10) -> AsyncIterator[Any]:
        for page in range(1, max_pages + 1):
            data = await self.request(installation_id, "GET", path, params={**(params or {}), "per_page": 100,
                                                                             "page": page})
            items = data[key] if key else data
            for item in items:
                yield item
            if len(items) < 100:
                return

    async def _call(self, client: GitHub[Any], method: str, path: str, *, json: Any = None,
                    params: dict[str, Any] | None = None, installation_id: int | None) -> Any:
        lock = (self._write_locks.setdefault(installation_id, asyncio.Lock())
                if method in MUTATING and installation_id is not None else None)
        try:
            if lock is not None:
                async with lock:
                    response = await client.arequest(method, path, json=json, params=params)
            else:
                response = await client.arequest(method, path, json=json, params=params)
        except RateLimitExceeded as exc:
            observe_github(method, exc.response.status_code, exc.response.headers)
            raise GitHubRetryable(method, path, exc.response.status_code, "rate limited",
                                  min(MAX_RETRY_WAIT, exc.retry_after.total_seconds())) from exc
        except RequestFailed as exc:
            status = exc.response.status_code
            observe_github(method, status, exc.response.headers)
            message = exc.response.text[:300]
            if status == 404:
                raise GitHubNotFound(method, path, status, message) from exc
            if status >= 500 or status == 429:
                raise GitHubRetryable(method, path, status, message, _retry_after(exc.response.raw_response)) \
                    from exc
            raise GitHubError(method, path, status, message) from exc
        except RequestTimeout as exc:
            observe_github(method, None)
            raise GitHubRetryable(method, path, None, "timed out", 5.0) from exc
        except httpx.HTTPError as exc:
            observe_github(method, None)
            raise GitHubRetryable(method, path, None, str(exc) or type(exc).__name__, 5.0) from exc
        observe_github(method, response.status_code, response.headers)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()
