"""The syntax-tree targets' taint rule, shared by JavaScript and Go: which parameters reach a sink."""

from __future__ import annotations

from collections.abc import Iterable


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
