"""The OpenAI-compatible adapter: one forced function call on any Chat Completions endpoint, over plain ``httpx``.

For OpenAI itself and for the local servers that speak its protocol (Ollama, vLLM, llama.cpp's ``llama-server``,
LM Studio …): ``POST {base_url}/chat/completions`` with the base URL as the server documents it, ``/v1`` included
(``http://localhost:11434/v1`` for Ollama).

- Structured output: one function tool whose ``parameters`` are the pydantic JSON Schema of the answer, forced
  with ``tool_choice={"type": "function", "function": {"name": …}}``. The answer is
  ``choices[0].message.tool_calls[0].function.arguments``, a JSON string; arguments that are not a JSON object
  come back as "no tool call" with the reason in ``stop_reason``, so the judge's one repair shows the model what
  went wrong. The court validates the input again with pydantic.
- Sampling: ``temperature: 0`` and a fixed ``seed`` (``LOGOMESH_LLM_SEED``, 42) — a local model then gives the
  same answer to the same prompt, and OpenAI samples "best effort" deterministically, which keeps the record
  reproducible; both travel with every reply (``LLMReply.sampling``) into the judge's record. ``max_tokens`` caps
  the output (OpenAI's reasoning models refuse these parameters).
- Authentication: ``Authorization: Bearer <key>`` only when a key is configured; local servers need none.
- Redirects are not followed (the prompt goes where it was configured to go, or nowhere).
- Retries and budget are the shared ones (:mod:`app.llm.retry`, :mod:`app.llm.budget`); the usage settles from
  ``usage.prompt_tokens``/``completion_tokens``, or from the estimates when a server sends no usage.

Raises the court's errors (checks.errors)::

    LLMError               a non-retryable refusal (400, 401, 403, 404, 422 …; a redirect; a malformed response)
    ├── LLMUnavailable     unreachable, timed out, or still 408/409/429/5xx after the last retry; ``attempts``
    └── LLMBudgetExceeded  the next request would overspend the review's tokens or dollars; ``spent``
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from app.llm.budget import CHARS_PER_TOKEN, ReviewBudget, estimate_tokens
from app.llm.retry import RetryPolicy, Transient, should_retry
from checks.errors import LLMError
from checks.llm_types import LLMReply, LLMRequest, LLMUsage

COMPLETIONS_PATH = "/chat/completions"
# errors name the server by its kind, never by its URL: notices reach the PR comment, and a base URL can hold an
# internal host name or a password
SERVER = "the OpenAI-compatible server"


class OpenAICompatibleClient:
    """An :class:`~checks.protocols.LLMClient` on a Chat Completions endpoint. Born per review, closed after."""

    provider = "openai"

    def __init__(
        self,
        *,
        model: str,
        budget: ReviewBudget,
        base_url: str,
        api_key: str | None = None,
        timeout_seconds: float = 60.0,
        max_tokens: int = 2048,
        seed: int = 42,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model_id = model
        self.budget = budget
        self.max_tokens = max_tokens
        self.sampling: dict[str, int | float] = {"temperature": 0, "seed": seed}
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()  # the backoff and the retry-after cap, shared by the providers
        headers = {"accept": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout_seconds, follow_redirects=False,
                                       transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    @property
    def url(self) -> str:
        return self.base_url + COMPLETIONS_PATH

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "max_tokens": self.max_tokens,
            **self.sampling,
            "stream": False,
            "messages": [{"role": "system", "content": request.system},
                         *({"role": t.role, "content": t.text} for t in request.turns)],
            "tools": [{"type": "function", "function": {"name": request.tool_name,
                                                        "description": request.tool_description,
                                                        "parameters": request.input_schema}}],
            "tool_choice": {"type": "function", "function": {"name": request.tool_name}},
        }

    async def complete(self, request: LLMRequest) -> LLMReply:
        params = self._params(request)
        estimate = estimate_tokens(params)

        async def send(attempts: int) -> tuple[LLMReply, LLMUsage]:
            try:
                response = await self._http.post(self.url, json=params)
            except httpx.TimeoutException as exc:
                raise Transient("timed out", kind="timeout") from exc
            except httpx.TransportError as exc:
                raise Transient("connection failed", kind="connection") from exc
            except httpx.HTTPError as exc:
                raise LLMError(f"{request.purpose}: the request to {SERVER} failed ({type(exc).__name__})",
                               attempts=attempts) from exc
            status = response.status_code
            if status != 200:
                last = f"HTTP {status} {_error_type(response)}".strip()
                if 300 <= status < 400 or not should_retry(status, response.headers):
                    raise LLMError(f"{request.purpose}: {SERVER} refused the request ({last})",
                                   status_code=status, attempts=attempts)
                raise Transient.from_status(status, last, response.headers)
            try:
                return self._reply(response.json(), request, estimate, attempts)
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise LLMError(f"{request.purpose}: {SERVER} sent a malformed completion "
                               f"({type(exc).__name__})", attempts=attempts) from exc

        return await self.retry.run(send, budget=self.budget, estimate=estimate, max_tokens=self.max_tokens,
                                    provider=SERVER)

    def _reply(self, body: Any, request: LLMRequest, estimate: int, attempts: int) -> tuple[LLMReply, LLMUsage]:
        """The reply in a ``chat.completion`` body; raises KeyError/TypeError/ValueError when it is not one."""
        if not isinstance(body, dict):
            raise TypeError("the body is not a JSON object")
        choice = body["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("choices[0].message is not an object")
        tool_input: dict[str, Any] | None = None
        stop_reason = choice.get("finish_reason")
        stop_reason = stop_reason if isinstance(stop_reason, str) else None
        texts = [message["content"]] if isinstance(message.get("content"), str) and message["content"] else []
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or function.get("name") != request.tool_name:
                continue
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError as exc:
                    stop_reason = f"{stop_reason}; the {request.tool_name} arguments are not JSON ({exc.msg})"
                    texts.append(function["arguments"])
                    break
            if isinstance(arguments, dict):
                tool_input = arguments
            else:
                stop_reason = f"{stop_reason}; the {request.tool_name} arguments are not a JSON object"
            break
        usage = _usage(body.get("usage"), estimate, message)
        response_id = body.get("id") if isinstance(body.get("id"), str) and body.get("id") else "(no id)"
        model = body.get("model") if isinstance(body.get("model"), str) and body.get("model") else self.model_id
        reply = LLMReply(response_id=str(response_id), model=str(model), tool_input=tool_input,
                         text="\n".join(texts), stop_reason=stop_reason, usage=usage, attempts=attempts,
                         sampling=self.sampling)
        return reply, usage


def _usage(usage: Any, estimate: int, message: dict[str, Any]) -> LLMUsage:
    """The tokens the server counted; when it counted none, the estimates, so the budget still moves."""
    if isinstance(usage, dict):
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int) and prompt >= 0 and completion >= 0:
            return LLMUsage(input_tokens=prompt, output_tokens=completion)
    return LLMUsage(input_tokens=estimate,
                    output_tokens=len(json.dumps(message, ensure_ascii=False)) // CHARS_PER_TOKEN + 1)


def _error_type(response: httpx.Response) -> str:
    """``error.type`` (or ``error.code``) of an OpenAI-style error body, if it has a short one."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return ""
    if not isinstance(error, dict):
        return ""
    kind = error.get("type") or error.get("code")
    return kind if isinstance(kind, str) and kind.replace("_", "").isalnum() and len(kind) <= 40 else ""
