"""Concurrency probes: races in changed code confirmed by running it from threads with forced interleavings."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from checks.red.assumptions import stated_concurrency
from checks.red.hypotheses import RACE_KIND
from checks.red.taint import TaintPass
from tests.red.conftest import Attack
from tests.red.fixtures import write_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ratelimit"
LIMITER = (EXAMPLE / "feature" / "ratelimit" / "limiter.py").read_text(encoding="utf-8")
LOCKED = (EXAMPLE / "locked" / "ratelimit" / "limiter.py").read_text(encoding="utf-8")
COUNTER = '''"""Counts events."""
import threading


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> int:
        self.value += 1
        return 0
'''
IDEMPOTENT = '''"""Remembers that it ran."""
import threading


class Flag:
    def __init__(self) -> None:
        self.seen = frozenset()

    def mark(self) -> None:
        self.seen = self.seen | {1}
'''
SHARED = "One `RateLimiter` instance is shared by all the server's request threads."


def test_the_stated_assumption_is_read_from_the_description() -> None:
    assert stated_concurrency(SHARED) == "One `RateLimiter` instance is shared"
    assert stated_concurrency("the limiter is shared by all request threads") == "shared by all request threads"
    assert stated_concurrency("The cache is thread-safe.") == "thread-safe"
    assert stated_concurrency("Handles concurrent requests from many clients") == "concurrent requests"
    assert stated_concurrency("Adds a rate limiter with a sliding window.") is None


def _hypotheses(source: str, concurrent: bool = False) -> list[str]:
    return [h.sink for h in TaintPass("m.py", source, concurrent=concurrent).run() if h.kind == RACE_KIND]


def test_instance_state_read_modified_and_written_is_a_hypothesis_where_threads_share_it() -> None:
    assert _hypotheses(LIMITER) == []  # nothing says the instance is shared
    assert _hypotheses(LIMITER, concurrent=True) == ["self._hits"]
    assert _hypotheses(COUNTER) == ["self.value"]  # a threaded module
    assert _hypotheses(LOCKED, concurrent=True) == []  # takes a lock
    lone = "import threading\nclass Log:\n    def add(self, x):\n        self.items.append(x)\n"
    assert _hypotheses(lone) == []  # one atomic operation


async def test_a_limiter_without_its_lock_is_confirmed_with_a_reproducer(attack: Attack, tmp_path: Path) -> None:
    analysis, _agent, sandbox = await attack({"shop/limiter.py": LIMITER}, body=SHARED)
    races = [f for f in analysis.findings if f.id.startswith(RACE_KIND)]
    assert len(races) == 1
    race = races[0]
    assert race.confirmed and race.severity == "high" and race.cwe == "CWE-362"
    assert race.effect is not None and "a limit exceeded" in race.effect
    assert race.location is not None and race.location.path == "shop/limiter.py"
    assert sandbox.probes and analysis.attack_successful
    assert race.reproducer is not None
    # the reproducer shows the race on its own, outside LogoMesh
    repo = write_repo(tmp_path / "again", {"shop/limiter.py": LIMITER})
    shown = subprocess.run([sys.executable, "-c", race.reproducer], cwd=repo, capture_output=True, text=True,
                           timeout=60, check=True).stdout
    alone, together = (ast.literal_eval(line.split(":", 1)[1].strip()) for line in shown.splitlines())
    assert alone == {"False": 29, "True": 3}
    assert together["True"] > 3


async def test_a_limiter_with_its_lock_yields_no_race(attack: Attack) -> None:
    analysis, _agent, sandbox = await attack({"shop/limiter.py": LOCKED}, body=SHARED)
    assert [f for f in analysis.findings if f.id.startswith(RACE_KIND)] == []
    assert sandbox.probes == []


async def test_a_lost_update_inside_one_line_is_confirmed(attack: Attack) -> None:
    analysis, _agent, _sandbox = await attack({"shop/counter.py": COUNTER})
    (race,) = analysis.findings
    assert race.confirmed and race.severity == "high"
    assert race.effect is not None and "lost update" in race.effect


async def test_an_unconfirmed_race_is_a_low_hint_unless_the_change_says_the_code_is_shared(attack: Attack) -> None:
    plain, _a, box = await attack({"shop/flag.py": IDEMPOTENT})
    (hint,) = plain.findings
    assert not hint.confirmed and hint.severity == "low" and box.probes
    assert hint.effect is not None and "no race seen" in hint.effect
    stated, _a, _b = await attack({"shop/flag.py": IDEMPOTENT}, body="Flag is thread-safe: shared by worker threads.")
    (evidence,) = stated.findings
    assert not evidence.confirmed and evidence.severity == "medium"
    assert evidence.effect is not None and "the change says the code runs concurrently" in evidence.effect


@pytest.mark.parametrize("steps", [1])
async def test_a_stated_assumption_makes_the_probe_required_beyond_the_budget(attack: Attack, steps: int) -> None:
    modules = {"shop/limiter.py": LIMITER, "shop/shell.py": "import subprocess\n\ndef run(cmd):\n"
               "    subprocess.run(cmd, shell=True)\n"}
    analysis, agent, sandbox = await attack(modules, body=SHARED, overrides={"red": {"max_steps": steps}})
    assert agent.last_search is not None and agent.last_search.steps == 1
    races = [f for f in analysis.findings if f.id.startswith(RACE_KIND)]
    assert len(races) == 1 and races[0].confirmed
    assert len(sandbox.probes) == 2 and analysis.search is not None
    assert analysis.search["required"] == [f"{races[0].id}|*|opcode-yield"]
