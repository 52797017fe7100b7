"""Assumptions a change states about how its code runs, read from the PR's title, body and linked issues.

What: :func:`stated_concurrency` finds the words that say the changed code runs concurrently — "thread-safe",
"shared by (request) threads", "one instance shared", "concurrent requests", "from several threads"…
Why: a race is a broken assumption; when the change itself says the code is shared between threads, a read-modify-
write of shared state without a lock is evidence before any probe confirms it, and the race probe is required.
Example: "one `RateLimiter` instance is shared by all the server's request threads" → ``"shared by all the
server's request threads"``.
"""

from __future__ import annotations

import re

CONCURRENCY = re.compile(
    r"thread[- ]?safe(?:ty)?|(?:shared|used|called)\s+(?:by|from|across|between)\s+(?:\S+\s+){0,4}?"
    r"(?:threads|workers|requests|coroutines|tasks|processes)|concurrent(?:ly)?\s+(?:\S+\s+){0,2}?"
    r"(?:requests|calls|use|access|threads|workers)|(?:multiple|several|many)\s+(?:threads|processes)|multi-?threaded|"
    r"(?:one|a single|the same)\s+(?:\S+\s+){0,3}?instance\s+(?:is\s+)?shared",
    re.IGNORECASE)


def stated_concurrency(text: str) -> str | None:
    """The words of ``text`` that say the code runs concurrently, or None."""
    found = CONCURRENCY.search(" ".join(text.split()))
    return found.group(0)[:120] if found else None
