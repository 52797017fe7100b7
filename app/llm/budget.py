"""What one review may spend on language models: tokens and dollars, across every judge, repair and retry.

A request reserves its worst case (estimated input + the output cap) before it is sent and settles the real usage
after, so judges running in parallel can never overspend together. Provider-independent: every adapter in
``app/llm`` holds the review's one :class:`ReviewBudget`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.metrics import LLM_TOKENS
from checks.errors import LLMBudgetExceeded
from checks.llm_types import LLMUsage

CHARS_PER_TOKEN = 3  # conservative: over-estimating input keeps the reservation on the safe side


def estimate_tokens(payload: Any) -> int:
    """A conservative token count of a JSON-able request body (``characters / 3``), before it is sent."""
    return len(json.dumps(payload, ensure_ascii=False)) // CHARS_PER_TOKEN + 1


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
