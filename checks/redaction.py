"""Secret redaction and truncation for untrusted text: prompts, reports, and the output of test runs.

Pure functions, and the one set of rules LogoMesh redacts with (the sandbox's test output uses it too).
Redaction replaces what looks like a credential with ``[REDACTED:<kind>]`` so a model never reads a token a PR
leaked, no provider log stores one and no report shows one; truncation keeps text inside a character budget and
says how much it cut, so a huge PR can neither crowd the facts out of a prompt nor blow a token budget.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

CUT_MARKER = "[… {n} characters cut]"

# Most specific first: a private key block contains things the generic rules would half-match.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
                               re.DOTALL)),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("stripe-key", re.compile(r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer-token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{16,}|(?<=\btoken )[A-Za-z0-9._~+/=-]{16,}")),
)
URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@]+):([^\s/@]+)@")
ASSIGNED_SECRET = re.compile(
    r"(?i)\b((?:[a-z0-9_]*?)(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"client[_-]?secret|auth)[a-z0-9_]*)(\s*[:=]\s*|\"\s*:\s*)([\"']?)([^\s\"',;]{8,})\3"
)
# a shorter value after an unambiguous name ("password=hunter22"); "auth…" names need the longer value above
SHORT_ASSIGNED = re.compile(r"(?i)\b((?:password|passwd|secret|api[_-]?key|access[_-]?key|token)\s*[=:]\s*)"
                            r"([\"']?)([^\s'\"]{4,})\2")


def redact_secrets(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with every credential-looking value (and every literal in ``known``) replaced by a marker."""
    for literal in known:
        if literal and len(literal) >= 8:
            text = text.replace(literal, "[REDACTED:configured-secret]")
    for kind, pattern in SECRET_PATTERNS:
        text = pattern.sub(f"[REDACTED:{kind}]", text)
    text = URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}:[REDACTED:url-password]@", text)

    def assigned(m: re.Match[str]) -> str:
        if m.group(4).startswith("[REDACTED:"):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}{m.group(3)}[REDACTED:assigned-secret]{m.group(3)}"

    text = ASSIGNED_SECRET.sub(assigned, text)

    def short(m: re.Match[str]) -> str:
        if m.group(3).startswith("[REDACTED:"):
            return m.group(0)
        return f"{m.group(1)}{m.group(2)}[REDACTED:assigned-secret]{m.group(2)}"

    return SHORT_ASSIGNED.sub(short, text)


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (marker included), saying how many were cut."""
    if limit < 0:
        raise ValueError("limit must not be negative")
    if len(text) <= limit:
        return text
    marker = CUT_MARKER.format(n=len(text) - limit)
    keep = max(0, limit - len(marker) - 1)
    cut = len(text) - keep
    marker = CUT_MARKER.format(n=cut)
    return (text[:keep] + "\n" + marker)[:limit] if keep else marker[:limit]


# Paths that exist only inside the sandbox or on the reviewing machine: a PR author cannot open them, and they say
# how LogoMesh is laid out. Shown relative to the repository, to the installed package, or as a placeholder.
INTERNAL_PATHS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"/sandbox/repo/"), ""),
    (re.compile(r"/sandbox/repo\b"), "."),
    (re.compile(r"/opt/logomesh/envs/[^\s'\"`)\]]*?/site-packages/"), ""),
    (re.compile(r"/opt/logomesh/envs(?:/[^\s/'\"`)\]]+)?"), "$SANDBOX_ENV"),
    (re.compile(r"/sandbox(?:/[^\s/'\"`)\]]+)?"), "$SANDBOX"),
    (re.compile(r"(?:/private)?/(?:var/)?tmp/[^\s/'\"`)\]]+"), "$TMPDIR"),
)


def redact_internal_paths(text: str) -> str:
    """``text`` with no path of the sandbox or of a temporary directory: the one redaction every author-facing
    text (report, title, annotations, the JSON's what-to-fix) passes through when it is rendered."""
    for pattern, replacement in INTERNAL_PATHS:
        text = pattern.sub(replacement, text)
    return text
