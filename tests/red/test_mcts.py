"""The planner on its own: UCB1 is reached, rewards steer the next choice, the seed fixes the tree, budgets hold."""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field

import pytest

from checks.red.mcts import MCTSPlanner, Node, Rollout, SearchResult, State


@dataclass
class ArmSpace:
    """Three arms under the root, each with ``leaves`` terminal refinements; an arm's reward is fixed."""

    rewards: dict[str, float]
    leaves: int = 4
    closed: set[str] = field(default_factory=set)
    cached: set[State] = field(default_factory=set)
    rollouts: list[State] = field(default_factory=list)

    def actions(self, state: State) -> Sequence[tuple[str, float]]:
        if not state:
            return [(arm, 1.0) for arm in sorted(self.rewards)]
        return [(f"leaf{i}", 1.0) for i in range(self.leaves)]

    def is_terminal(self, state: State) -> bool:
        return len(state) == 2

    def is_closed(self, state: State) -> bool:
        return state[0] in self.closed

    async def rollout(self, state: State, rng: random.Random, time_left: float) -> Rollout:
        self.rollouts.append(state)
        return Rollout(reward=self.rewards[state[0]], evaluated=state not in self.cached)


def planner(space: ArmSpace, seed: int = 7, steps: int = 12, **kw: object) -> MCTSPlanner:
    return MCTSPlanner(space, seed=seed, max_steps=steps, max_time_seconds=kw.pop("time", 60.0),  # type: ignore[arg-type]
                       branches=kw.pop("branches", 3), exploration_weight=1.414, **kw)  # type: ignore[arg-type]


async def test_ucb1_is_reached_once_the_root_is_fully_widened() -> None:
    result = await planner(ArmSpace({"a": 0.5, "b": 0.5, "c": 0.5})).run()
    first_moves = [step.decisions[0].split(":")[0] for step in result.trace]
    assert first_moves[:3] == ["expand", "expand", "expand"]
    assert set(first_moves[3:]) == {"ucb1"}
    assert all(child.visits >= 1 for child in result.root.children)


async def test_rewards_change_the_next_choice() -> None:
    good_a = await planner(ArmSpace({"a": 1.0, "b": 0.0, "c": 0.0}), steps=4).run()
    good_b = await planner(ArmSpace({"a": 0.0, "b": 1.0, "c": 0.0}), steps=4).run()
    # Same seed, same first three expansions; only the backpropagated rewards differ.
    assert [s.decisions for s in good_a.trace[:3]] == [s.decisions for s in good_b.trace[:3]]
    assert good_a.trace[3].decisions[0] == "ucb1:a"
    assert good_b.trace[3].decisions[0] == "ucb1:b"


async def test_the_rewarded_arm_gets_most_visits_but_the_others_are_still_explored() -> None:
    result = await planner(ArmSpace({"a": 0.9, "b": 0.1, "c": 0.0}, leaves=40), steps=40).run()
    visits = {child.state[0]: child.visits for child in result.root.children}
    assert visits["a"] > visits["b"] >= visits["c"] >= 2
    assert sum(visits.values()) == 40 == result.root.visits


def test_ucb1_formula_and_unvisited_guard() -> None:
    root = Node(state=(), parent=None, visits=10)
    child = Node(state=("a",), parent=root, visits=4, total=2.0)
    assert child.ucb1(1.414) == pytest.approx(0.5 + 1.414 * math.sqrt(math.log(10) / 4))
    with pytest.raises(ValueError, match="unvisited"):
        Node(state=("b",), parent=root).ucb1(1.414)


async def test_the_same_seed_gives_the_same_tree_and_other_seeds_can_differ() -> None:
    def run(seed: int) -> Awaitable[SearchResult]:
        return planner(ArmSpace({"a": 0.3, "b": 0.3, "c": 0.3}), seed=seed).run()

    first, second = await run(11), await run(11)
    assert [s.decisions for s in first.trace] == [s.decisions for s in second.trace]
    assert first.tree() == second.tree()
    others = {tuple(s.decisions for s in (await run(seed)).trace) for seed in range(6)}
    assert len(others) > 1  # ties between equal priors are broken by the seeded RNG


async def test_max_steps_is_respected_and_cached_rollouts_cost_no_step() -> None:
    space = ArmSpace({"a": 0.2, "b": 0.2, "c": 0.2})
    space.cached = {("a",), ("b",)}
    result = await planner(space, steps=5).run()
    assert result.steps == 5 and result.stop_reason == "steps"
    assert result.iterations == 5 + sum(1 for s in space.rollouts if s in space.cached)


async def test_the_time_budget_stops_the_search() -> None:
    ticks = iter(range(0, 1000, 10))
    result = await planner(ArmSpace({"a": 0.2, "b": 0.2, "c": 0.2}), steps=100, time=35.0,
                           clock=lambda: float(next(ticks))).run()
    assert result.stop_reason == "time"
    assert result.steps == 3  # readings at 10, 20, 30 are inside the budget, 40 is not


async def test_closed_subtrees_are_skipped_and_an_exhausted_tree_stops() -> None:
    space = ArmSpace({"a": 1.0, "b": 0.0}, leaves=2)
    space.closed = {"a"}  # e.g. already confirmed: no more budget there
    result = await planner(space, steps=50).run()
    assert result.stop_reason == "exhausted"
    assert {s[0] for s in space.rollouts} == {"a", "b"}  # "a" was rolled out once when expanded, then skipped
    assert sum(1 for s in space.rollouts if s[0] == "a") == 1


async def test_a_closed_child_frees_its_branch_slot() -> None:
    space = ArmSpace({f"arm{i}": 0.5 for i in range(5)}, leaves=1)
    result = await planner(space, steps=30, branches=2).run()
    assert {child.state[0] for child in result.root.children} == set(space.rewards)
    assert result.stop_reason == "exhausted"
