"""The Anthropic adapter: one forced tool call through the official ``anthropic`` SDK, retried, budgeted.

- Structured output: the request declares one tool whose ``input_schema`` is the pydantic JSON Schema of the
  answer and forces it with ``tool_choice``; the court validates the input again with pydantic.
- Sampling: SDK 2.x speaks API version 2026-10-21, which rejects ``temperature``/``top_p``/``top_k`` at any
  value (HTTP 400; the SDK has dropped the parameters), and the Messages API has never taken a ``seed``, so
  none is sent and every reply records ``sampling={}``. Determinism of the *score* comes from the Chief
  Justice's bounds, not from sampling.
- Retries are ours (the SDK's are off), shared with every provider (:mod:`app.llm.retry`): exponential backoff
  with jitter on connection errors, timeouts, 408, 409, 429, 5xx and 529 (overloaded), honouring
  ``retry-after-ms``/``retry-after`` and ``x-should-retry``.
- Budget (:mod:`app.llm.budget`): every request reserves its worst case (estimated input + ``max_tokens``)
  against the review's :class:`ReviewBudget` before it is sent, and settles the real usage after.

Raises the court's errors (checks.errors)::

    LLMError               a non-retryable refusal (400, 401, 403, 404, 413, 422 …; a malformed response)
    ├── LLMUnavailable     unreachable, timed out, or still 429/5xx/529 after the last retry; ``attempts``
    └── LLMBudgetExceeded  the next request would overspend the review's tokens or dollars; ``spent``
"""

from __future__ import annotations

from typing import Any

import anthropic

from app.llm.budget import CHARS_PER_TOKEN, ReviewBudget, estimate_tokens
from app.llm.retry import RETRYABLE_STATUS, RetryPolicy, Transient, retry_after_seconds, should_retry
from checks.errors import LLMError
from checks.llm_types import LLMReply, LLMRequest, LLMUsage

# re-exported: the budget and the retry helpers lived here before the provider seam (app/llm/budget.py, retry.py)
__all__ = ["CHARS_PER_TOKEN", "RETRYABLE_STATUS", "AnthropicClient", "ReviewBudget", "retry_after_seconds"]


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
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model_id = model
        self.budget = budget
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()  # the backoff and the retry-after cap, shared by the providers
        # max_retries=0: retrying is ours, so the budget and the retry-after cap see every attempt.
        self._sdk = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, timeout=timeout_seconds,
                                             max_retries=0)

    async def aclose(self) -> None:
        await self._sdk.close()

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with equal jitter for retry number ``attempt`` (0-based)."""
        return self.retry.backoff(attempt)

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
        return estimate_tokens(params)

    async def complete(self, request: LLMRequest) -> LLMReply:
        params = self._params(request)

        async def send(attempts: int) -> tuple[LLMReply, LLMUsage]:
            try:
                message = await self._sdk.messages.create(**params)
            except anthropic.APIStatusError as exc:
                status = exc.status_code
                last = f"HTTP {status} {exc.type or ''}".strip()
                if not should_retry(status, exc.response.headers):
                    raise LLMError(f"{request.purpose}: Anthropic refused the request ({last})",
                                   status_code=status, attempts=attempts) from exc
                raise Transient.from_status(status, last, exc.response.headers) from exc
            except anthropic.APITimeoutError as exc:
                raise Transient("timed out", kind="timeout") from exc
            except anthropic.APIConnectionError as exc:
                raise Transient("connection failed", kind="connection") from exc
            except (anthropic.AnthropicError, ValueError) as exc:
                # A malformed response (the SDK's JSON decoding raises ValueError) or a client-side refusal:
                # no retry can fix it.
                raise LLMError(f"{request.purpose}: the Anthropic SDK failed ({type(exc).__name__})",
                               attempts=attempts) from exc
            try:
                usage = LLMUsage(input_tokens=message.usage.input_tokens,
                                 output_tokens=message.usage.output_tokens)
                return self._reply(message, request, usage, attempts), usage
            except (AttributeError, TypeError, ValueError) as exc:
                # The SDK builds responses leniently; a body without the Message fields surfaces here.
                raise LLMError(f"{request.purpose}: Anthropic sent a malformed message ({type(exc).__name__})",
                               attempts=attempts) from exc

        return await self.retry.run(send, budget=self.budget, estimate=self._estimate_input(params),
                                    max_tokens=self.max_tokens, provider="Anthropic")

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
