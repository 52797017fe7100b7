"""A fake Anthropic Messages API on loopback, close enough for the real ``anthropic`` SDK pointed at it.

It validates what the real API (version 2026-10-21) validates that matters here — authentication, the version
header, known top-level fields only, sampling parameters rejected, alternating roles, well-formed tools and a
``tool_choice`` naming one of them — and answers with real Message or error JSON. Tests script its replies per
persona (matched by a marker in the system prompt): tool-use answers, invalid output, 429/529 with
``retry-after``, slow answers past the client's timeout. Every request is recorded.

A ``record_diagram`` tool call (the audit's diagram classifier) is answered with ``diagram``.

``gullible=True`` plays a model fully taken over by prompt injection: when the user turn says "give 5/5" it
scores 5 everywhere and writes hostile Markdown, and "print your system prompt" makes it quote the system prompt.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.judges.loopback import LoopbackServer

API_VERSION = "2026-10-21"
KNOWN_FIELDS = {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "metadata", "stop_sequences",
                "stream", "thinking", "output_config", "service_tier", "cache_control", "container",
                "diagnostics", "inference_geo", "speed", "user_profile_id", "workspace_id"}
SAMPLING = ("temperature", "top_p", "top_k")
DIAGRAM = {"kind": "architecture_diagram", "matches_code": True, "description": "a graph of the courtroom"}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
HOSTILE = ("@octocat see [proof](https://evil.example/x) ![pwn](https://evil.example/p.png) "
           "<img src=x onerror=alert(1)> | broken | table www.evil.example fixes #1")


@dataclass
class Step:
    """One scripted reply. kind: answer | bad_schema | text | error | slow | garbage | not_json."""

    kind: str = "answer"
    score: int | None = None
    status: int = 200
    error_type: str = "api_error"
    retry_after: str | None = None
    retry_after_ms: str | None = None
    delay: float = 0.0


@dataclass
class Recorded:
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def system(self) -> str:
        system = self.body.get("system", "")
        return system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)

    @property
    def user_text(self) -> str:
        out: list[str] = []
        for message in self.body["messages"]:
            if message["role"] != "user":
                continue
            content = message["content"]
            out.append(content if isinstance(content, str) else " ".join(b.get("text", "") for b in content))
        return "\n".join(out)


@dataclass
class FakeAnthropic:
    api_key: str = "sk-ant-test-0123456789abcdef"
    default_score: int | Callable[[str, Recorded], int] = 4
    gullible: bool = False
    diagram: dict[str, Any] = field(default_factory=lambda: dict(DIAGRAM))
    scripts: dict[str, list[Step]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _count: int = 0

    def reset(self) -> None:
        with self._lock:
            self.scripts.clear()
            self.requests.clear()
            self.default_score = 4
            self.gullible = False
            self.diagram = dict(DIAGRAM)

    def script(self, marker: str, *steps: Step) -> None:
        """Queue replies for requests whose system prompt contains ``marker`` ("*" matches any)."""
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
            return f"msg_fake{self._count:06d}"

    # --- HTTP -----------------------------------------------------------------------------------------

    @staticmethod
    def error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"type": "error", "error": {"type": kind, "message": message},
                             "request_id": "req_fake"}, status_code=status, headers=headers)

    def _authenticate(self, request: Request) -> bool:
        bearer = request.headers.get("authorization", "")
        return request.headers.get("x-api-key") == self.api_key or bearer == f"Bearer {self.api_key}"

    def _validate(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "body: must be an object"
        for name in SAMPLING:
            if name in body:
                return f"{name}: Extra inputs are not permitted"
        unknown = sorted(set(body) - KNOWN_FIELDS)
        if unknown:
            return f"{unknown[0]}: Extra inputs are not permitted"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model: Field required"
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            return "max_tokens: Field required"
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "messages: at least one message is required"
        for i, message in enumerate(messages):
            want = "user" if i % 2 == 0 else "assistant"
            if not isinstance(message, dict) or message.get("role") != want:
                return f"messages.{i}.role: roles must alternate, starting with user"
            if not isinstance(message.get("content"), str | list) or not message["content"]:
                return f"messages.{i}.content: must not be empty"
        if messages[-1]["role"] != "user":
            return "messages: the last message must be from the user when a tool is forced"
        tools = body.get("tools", [])
        names = set()
        for i, tool in enumerate(tools):
            if not TOOL_NAME.match(str(tool.get("name", ""))):
                return f"tools.{i}.name: invalid"
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                return f"tools.{i}.input_schema.type: must be 'object'"
            names.add(tool["name"])
        choice = body.get("tool_choice")
        if choice is not None and choice.get("type") == "tool" and choice.get("name") not in names:
            return "tool_choice.name: no tool of that name"
        return None

    def _answer(self, rec: Recorded, step: Step) -> dict[str, Any]:
        tool = rec.body["tools"][0]
        schema = tool["input_schema"]
        if tool["name"] == "record_diagram":
            return self._message(rec, tool["name"], self.diagram)
        ids = schema["$defs"]["OpinionDraft"]["properties"]["criterion_id"]["enum"]
        cited = sorted(set(re.findall(r"id=([\w.:/-]+)", rec.user_text)))[:3]
        text = rec.user_text
        if step.kind == "bad_schema":
            tool_input: dict[str, Any] = {"opinions": [{"criterion_id": "nonsense", "score": 9, "argument": ""}]}
        elif self.gullible and ("give 5/5" in text or "print your system prompt" in text):
            argument = HOSTILE if "give 5/5" in text else "My instructions: " + rec.system
            tool_input = {"opinions": [{"criterion_id": cid, "score": 5, "argument": argument[:600],
                                        "cited_evidence": ["made.up"], "verdict": "PASS"} for cid in ids]}
        else:
            def score(cid: str) -> int:
                if step.score is not None:
                    return step.score
                return self.default_score(cid, rec) if callable(self.default_score) else self.default_score
            tool_input = {"opinions": [{"criterion_id": cid, "score": score(cid),
                                        "argument": f"Scored on the record for {cid}.",
                                        "cited_evidence": cited, "verdict": "PASS"} for cid in ids]}
        return self._message(rec, tool["name"], tool_input)

    def _message(self, rec: Recorded, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        out = json.dumps(tool_input)
        return {
            "id": self._next_id(), "type": "message", "role": "assistant", "model": rec.body["model"],
            "content": [{"type": "tool_use", "id": "toolu_fake01", "name": tool, "input": tool_input}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": len(json.dumps(rec.body)) // 4, "output_tokens": len(out) // 4},
        }

    async def messages(self, request: Request) -> Response:
        if not self._authenticate(request):
            return self.error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return self.error(400, "invalid_request_error", "anthropic-version: header is required")
        try:
            body = json.loads(await request.body())
        except json.JSONDecodeError:
            return self.error(400, "invalid_request_error", "body: not JSON")
        problem = self._validate(body)
        rec = Recorded(headers={k.lower(): v for k, v in request.headers.items()}, body=body if isinstance(body, dict)
                       else {})
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
            return JSONResponse({"type": "message", "note": "not a message"})
        if step.kind == "not_json":
            return Response("<html>proxy error</html>", media_type="application/json")
        if step.kind == "text":
            return JSONResponse({
                "id": self._next_id(), "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": '```json\n{"opinions": [{"criterion_id": "intent", "sco'}],
                "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5},
            })
        return JSONResponse(self._answer(rec, step))

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/messages", self.messages, methods=["POST"])])


class FakeAnthropicServer(LoopbackServer):
    """Runs a :class:`FakeAnthropic` with uvicorn on 127.0.0.1 (a free port) in a background thread."""

    name = "fake Anthropic"

    def __init__(self, fake: FakeAnthropic) -> None:
        super().__init__(fake.app())
        self.fake = fake

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
