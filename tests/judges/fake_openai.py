"""A fake OpenAI-compatible Chat Completions server on loopback (``POST /v1/chat/completions``).

It validates what the Chat Completions API validates that matters here — authentication when a key is set (and,
without one, that no ``Authorization`` header arrives, as a keyless local server sees it), a JSON body with known
top-level fields only, ``model`` present, well-formed ``messages`` (known roles, string or text-part content, a
``tool`` message only answering an assistant's ``tool_calls``), ``tools`` of ``{"type": "function", "function":
{name, description, parameters}}`` with an object schema, and ``tool_choice`` as ``none``/``auto``/``required`` or
``{"type": "function", "function": {"name": …}}`` naming a declared tool — and answers with real
``chat.completion`` or error JSON. Tests script its replies per persona (matched by a marker in the system
message): function-call answers, arguments that are not JSON or not the schema, text instead of a call, 429/5xx
with ``retry-after``/``retry-after-ms``, slow answers, malformed bodies. Every request is recorded.

The answers' arguments say ``ARGUMENT_MARK``, so a test can tell a model's opinion from an offline judge's.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.judges.loopback import LoopbackServer

KNOWN_FIELDS = {"model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens", "temperature",
                "top_p", "n", "stream", "stream_options", "stop", "seed", "parallel_tool_calls", "response_format",
                "user", "frequency_penalty", "presence_penalty", "logit_bias", "logprobs", "top_logprobs", "metadata",
                "store", "service_tier", "reasoning_effort", "modalities", "prediction", "audio", "verbosity",
                "web_search_options", "prompt_cache_key", "safety_identifier"}
ROLES = {"system", "developer", "user", "assistant", "tool"}
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ARGUMENT_MARK = "fake-openai model"


@dataclass
class Step:
    """One scripted reply; kind: answer | bad_schema | bad_json | text | error | slow | garbage | not_json |
    no_usage."""

    kind: str = "answer"
    score: int | None = None
    status: int = 200
    error_type: str = "server_error"
    retry_after: str | None = None
    retry_after_ms: str | None = None
    delay: float = 0.0


@dataclass
class Recorded:
    headers: dict[str, str]
    body: dict[str, Any]
    raw: str

    @property
    def system(self) -> str:
        return "\n".join(m["content"] for m in self.body.get("messages", [])
                         if m.get("role") == "system" and isinstance(m.get("content"), str))

    @property
    def user_text(self) -> str:
        return "\n".join(m["content"] for m in self.body.get("messages", [])
                         if m.get("role") == "user" and isinstance(m.get("content"), str))


@dataclass
class FakeOpenAI:
    api_key: str | None = None  # None: a local server that wants no key, and refuses one it did not ask for
    default_score: int = 4
    scripts: dict[str, list[Step]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _count: int = 0

    def reset(self, api_key: str | None = None) -> None:
        with self._lock:
            self.scripts.clear()
            self.requests.clear()
            self.default_score = 4
            self.api_key = api_key

    def script(self, marker: str, *steps: Step) -> None:
        """Queue replies for requests whose system message contains ``marker`` ("*" matches any)."""
        with self._lock:
            self.scripts.setdefault(marker, []).extend(steps)

    def _next_step(self, rec: Recorded) -> Step:
        with self._lock:
            self.requests.append(rec)
            self._count += 1
            for marker, steps in self.scripts.items():
                if steps and (marker == "*" or marker in rec.system):
                    return steps.pop(0)
        return Step()

    def _next_id(self) -> str:
        with self._lock:
            return f"chatcmpl-fake{self._count:06d}"

    # --- HTTP -----------------------------------------------------------------------------------------

    @staticmethod
    def error(status: int, kind: str, message: str, headers: dict[str, str] | None = None,
              code: str | None = None) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}},
                            status_code=status, headers=headers)

    def _authenticate(self, request: Request) -> str | None:
        header = request.headers.get("authorization")
        if self.api_key is None:
            return None if header is None else "an Authorization header was sent to a server that wants no key"
        return None if header == f"Bearer {self.api_key}" else "Incorrect API key provided"

    @staticmethod
    def _validate_messages(messages: Any) -> str | None:
        if not isinstance(messages, list) or not messages:
            return "messages: must be a non-empty array"
        call_ids: set[str] = set()
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ROLES:
                return f"messages[{i}].role: must be one of {sorted(ROLES)}"
            unknown = set(message) - {"role", "content", "name", "tool_calls", "tool_call_id", "refusal"}
            if unknown:
                return f"messages[{i}]: unrecognized field {sorted(unknown)[0]!r}"
            content = message.get("content")
            if isinstance(content, list):
                if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                           for p in content):
                    return f"messages[{i}].content: parts must be text parts"
            elif not isinstance(content, str) and not (message["role"] == "assistant" and content is None
                                                       and message.get("tool_calls")):
                return f"messages[{i}].content: must be a string or an array of text parts"
            if message["role"] == "assistant":
                for call in message.get("tool_calls") or ():
                    call_ids.add(call.get("id", ""))
            if message["role"] == "tool" and message.get("tool_call_id") not in call_ids:
                return f"messages[{i}]: a 'tool' message must answer a preceding assistant tool_calls id"
        if messages[-1]["role"] == "assistant":
            return "messages: the last message must not be the assistant's when a function call is forced"
        return None

    @staticmethod
    def _validate_tools(tools: Any, choice: Any) -> str | None:
        names: set[str] = set()
        if tools is not None:
            if not isinstance(tools, list) or not tools:
                return "tools: must be a non-empty array"
            for i, tool in enumerate(tools):
                if not isinstance(tool, dict) or tool.get("type") != "function" or set(tool) - {"type", "function"}:
                    return f"tools[{i}]: must be {{'type': 'function', 'function': {{…}}}}"
                function = tool.get("function")
                if not isinstance(function, dict) or set(function) - {"name", "description", "parameters", "strict"}:
                    return f"tools[{i}].function: must hold name, description, parameters"
                if not FUNCTION_NAME.match(str(function.get("name", ""))):
                    return f"tools[{i}].function.name: must match {FUNCTION_NAME.pattern}"
                if "description" in function and not isinstance(function["description"], str):
                    return f"tools[{i}].function.description: must be a string"
                parameters = function.get("parameters")
                if parameters is not None and (not isinstance(parameters, dict) or parameters.get("type") != "object"):
                    return f"tools[{i}].function.parameters: must be a JSON Schema of type 'object'"
                names.add(function["name"])
        if choice is None:
            return None
        if isinstance(choice, str):
            if choice not in ("none", "auto", "required"):
                return "tool_choice: must be none, auto, required or a named function"
            return "tool_choice: requires tools" if choice != "none" and not names else None
        if not isinstance(choice, dict) or choice.get("type") != "function" or set(choice) - {"type", "function"} \
                or not isinstance(choice.get("function"), dict) or set(choice["function"]) != {"name"}:
            return "tool_choice: must be {'type': 'function', 'function': {'name': …}}"
        if choice["function"]["name"] not in names:
            return f"tool_choice.function.name: no tool named {choice['function']['name']!r}"
        return None

    def _validate(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "body: must be a JSON object"
        unknown = sorted(set(body) - KNOWN_FIELDS)
        if unknown:
            return f"Unrecognized request argument supplied: {unknown[0]}"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model: you must provide a model parameter"
        if body.get("stream"):
            return "stream: this fake answers whole completions only"
        for name in ("max_tokens", "max_completion_tokens"):
            if name in body and (not isinstance(body[name], int) or body[name] < 1):
                return f"{name}: must be a positive integer"
        if "temperature" in body and (not isinstance(body["temperature"], int | float)
                                      or not 0 <= body["temperature"] <= 2):
            return "temperature: must be between 0 and 2"
        if "seed" in body and body["seed"] is not None and (not isinstance(body["seed"], int)
                                                            or isinstance(body["seed"], bool)):
            return "seed: must be an integer"
        return self._validate_messages(body.get("messages")) or self._validate_tools(body.get("tools"),
                                                                                      body.get("tool_choice"))

    def _arguments(self, rec: Recorded, step: Step) -> str:
        parameters = rec.body["tools"][0]["function"]["parameters"]
        ids = parameters["$defs"]["OpinionDraft"]["properties"]["criterion_id"]["enum"]
        cited = sorted(set(re.findall(r"id=([\w.:/-]+)", rec.user_text)))[:3]
        if step.kind == "bad_json":
            return '{"opinions": [{"criterion_id": "intent", "sco'
        if step.kind == "bad_schema":
            return json.dumps({"opinions": [{"criterion_id": "nonsense", "score": 9, "argument": ""}]})
        score = step.score if step.score is not None else self.default_score
        return json.dumps({"opinions": [{"criterion_id": cid, "score": score,
                                         "argument": f"The {ARGUMENT_MARK} weighed {cid} on the record.",
                                         "cited_evidence": cited, "verdict": "PASS"} for cid in ids]})

    def _completion(self, rec: Recorded, step: Step) -> dict[str, Any]:
        choice = rec.body.get("tool_choice")
        name = choice["function"]["name"] if isinstance(choice, dict) else rec.body["tools"][0]["function"]["name"]
        if step.kind == "text":
            message: dict[str, Any] = {"role": "assistant", "content": "I would give it a 4.", "refusal": None}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [{
                "id": f"call_fake{self._count:06d}", "type": "function",
                "function": {"name": name, "arguments": self._arguments(rec, step)}}]}
            finish = "tool_calls"
        body: dict[str, Any] = {
            "id": self._next_id(), "object": "chat.completion", "created": 1767225600, "model": rec.body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "system_fingerprint": "fp_fake",
        }
        if step.kind != "no_usage":
            prompt, completion = len(rec.raw) // 4, len(json.dumps(message)) // 4
            body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
        return body

    async def completions(self, request: Request) -> Response:
        problem = self._authenticate(request)
        if problem:
            return self.error(401, "invalid_request_error", problem, code="invalid_api_key")
        if not request.headers.get("content-type", "").startswith("application/json"):
            return self.error(400, "invalid_request_error", "content-type: must be application/json")
        raw = (await request.body()).decode("utf-8", "replace")
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            return self.error(400, "invalid_request_error", "We could not parse the JSON body of your request.")
        rec = Recorded(headers={k.lower(): v for k, v in request.headers.items()},
                       body=body if isinstance(body, dict) else {}, raw=raw)
        problem = self._validate(body)
        step = self._next_step(rec)
        if problem:
            return self.error(400, "invalid_request_error", problem)
        if step.kind == "error":
            headers = {}
            if step.retry_after is not None:
                headers["retry-after"] = step.retry_after
            if step.retry_after_ms is not None:
                headers["retry-after-ms"] = step.retry_after_ms
            return self.error(step.status, step.error_type, "scripted failure", headers)
        if step.kind == "slow":
            await asyncio.sleep(step.delay)
        if step.kind == "garbage":
            return JSONResponse({"object": "list", "data": []})
        if step.kind == "not_json":
            return Response("<html>502 bad gateway</html>", media_type="application/json")
        return JSONResponse(self._completion(rec, step))

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.completions, methods=["POST"])])


class FakeOpenAIServer(LoopbackServer):
    """Runs a :class:`FakeOpenAI` with uvicorn on 127.0.0.1 (a free port) in a background thread."""

    name = "fake OpenAI-compatible"

    def __init__(self, fake: FakeOpenAI) -> None:
        super().__init__(fake.app())
        self.fake = fake

    @property
    def base_url(self) -> str:
        """The base URL as a client is configured with it: ``/v1`` included, like ``http://localhost:11434/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"
