"""What the tree-sitter plug-ins (``go_syntax``, ``javascript_syntax``) share: walking a syntax tree, a node's text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def walk(node: Any) -> Iterator[Any]:
    """Every node under ``node`` (itself first), in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def text(node: Any) -> str:
    """A node's source text."""
    return bytes(node.text or b"").decode("utf-8", "replace")
