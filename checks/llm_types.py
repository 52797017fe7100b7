"""What the court says to a language model and what it hears back: provider-neutral, plain data.

A request asks for exactly one call of one tool whose input must match a JSON Schema; the tool does nothing
but carry the answer (the judges hold no tool that acts). A reply carries that input, unvalidated, with the
provider's identifiers and the tokens it cost, so the record can say which answer a ruling rests on.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMTurn(_Frozen):
    role: Literal["user", "assistant"]
    text: str


class LLMRequest(_Frozen):
    purpose: str = Field(description="who asks, for logs and errors (a judge persona)")
    system: str
    turns: tuple[LLMTurn, ...]
    tool_name: str
    tool_description: str
    input_schema: dict[str, Any]


class LLMUsage(_Frozen):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(input_tokens=self.input_tokens + other.input_tokens,
                        output_tokens=self.output_tokens + other.output_tokens)


class LLMReply(_Frozen):
    response_id: str
    model: str
    tool_input: dict[str, Any] | None = Field(description="the forced tool's input; None if the model sent none")
    text: str = ""
    stop_reason: str | None = None
    usage: LLMUsage = LLMUsage()
    attempts: int = 1
    sampling: dict[str, int | float] = Field(
        default_factory=dict, description="the sampling parameters the request carried (temperature, seed); "
        "empty when the provider accepts none")
