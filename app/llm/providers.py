"""The provider seam: which language model a review's judges are heard on, chosen by ``LOGOMESH_LLM_PROVIDER``.

Each provider is one adapter in ``app/llm`` behind :class:`checks.protocols.LLMClient`, sharing the retry
policy (:mod:`app.llm.retry`) and the review's budget (:mod:`app.llm.budget`):

- ``anthropic``: :class:`~app.llm.anthropic_client.AnthropicClient`, the Messages API through the SDK; needs
  ``LOGOMESH_LLM_API_KEY``; base URL ``https://api.anthropic.com`` unless set.
- ``openai``: :class:`~app.llm.openai_client.OpenAICompatibleClient`, any Chat Completions endpoint over httpx
  (OpenAI, Ollama, vLLM, llama.cpp); the key is optional; ``LOGOMESH_LLM_BASE_URL`` and ``LOGOMESH_LLM_MODEL``
  are required (the settings refuse to start without them).

Adding a provider is one adapter module and one entry in :data:`PROVIDERS` (and the settings' ``Literal``).
``offline`` is not a provider: it means no model is asked.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from app.llm.budget import ReviewBudget
from app.llm.retry import RetryPolicy
from app.settings import Settings, SettingsError
from checks.protocols import LLMClient


class ClosableLLMClient(LLMClient, Protocol):
    """An LLM client that holds a connection pool: born per review, closed by the review's exit stack."""

    async def aclose(self) -> None: ...


def _anthropic(settings: Settings, budget: ReviewBudget) -> ClosableLLMClient:
    from app.llm.anthropic_client import AnthropicClient

    api_key = settings.llm_key()
    if api_key is None:
        raise SettingsError("LOGOMESH_LLM_API_KEY", "not set; the anthropic provider needs one")
    return AnthropicClient(api_key=api_key, model=settings.llm_model, budget=budget, base_url=settings.llm_base_url,
                           timeout_seconds=settings.llm_timeout_seconds, max_tokens=settings.llm_max_tokens,
                           retry=RetryPolicy(max_retries=settings.llm_max_retries))


def _openai(settings: Settings, budget: ReviewBudget) -> ClosableLLMClient:
    from app.llm.openai_client import OpenAICompatibleClient

    return OpenAICompatibleClient(model=settings.llm_model, budget=budget, base_url=settings.llm_base_url,
                                  api_key=settings.llm_key(), timeout_seconds=settings.llm_timeout_seconds,
                                  max_tokens=settings.llm_max_tokens, seed=settings.llm_seed,
                                  retry=RetryPolicy(max_retries=settings.llm_max_retries))


@dataclass(frozen=True)
class Provider:
    name: str
    needs_key: bool
    build: Callable[[Settings, ReviewBudget], ClosableLLMClient]


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider("anthropic", needs_key=True, build=_anthropic),
    "openai": Provider("openai", needs_key=False, build=_openai),
}


def provider_for(settings: Settings) -> Provider:
    """The configured provider; :class:`SettingsError` naming ``LOGOMESH_LLM_PROVIDER`` when there is none."""
    provider = PROVIDERS.get(settings.llm_provider)
    if provider is None:
        known = ", ".join(sorted(PROVIDERS))
        raise SettingsError("LOGOMESH_LLM_PROVIDER", f"{settings.llm_provider!r} is not an LLM provider (one of "
                                                     f"{known}; or offline for the deterministic judges)")
    return provider


def missing_key(settings: Settings) -> str | None:
    """Why the configured provider cannot be asked for lack of a key (a notice for the verdict), else None."""
    provider = provider_for(settings)
    if provider.needs_key and settings.llm_key() is None:
        return f"LOGOMESH_LLM_API_KEY is not set, so the offline judges ruled instead of {provider.name}"
    return None


def review_budget(settings: Settings) -> ReviewBudget:
    """A fresh budget for one review: every judge, repair and retry of it draws on this one."""
    return ReviewBudget(max_tokens=settings.llm_budget_tokens, max_usd=settings.llm_budget_usd,
                        input_usd_per_mtok=settings.llm_input_usd_per_mtok,
                        output_usd_per_mtok=settings.llm_output_usd_per_mtok)


def make_llm_client(settings: Settings, budget: ReviewBudget | None = None) -> ClosableLLMClient:
    """The client of ``settings.llm_provider``, drawing on ``budget`` (a fresh one from the settings when None).

    Raises :class:`SettingsError`: no such provider (``offline`` included), or a key the provider needs is unset.
    """
    return provider_for(settings).build(settings, budget if budget is not None else review_budget(settings))


def prompt_nonce_key(settings: Settings) -> bytes:
    """The secret that keys the prompt delimiters' nonces: ``LOGOMESH_LLM_NONCE_KEY``, else derived from the API key,
    else (a keyless local server) random per call — unpredictable either way, reproducible only with a key."""
    if settings.llm_nonce_key is not None and settings.llm_nonce_key.get_secret_value():
        secret = settings.llm_nonce_key.get_secret_value()
    elif (api_key := settings.llm_key()) is not None:
        secret = "api-key:" + api_key
    else:
        secret = "random:" + secrets.token_hex(32)
    return hashlib.sha256(b"logomesh-prompt-nonce\x00" + secret.encode()).digest()
