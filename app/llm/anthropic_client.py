"""The Anthropic adapter: one forced tool call through the official ``anthropic`` SDK, retried, budgeted.

- Structured output: the request declares one tool whose ``input_schema`` is the pydantic JSON Schema of the
  answer and forces it with ``tool_choice``; the court validates the input again with pydantic.
- Sampling: SDK 2.x speaks API version 2026-10-21, which rejects ``temperature``/``top_p``/``top_k`` at any
  value (HTTP 400), so none is sent. Determinism of the *score* comes from the Chief Justice's bounds, not
  from sampling.
- Retries are ours (the SDK's are off): exponential backoff with jitter on connection errors, timeouts, 408,
  409, 429, 5xx and 529 (overloaded), honouring ``retry-after-ms``/``retry-after`` and ``x-should-retry``.
- Budget: every request reserves its worst case (estimated input + ``max_tokens``) against the review's
  :class:`ReviewBudget` before it is sent, and settles the real usage after.

Raises the court's errors (checks.errors)::

    LLMError               a non-retryable refusal (400, 401, 403, 404, 413, 422 …; a malformed response)
    ├── LLMUnavailable     unreachable, timed out, or still 429/5xx/529 after the last retry; ``attempts``
    └── LLMBudgetExceeded  the next request would overspend the review's tokens or dollars; ``spent``
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic

from app.metrics import LLM_TOKENS
from checks.errors import LLMBudgetExceeded, LLMError, LLMUnavailable
from checks.llm_types import LLMReply, LLMRequest, LLMUsage

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
CHARS_PER_TOKEN = 3  # conservative: over-estimating input keeps the reservation on the safe side

SleepFn = Callable[[float], Awaitable[None]]


@dataclass
class ReviewBudget:
    """Tokens and dollars one review may spend across all its judges, reserved before each request."""

    max_tokens: int
    max_usd: float
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    spent_input: int = 0
    spent_output: int = 0
    reserved_tokens: int = 0
    reserved_usd: float = 0.0
    _log: list[str] = field(default_factory=list)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_usd_per_mtok + output_tokens * self.output_usd_per_mtok) / 1_000_000

    @property
    def spent_usd(self) -> float:
        return self.cost(self.spent_input, self.spent_output)

    def reserve(self, input_tokens: int, output_tokens: int) -> tuple[int, float]:
        tokens = input_tokens + output_tokens
        usd = self.cost(input_tokens, output_tokens)
        spent_tokens = self.spent_input + self.spent_output
        if spent_tokens + self.reserved_tokens + tokens > self.max_tokens \
                or self.spent_usd + self.reserved_usd + usd > self.max_usd:
            raise LLMBudgetExceeded(
                f"the review's LLM budget ({self.max_tokens} tokens, ${self.max_usd:.2f}) would be exceeded",
                spent={"tokens": float(spent_tokens), "usd": round(self.spent_usd, 6)})
        self.reserved_tokens += tokens
        self.reserved_usd += usd
        return tokens, usd

    def settle(self, reservation: tuple[int, float], usage: LLMUsage | None) -> None:
        self.reserved_tokens -= reservation[0]
        self.reserved_usd -= reservation[1]
        if usage is not None:
            self.spent_input += usage.input_tokens
            self.spent_output += usage.output_tokens
            LLM_TOKENS.labels("input").inc(usage.input_tokens)
            LLM_TOKENS.labels("output").inc(usage.output_tokens)


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


class AnthropicClient:
    """An :class:`~checks.protocols.LLMClient` on Anthropic's Messages API. Born per review, closed after."""

    provider = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        budget: ReviewBudget,
        base_url: str = "https://api.anthropic.com",
        timeout_seconds: float = 60.0,
        max_tokens: int = 2048,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        retry_after_max: float = 60.0,
        sleep: SleepFn = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.model_id = model
        self.budget = budget
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self._sleep = sleep
        self._jitter = jitter
        # max_retries=0: retrying is ours, so the budget and the retry-after cap see every attempt.
        self._sdk = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, timeout=timeout_seconds,
                                             max_retries=0)

    async def aclose(self) -> None:
        await self._sdk.close()

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with equal jitter for retry number ``attempt`` (0-based)."""
        ceiling = min(self.backoff_max, self.backoff_base * (2.0 ** attempt))
        return ceiling / 2 + self._jitter() * ceiling / 2

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "max_tokens": self.max_tokens,
            "system": request.system,
            "messages": [{"role": t.role, "content": t.text} for t in request.turns],
            "tools": [{"name": request.tool_name, "description": request.tool_description,
                       "input_schema": request.input_schema}],
            "tool_choice": {"type": "tool", "name": request.tool_name, "disable_parallel_tool_use": True},
        }

    def _estimate_input(self, params: dict[str, Any]) -> int:
        return len(json.dumps(params, ensure_ascii=False)) // CHARS_PER_TOKEN + 1

    async def complete(self, request: LLMRequest) -> LLMReply:
        params = self._params(request)
        estimate = self._estimate_input(params)
        last: str = "no attempt"
        status: int | None = None
        for attempt in range(self.max_retries + 1):
            reservation = self.budget.reserve(estimate, self.max_tokens)
            try:
                message = await self._sdk.messages.create(**params)
            except anthropic.APIStatusError as exc:
                self.budget.settle(reservation, None)
                status = exc.status_code
                last = f"HTTP {status} {exc.type or ''}".strip()
                should = exc.response.headers.get("x-should-retry")
                retryable = should == "true" or (should != "false" and
                                                 (status in RETRYABLE_STATUS or status >= 500))
                if not retryable:
                    raise LLMError(f"{request.purpose}: Anthropic refused the request ({last})",
                                   status_code=status, attempts=attempt + 1) from exc
                wait = retry_after_seconds(exc.response.headers)
            except anthropic.APITimeoutError as exc:
                self.budget.settle(reservation, None)
                status, last, wait = None, "timed out", None
                if attempt == self.max_retries:
                    raise LLMUnavailable(f"Anthropic timed out after {attempt + 1} attempt(s)",
                                         attempts=attempt + 1) from exc
            except anthropic.APIConnectionError as exc:
                self.budget.settle(reservation, None)
                status, last, wait = None, "connection failed", None
                if attempt == self.max_retries:
                    raise LLMUnavailable(f"Anthropic unreachable after {attempt + 1} attempt(s)",
                                         attempts=attempt + 1) from exc
            except (anthropic.AnthropicError, ValueError) as exc:
                # A malformed response (the SDK's JSON decoding raises ValueError) or a client-side refusal:
                # no retry can fix it.
                self.budget.settle(reservation, None)
                raise LLMError(f"{request.purpose}: the Anthropic SDK failed ({type(exc).__name__})",
                               attempts=attempt + 1) from exc
            else:
                try:
                    usage = LLMUsage(input_tokens=message.usage.input_tokens,
                                     output_tokens=message.usage.output_tokens)
                    reply = self._reply(message, request, usage, attempt + 1)
                except (AttributeError, TypeError, ValueError) as exc:
                    # The SDK builds responses leniently; a body without the Message fields surfaces here.
                    self.budget.settle(reservation, None)
                    raise LLMError(f"{request.purpose}: Anthropic sent a malformed message ({type(exc).__name__})",
                                   attempts=attempt + 1) from exc
                self.budget.settle(reservation, usage)
                return reply
            if attempt == self.max_retries:
                break
            if wait is not None and wait > self.retry_after_max:
                raise LLMUnavailable(f"Anthropic asked to wait {wait:.0f}s ({last})", status_code=status,
                                     attempts=attempt + 1)
            await self._sleep(wait if wait is not None else self.backoff(attempt))
        raise LLMUnavailable(f"Anthropic still failing after {self.max_retries + 1} attempt(s) ({last})",
                             status_code=status, attempts=self.max_retries + 1)

    @staticmethod
    def _reply(message: Any, request: LLMRequest, usage: LLMUsage, attempts: int) -> LLMReply:
        tool_input: dict[str, Any] | None = None
        texts: list[str] = []
        for block in message.content:
            if block.type == "tool_use" and block.name == request.tool_name and tool_input is None:
                tool_input = block.input if isinstance(block.input, dict) else None
            elif block.type == "text":
                texts.append(block.text)
        return LLMReply(response_id=message.id, model=message.model, tool_input=tool_input, text="\n".join(texts),
                        stop_reason=message.stop_reason, usage=usage, attempts=attempts)
