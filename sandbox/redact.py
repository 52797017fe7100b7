"""Trim and redact test output before it becomes evidence: PR code may print anything, including secrets."""

from __future__ import annotations

import re

REDACTED = "[redacted]"

_PATTERNS = (
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"\b(sk-ant-[A-Za-z0-9_-]{10,}|sk-[A-Za-z0-9]{20,})"),
    re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?i)\b(bearer|token)\s+[A-Za-z0-9._~+/=-]{16,}"),
    re.compile(r"(?i)((?:password|passwd|secret|api[_-]?key|access[_-]?key|token)\s*[=:]\s*)(['\"]?)[^\s'\"]{4,}\2"),
)


def redact(text: str) -> str:
    for pattern in _PATTERNS:
        if pattern.groups >= 2 and pattern.pattern.startswith("(?i)(("):
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def trim(text: str, limit: int) -> str:
    """Keep the head and the tail (where test summaries are) of output longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def clean_output(raw: bytes, limit: int) -> str:
    return trim(redact(raw.decode("utf-8", "replace")), limit)
