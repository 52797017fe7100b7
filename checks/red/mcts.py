"""A Monte Carlo Tree Search planner with UCB1, a seeded RNG and a step/time budget.

The planner is generic over a :class:`SearchSpace`: states are tuples of action labels from the root, the space
says which refinements a state allows (with a prior), which states are terminal or closed, and how to roll a
state out to a reward in [0, 1]. One iteration:

1. **Selection** — from the root, while the node may not widen, descend to the open child with the highest
   UCB1 = mean + c·√(ln N_parent / n_child). A node widens while it has untried actions and fewer than
   ``branches`` open children (a confirmed or exhausted child frees its slot).
2. **Expansion** — add the untried action with the highest prior (ties broken by the seeded RNG).
3. **Rollout** — the space completes the new node's state and evaluates it (for the Red Agent: one probe in
   the sandbox). The new child is rolled out at once, so every child UCB1 compares has been visited.
4. **Backpropagation** — visits and rewards are added along the path; the next selection reads them.

A rollout answered from the space's cache costs no step; ``max_steps`` counts evaluations, ``max_time_seconds``
wall time (through an injectable clock).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

State = tuple[str, ...]
StopReason = Literal["steps", "time", "exhausted"]


@dataclass(frozen=True)
class Rollout:
    reward: float
    evaluated: bool
    """False when the answer came from a cache and cost nothing: it does not count as a step."""


class SearchSpace(Protocol):
    def actions(self, state: State) -> Sequence[tuple[str, float]]:
        """The refinements of ``state`` as (label, prior), in a deterministic order."""
        ...

    def is_terminal(self, state: State) -> bool: ...

    def is_closed(self, state: State) -> bool:
        """Whether the search should stop spending budget under ``state`` (e.g. it is already confirmed)."""
        ...

    async def rollout(self, state: State, rng: random.Random, time_left: float) -> Rollout: ...


@dataclass
class Node:
    state: State
    parent: Node | None
    prior: float = 1.0
    untried: list[tuple[str, float]] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    visits: int = 0
    total: float = 0.0
    closed: bool = False

    @property
    def mean(self) -> float:
        return self.total / self.visits if self.visits else 0.0

    def ucb1(self, exploration_weight: float) -> float:
        if self.visits == 0 or self.parent is None or self.parent.visits == 0:
            raise ValueError(f"UCB1 of unvisited node {self.state}")
        return self.mean + exploration_weight * math.sqrt(math.log(self.parent.visits) / self.visits)


@dataclass(frozen=True)
class Step:
    number: int
    decisions: tuple[str, ...]
    state: State
    reward: float
    evaluated: bool


@dataclass
class SearchResult:
    root: Node
    steps: int
    iterations: int
    stop_reason: StopReason
    trace: list[Step]
    elapsed_seconds: float

    def tree(self, max_depth: int = 3) -> list[dict[str, Any]]:
        """The tree, compact: one row per node (path, visits, mean reward), depth-first in creation order."""
        rows: list[dict[str, Any]] = []
        stack = list(reversed(self.root.children))
        while stack:
            node = stack.pop()
            rows.append({"path": "/".join(node.state), "visits": node.visits, "mean": round(node.mean, 4),
                         "closed": node.closed})
            if len(node.state) < max_depth:
                stack.extend(reversed(node.children))
        return rows


class MCTSPlanner:
    def __init__(self, space: SearchSpace, *, seed: int, max_steps: int, max_time_seconds: float, branches: int,
                 exploration_weight: float, clock: Callable[[], float] = time.monotonic,
                 max_iterations: int | None = None) -> None:
        if branches < 1 or max_steps < 1:
            raise ValueError("branches and max_steps must be at least 1")
        self.space = space
        self.rng = random.Random(seed)  # noqa: S311 - reproducible search, not secrecy
        self.max_steps = max_steps
        self.max_time_seconds = max_time_seconds
        self.branches = branches
        self.exploration_weight = exploration_weight
        self.clock = clock
        self.max_iterations = max_iterations or max_steps * 50

    def _node(self, state: State, parent: Node | None, prior: float = 1.0) -> Node:
        untried = [] if self.space.is_terminal(state) else list(self.space.actions(state))
        return Node(state=state, parent=parent, prior=prior, untried=untried)

    def _pick_untried(self, node: Node) -> tuple[str, float]:
        best = max(prior for _, prior in node.untried)
        ties = [i for i, (_, prior) in enumerate(node.untried) if prior == best]
        return node.untried.pop(ties[self.rng.randrange(len(ties))] if len(ties) > 1 else ties[0])

    def _refresh_closed(self, node: Node) -> bool:
        if not node.closed and node.state and self.space.is_closed(node.state):
            node.closed = True
        return node.closed

    def select(self, root: Node) -> tuple[Node, tuple[str, ...]] | None:
        """Walk down by UCB1 until a node may widen; expand it. None when the whole tree is closed."""
        while True:
            node: Node = root
            decisions: list[str] = []
            while True:
                open_children = [c for c in node.children if not self._refresh_closed(c)]
                if node.untried and len(open_children) < self.branches:
                    action, prior = self._pick_untried(node)
                    child = self._node((*node.state, action), node, prior)
                    node.children.append(child)
                    return child, (*decisions, f"expand:{action}")
                if not open_children:
                    break
                chosen = max(open_children, key=lambda c: c.ucb1(self.exploration_weight))
                decisions.append(f"ucb1:{chosen.state[-1]}")
                node = chosen
            if node is root:
                return None
            node.closed = True  # nothing left to try below: free its slot and select again

    async def run(self) -> SearchResult:
        start = self.clock()
        root = self._node((), None)
        trace: list[Step] = []
        steps = iterations = 0
        stop: StopReason = "steps"
        while steps < self.max_steps and iterations < self.max_iterations:
            elapsed = self.clock() - start
            if elapsed >= self.max_time_seconds:
                stop = "time"
                break
            picked = self.select(root)
            if picked is None:
                stop = "exhausted"
                break
            node, decisions = picked
            outcome = await self.space.rollout(node.state, self.rng, self.max_time_seconds - elapsed)
            reward = min(1.0, max(0.0, outcome.reward))
            iterations += 1
            steps += 1 if outcome.evaluated else 0
            walker: Node | None = node
            while walker is not None:
                walker.visits += 1
                walker.total += reward
                walker = walker.parent
            if self.space.is_terminal(node.state):
                node.closed = True  # a leaf is one deterministic attack: once is enough
            trace.append(Step(number=iterations, decisions=decisions, state=node.state, reward=reward,
                              evaluated=outcome.evaluated))
        else:
            stop = "steps" if steps >= self.max_steps else "exhausted"
        pending = list(root.children)
        while pending:  # settle the closed flags so the logged tree says what is finished
            node = pending.pop()
            self._refresh_closed(node)
            pending.extend(node.children)
        return SearchResult(root=root, steps=steps, iterations=iterations, stop_reason=stop, trace=trace,
                            elapsed_seconds=self.clock() - start)
