"""What the tree-sitter plug-ins (``go_syntax``, ``javascript_syntax``, ``python_dialect``) share: a grammar's parser,
walking a syntax tree, a node's text."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=8)
def grammar(module: str, function: str = "language") -> Any:
    """A tree-sitter parser for the grammar wheel ``module`` (its ``function`` gives the language), or None when
    tree-sitter or that wheel is not installed."""
    try:
        import tree_sitter

        wheel = importlib.import_module(module)
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(getattr(wheel, function)()))


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
