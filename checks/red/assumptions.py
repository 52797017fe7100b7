"""Assumptions about how the changed code runs: stated by the PR, by the rubric, or by the code's own docs.

What: :func:`stated_concurrency` finds the words that say code runs concurrently — "thread-safe", "shared by
(request) threads", "one instance shared", "concurrent requests", "from several threads"…; :func:`documented`
reads them in a module's docstrings (the module's, its classes' and its functions'); :func:`assumed_concurrency`
gives, for one changed callable, who says it runs concurrently: the PR's text, the rubric's
``assumptions.concurrent`` globs (read from the base branch, so a change cannot drop them), or the docstring of
its module, its class or itself.
Why: a race is a broken assumption; when the change, the repository's rules or the code's own documentation say
the code is shared between threads or processes, a read-modify-write of shared state without a lock is evidence
before any probe confirms it, and the race probe is required.
Example: "one `RateLimiter` instance is shared by all the server's request threads" → ``"shared by all the
server's request threads"``; a class docstring "Thread-safe: …" → ``the docstring of RateLimiter says
'Thread-safe'``; ``assumptions: {concurrent: ["ratelimit/**"]}`` → ``the rubric's assumptions.concurrent
('ratelimit/**')``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from checks import pyast
from checks.constraints import path_matches

CONCURRENCY = re.compile(
    r"thread[- ]?safe(?:ty)?|(?:shared|used|called)\s+(?:by|from|across|between)\s+(?:\S+\s+){0,4}?"
    r"(?:threads|workers|requests|coroutines|tasks|processes)|concurrent(?:ly)?\s+(?:\S+\s+){0,2}?"
    r"(?:requests|calls|use|access|threads|workers)|(?:multiple|several|many)\s+(?:threads|processes)|multi-?threaded|"
    r"(?:one|a single|the same)\s+(?:\S+\s+){0,3}?instance\s+(?:is\s+)?shared",
    re.IGNORECASE)
# "not thread-safe", "is not safe to share between threads": a docstring that disclaims concurrency states none
NEGATION = re.compile(r"\b(?:not|never|no|none|without|unsafe)\b|n't\b", re.IGNORECASE)
DISCLAIMED = re.compile(r"\b(?:not|never|isn't|is\s+not|aren't)\s+(?:\S+\s+){0,2}?$", re.IGNORECASE)


def stated_concurrency(text: str) -> str | None:
    """The words of ``text`` that say the code runs concurrently, or None."""
    flat = " ".join(text.split())
    for found in CONCURRENCY.finditer(flat):
        if not DISCLAIMED.search(flat[max(0, found.start() - 40):found.start()]):
            return found.group(0)[:120]
    return None


def _documented_words(docstring: str) -> str | None:
    """What a docstring says of concurrency: a sentence that names it with a negation ("Thread safety: none",
    "callers must not share it between threads") states no assumption."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n\s*\n", docstring):
        words = stated_concurrency(sentence)
        if words is not None and not NEGATION.search(sentence):
            return words
    return None


def documented(source: str) -> dict[str, str]:
    """The scopes of ``source`` whose docstring says they run concurrently: ``""`` for the module, else a class's
    or a function's qualified name (``RateLimiter``, ``RateLimiter.allow``), with the words that say so."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[str, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            words = _documented_words(ast.get_docstring(node, clean=True) or "")
            if words is not None:
                found[name] = words
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{name}.{child.name}" if name else child.name)

    visit(tree, "")
    return found


def assumed_concurrency(path: str, qualname: str | None, stated: str | None, globs: Sequence[str],
                        docs: dict[str, str]) -> str | None:
    """Who says the callable ``qualname`` of ``path`` runs concurrently, as a phrase for the report, or None:
    the PR (``stated``, its words), the rubric (``globs``), or the docstrings ``docs`` of ``path`` (its module's,
    its class's, its own)."""
    if stated is not None:
        return f"the change says the code runs concurrently ('{stated}')"
    if pattern := next((g for g in globs if path_matches(path, g)), None):
        return f"the rubric's assumptions.concurrent ('{pattern}') says {path} runs concurrently"
    parts = (qualname or "").split(".")
    for scope in [".".join(parts[:n]) for n in range(len(parts), 0, -1)] + [""]:
        if scope in docs:
            where = f"the docstring of {scope}" if scope else f"the docstring of {path}"
            return f"{where} says it runs concurrently ('{docs[scope]}')"
    return None
