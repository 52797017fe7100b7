"""What the syntax-tree targets of JavaScript and Go share: the call a rule reported, and which parameters reach it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from checks.languages.tree import text, walk


def reaching(params: tuple[str, ...], assignments: Iterable[tuple[str, set[str]]], used: set[str]) -> tuple[str, ...]:
    """The parameters whose value reaches the names ``used`` by a sink: directly, or through locals assigned (``target
    ← names``) from them, to a fixpoint. Flow-insensitive, like the Python taint pass."""
    steps = list(assignments)
    reach = {name: {name} for name in params}
    changed = True
    while changed:
        changed = False
        for target, sources in steps:
            for names in reach.values():
                if target not in names and names & sources:
                    names.add(target)
                    changed = True
    return tuple(param for param in params if reach[param] & used)


def call_on_line(root: Any, line: int, symbol: str | None,
                 types: tuple[str, ...] = ("call_expression",)) -> Any:
    """The call a rule reported on ``line``: the first starting there whose callee (or constructor) ends with the rule's
    symbol (``exec.Command`` → ``….Command``), else the first starting there; None when none does."""
    calls = [node for node in walk(root) if node.type in types and node.start_point[0] + 1 == line]
    name = (symbol or "").rsplit(".", 1)[-1]
    for node in calls:
        callee = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        if callee is not None and name and text(callee).rsplit(".", 1)[-1] == name:
            return node
    return calls[0] if calls else None
