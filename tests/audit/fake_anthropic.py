"""A loopback server speaking the Anthropic Messages API (``POST /v1/messages``), enough for vision + tool use.

It checks what the real API checks for these calls (the key and version headers, the model, ``max_tokens``, a
base64 image block of a supported media type, the tool and the forced ``tool_choice``) and answers with a
``tool_use`` message built from the queued inputs, or with an API error.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MEDIA = {"image/png", "image/jpeg", "image/gif", "image/webp"}


class FakeAnthropic:
    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        self.url = ""

    def answer_tool(self, tool_input: dict[str, Any]) -> None:
        self.answers.append((200, {"tool_input": tool_input}))

    def answer_error(self, status: int, kind: str = "overloaded_error") -> None:
        self.answers.append((status, {"type": "error", "error": {"type": kind, "message": "fake failure"}}))


def _invalid(body: dict[str, Any], headers: Any) -> str | None:
    if not headers.get("x-api-key") and not (headers.get("authorization") or "").startswith("Bearer "):
        return "missing credentials (x-api-key or a bearer token)"
    if not headers.get("anthropic-version"):
        return "missing anthropic-version"
    if not isinstance(body.get("model"), str) or not isinstance(body.get("max_tokens"), int):
        return "model and max_tokens are required"
    tools = body.get("tools") or []
    names = {t.get("name") for t in tools if isinstance(t.get("input_schema"), dict)}
    choice = body.get("tool_choice") or {}
    if choice.get("type") != "tool" or choice.get("name") not in names:
        return "tool_choice must force one of the tools"
    for message in body.get("messages", []):
        for block in message.get("content", []) if isinstance(message.get("content"), list) else []:
            if block.get("type") == "image":
                source = block.get("source", {})
                if source.get("type") != "base64" or source.get("media_type") not in MEDIA:
                    return "image source must be base64 of a supported media type"
                base64.b64decode(source["data"], validate=True)
                return None
    return "no image block"


@contextmanager
def serve() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            if self.path != "/v1/messages":
                return self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
            problem = _invalid(body, self.headers)
            if problem:
                return self._send(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                  "message": problem}})
            fake.requests.append(body)
            status, payload = fake.answers.pop(0)
            if status != 200:
                return self._send(status, payload)
            tool = body["tool_choice"]["name"]
            return self._send(200, {
                "id": f"msg_{len(fake.requests)}", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "tool_use", "id": f"toolu_{len(fake.requests)}", "name": tool,
                             "input": payload["tool_input"]}],
                "stop_reason": "tool_use", "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20},
            })

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
