"""Language-model adapters behind :class:`checks.protocols.LLMClient`, chosen by :func:`make_llm_client`."""

from app.llm.budget import ReviewBudget
from app.llm.providers import (
    PROVIDERS,
    ClosableLLMClient,
    make_llm_client,
    missing_key,
    prompt_nonce_key,
    review_budget,
)

__all__ = ["PROVIDERS", "ClosableLLMClient", "ReviewBudget", "make_llm_client", "missing_key", "prompt_nonce_key",
           "review_budget"]
