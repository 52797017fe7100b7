"""Python's ``ast.parse`` behind one process-wide lock.

What: :func:`parse` is ``ast.parse`` taken one thread at a time; LogoMesh parses Python only through it (ruff's
``TID251`` bans ``ast.parse`` elsewhere in the product).
Why: CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state; when a garbage collection
inside one thread's conversion runs a finalizer and the interpreter switches to another thread that parses too, the
first raises ``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905, fixed in later
releases). A review parses in several worker threads at once (detectives, the red agent, mutation), and one such
error failed a whole review of markupsafe#115.
Example: ``parse("x = 1").body[0]`` is an ``ast.Assign``.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, never in two threads at once."""
    with _LOCK:
        return ast.parse(source, filename=filename)  # noqa: TID251 - the one place it is called


def parse_expression(source: str) -> ast.Expression:
    """``ast.parse(source, mode="eval")`` under the same lock (for ``ast.literal_eval`` of a string)."""
    with _LOCK:
        return ast.parse(source, mode="eval")  # noqa: TID251 - the one place it is called
