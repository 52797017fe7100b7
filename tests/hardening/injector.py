"""Faults in front of the App's fake GitHub: an ASGI layer that answers chosen requests with GitHub's real
rate-limit and server-error responses (status, headers, message) before they reach the fake."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

MESSAGES = {
    403: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    500: "Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
}


@dataclass
class Rule:
    method: str
    path: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = ""


@dataclass
class Injector:
    app: ASGIApp
    rules: list[Rule] = field(default_factory=list)
    fired: list[tuple[float, str, str, int]] = field(default_factory=list)  # (monotonic, method, path, status)
    passed: list[tuple[float, str, str]] = field(default_factory=list)

    def fail(self, method: str, path: str, status: int, times: int = 1, headers: dict[str, str] | None = None,
             message: str = "") -> None:
        self.rules.append(Rule(method, re.compile(path), status, times, headers or {},
                               message or MESSAGES.get(status, "error")))

    def primary_rate_limit(self, method: str, path: str, reset_in: int, times: int = 1) -> None:
        reset = str(int(time.time()) + reset_in)
        self.fail(method, path, 403, times, {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                                             "x-ratelimit-used": "5000", "x-ratelimit-reset": reset,
                                             "x-ratelimit-resource": "core"},
                  "API rate limit exceeded for installation ID 4242.")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method, path = scope["method"], scope["path"]
            for rule in self.rules:
                if rule.times > 0 and rule.method == method and rule.path.search(path):
                    rule.times -= 1
                    self.fired.append((time.monotonic(), method, path, rule.status))
                    body: dict[str, Any] = {"message": rule.message,
                                            "documentation_url": "https://docs.github.com/rest"}
                    await JSONResponse(body, status_code=rule.status, headers=rule.headers)(scope, receive, send)
                    return
            self.passed.append((time.monotonic(), method, path))
        await self.app(scope, receive, send)
