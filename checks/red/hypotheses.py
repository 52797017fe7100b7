"""The Red Agent's state space: attack hypotheses on the changed code and the attacks that refine them.

A :class:`Hypothesis` is one pathway an attacker could use — untrusted input reaching a dangerous sink, or a
dangerous construct on its own (a hard-coded token). An :class:`Attack` is a fully refined hypothesis: which
function, which argument carries the payload, which payload family. The MCTS tree is
root → hypothesis → argument → payload family; a leaf is an :class:`Attack` a probe can execute.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Attack classes a sandbox probe can confirm, and those only static analysis can establish.
RACE_KIND = "unlocked-shared-state"  # probed by running the callable from several threads at once
PROBED_KINDS = ("command-injection", "code-injection", "deserialization", "sql-injection", "path-traversal",
                "resource-exhaustion", RACE_KIND)
STATIC_KINDS = ("hardcoded-secret", "weak-randomness", "weak-crypto", "network-use")
KINDS = PROBED_KINDS + STATIC_KINDS


@dataclass(frozen=True)
class Target:
    """A callable in the changed code: its module path, qualified name and parameter names."""

    path: str
    qualname: str
    params: tuple[str, ...]
    is_method: bool = False
    # the short string literals the callable uses (Go: the names it reads a request's values by)
    keys: tuple[str, ...] = ()
    # an Express route's handler, which no export names: (method, path, its registration among the file's
    # registrations of that method and path, its place among the registration's handlers)
    route: tuple[str, str, int, int] | None = None


@dataclass(frozen=True)
class Hypothesis:
    """One suspected pathway. ``tainted`` names the parameters that reach the sink (empty: not traced)."""

    kind: str
    path: str
    line: int
    sink: str
    detail: str
    target: Target | None = None
    tainted: tuple[str, ...] = ()
    origins: tuple[str, ...] = ("taint",)
    scanner_ids: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        """Stable identity: the same pathway in the same code always gets the same key."""
        where = self.target.qualname if self.target else "<module>"
        return f"{self.kind}:{self.path}:{self.line}:{where}"

    @property
    def probed(self) -> bool:
        if self.kind == RACE_KIND:  # the race probe fills every argument itself
            return self.target is not None
        return self.kind in PROBED_KINDS and self.target is not None and bool(self.target.params)

    @property
    def traced(self) -> bool:
        return bool(self.tainted) or (self.kind in (*STATIC_KINDS, RACE_KIND) and "taint" in self.origins)

    def label(self) -> str:
        where = self.target.qualname if self.target else "<module>"
        return f"{self.kind} {self.path}:{self.line} {where}"


@dataclass(frozen=True)
class Attack:
    """A fully refined hypothesis: the probe calls ``hypothesis.target`` with ``family``'s payload in ``argument``."""

    hypothesis: Hypothesis
    argument: str
    family: str

    @property
    def key(self) -> str:
        return f"{self.hypothesis.key}|{self.argument}|{self.family}"


def merge(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    """Fold duplicates from several sources into one, keeping every origin.

    Duplicates are the same kind in the same function (or, outside functions, on the same line): scanners
    point at different lines of one flaw (bandit at the SQL string, the taint pass at ``execute``).
    """
    merged: dict[tuple[str, str, str], Hypothesis] = {}
    for hyp in sorted(hypotheses, key=lambda h: (h.path, h.line, h.kind, h.origins)):
        slot = (hyp.kind, hyp.path, hyp.target.qualname if hyp.target else f"line {hyp.line}")
        seen = merged.get(slot)
        if seen is None:
            merged[slot] = hyp
            continue
        primary, other = (seen, hyp) if "taint" in seen.origins or "taint" not in hyp.origins else (hyp, seen)
        merged[slot] = Hypothesis(
            kind=primary.kind, path=primary.path, line=primary.line, sink=primary.sink, detail=primary.detail,
            target=primary.target or other.target,
            tainted=tuple(dict.fromkeys(primary.tainted + other.tainted)),
            origins=tuple(sorted(set(primary.origins) | set(other.origins))),
            scanner_ids=tuple(sorted(set(primary.scanner_ids) | set(other.scanner_ids))),
        )
    return sorted(merged.values(), key=lambda h: (h.path, h.line, h.kind))
