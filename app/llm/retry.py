"""Retries every LLM adapter shares: which failures are worth another attempt, how long to wait, when to stop.

An adapter's ``send(attempt)`` makes one HTTP attempt and either returns ``(reply, usage)``, raises
:class:`Transient` (a failure a later attempt may not meet: connection, timeout, 408/409/429/5xx/529), or raises
the court's :class:`~checks.errors.LLMError` (a refusal no retry can fix). :meth:`RetryPolicy.run` reserves the
worst case against the review's budget before each attempt, settles after, and waits between attempts with
exponential backoff and equal jitter (0.5 s doubling, capped at 8 s) — or for as long as the server asks with
``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date); ``x-should-retry`` overrides the status. A
requested wait above ``retry_after_max`` ends the attempts at once.

Raises the court's errors (checks.errors)::

    LLMError               raised by ``send`` as it is: a refusal or a malformed response
    ├── LLMUnavailable     unreachable, timed out, or still failing after the last retry; ``attempts``
    └── LLMBudgetExceeded  the next attempt would overspend the review's tokens or dollars; ``spent``
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from app.llm.budget import ReviewBudget
from checks.errors import LLMUnavailable
from checks.llm_types import LLMUsage

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

SleepFn = Callable[[float], Awaitable[None]]
T = TypeVar("T")


def retry_after_seconds(headers: Any) -> float | None:
    """The server's requested wait: ``retry-after-ms``, then ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def should_retry(status: int, headers: Any) -> bool:
    """Whether an HTTP error status is worth another attempt; the server's ``x-should-retry`` wins."""
    should = headers.get("x-should-retry") if headers is not None else None
    return should == "true" or (should != "false" and (status in RETRYABLE_STATUS or status >= 500))


class Transient(Exception):
    """One attempt failed in a way the next may not; ``kind`` says how, ``wait`` is the server's requested wait."""

    def __init__(self, reason: str, *, kind: Literal["status", "timeout", "connection"], status: int | None = None,
                 wait: float | None = None) -> None:
        self.reason = reason
        self.kind = kind
        self.status = status
        self.wait = wait
        super().__init__(reason)

    @classmethod
    def from_status(cls, status: int, reason: str, headers: Any) -> Transient:
        return cls(reason, kind="status", status=status, wait=retry_after_seconds(headers))


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently one adapter retries; ``sleep`` and ``jitter`` are injectable for tests."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    retry_after_max: float = 60.0
    sleep: SleepFn = asyncio.sleep
    jitter: Callable[[], float] = random.random

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with equal jitter for retry number ``attempt`` (0-based)."""
        ceiling = min(self.backoff_max, self.backoff_base * (2.0 ** attempt))
        return ceiling / 2 + self.jitter() * ceiling / 2

    async def run(self, send: Callable[[int], Awaitable[tuple[T, LLMUsage]]], *, budget: ReviewBudget,
                  estimate: int, max_tokens: int, provider: str) -> T:
        """``send(attempts)`` until it answers, each attempt reserved against ``budget``; ``provider`` names the
        service in errors ("Anthropic", "openai at http://…")."""
        last = "no attempt"
        status: int | None = None
        for attempt in range(self.max_retries + 1):
            reservation = budget.reserve(estimate, max_tokens)
            try:
                reply, usage = await send(attempt + 1)
            except Transient as exc:
                budget.settle(reservation, None)
                status, last, wait = exc.status, exc.reason, exc.wait
                if attempt == self.max_retries and exc.kind == "timeout":
                    raise LLMUnavailable(f"{provider} timed out after {attempt + 1} attempt(s)",
                                         attempts=attempt + 1) from exc
                if attempt == self.max_retries and exc.kind == "connection":
                    raise LLMUnavailable(f"{provider} unreachable after {attempt + 1} attempt(s)",
                                         attempts=attempt + 1) from exc
            except BaseException:
                budget.settle(reservation, None)
                raise
            else:
                budget.settle(reservation, usage)
                return reply
            if attempt == self.max_retries:
                break
            if wait is not None and wait > self.retry_after_max:
                raise LLMUnavailable(f"{provider} asked to wait {wait:.0f}s ({last})", status_code=status,
                                     attempts=attempt + 1)
            await self.sleep(wait if wait is not None else self.backoff(attempt))
        raise LLMUnavailable(f"{provider} still failing after {self.max_retries + 1} attempt(s) ({last})",
                             status_code=status, attempts=self.max_retries + 1)
