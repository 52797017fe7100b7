"""Concurrency probes: races in changed code confirmed by running it from threads with forced interleavings."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checks.red.assumptions import stated_concurrency
from checks.red.hypotheses import RACE_KIND, Hypothesis, Target
from checks.red.hypotheses import Attack as Probe
from checks.red.payloads import families
from checks.red.probes import ProbeOutcome, build_probe, judge_probe, probe_nonce
from checks.red.race import judge_race
from checks.red.taint import TaintPass
from tests.red.conftest import Attack
from tests.red.fixtures import write_repo
from tests.red.local_sandbox import LocalProbeSandbox

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
ASYNC_LIMITER = '''"""Admits at most `limit` concurrent jobs."""
import asyncio


class Admission:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    async def admit(self) -> bool:
        if self.used >= self.limit:
            return False
        await asyncio.sleep(0)  # records the admission elsewhere
        self.used += 1
        return True
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


async def test_a_coroutine_checking_then_acting_across_an_await_is_confirmed_with_tasks(attack: Attack) -> None:
    analysis, _agent, _sandbox = await attack({"shop/admission.py": ASYNC_LIMITER},
                                              body="Admission is shared by the concurrent requests of the server.")
    (race,) = analysis.findings
    assert race.confirmed and race.severity == "high"
    assert race.effect is not None and "a limit exceeded" in race.effect and race.reproducer is None
    locked = ASYNC_LIMITER.replace("        self.used = 0\n",
                                   "        self.used = 0\n        self._lock = asyncio.Lock()\n")
    locked = locked.replace("        if self.used >= self.limit:\n            return False\n"
                            "        await asyncio.sleep(0)  # records the admission elsewhere\n"
                            "        self.used += 1\n        return True\n",
                            "        async with self._lock:\n            if self.used >= self.limit:\n"
                            "                return False\n            await asyncio.sleep(0)\n"
                            "            self.used += 1\n            return True\n")
    assert "async with self._lock" in locked
    fixed, _a, _b = await attack({"shop/admission.py": locked},
                                 body="Admission is shared by the concurrent requests of the server.")
    assert fixed.findings == ()


REGISTRY = '''"""One client per service, made on first use."""


class Client:
    def __init__(self, name: str) -> None:
        self.name = name


class Registry:
    def __init__(self) -> None:
        self._made: dict[str, Client] = {}

    def client(self, name: str) -> Client:
        found = self._made.get(name)
        if found is None:
            found = Client(name)
            self._made[name] = found
        return found
'''
ZONES = '''"""Time zones, one instance per name, the most recently used kept alive."""
from collections import OrderedDict


class _Cached(type):
    def __init__(cls, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cls._recent = OrderedDict()
        cls._keep = 3

    def __call__(cls, name):
        instance = super().__call__(name)
        cls._recent[name] = cls._recent.pop(name, instance)
        if len(cls._recent) > cls._keep:
            cls._recent.popitem(last=False)
        return instance


class Zone(metaclass=_Cached):
    def __init__(self, name):
        self.name = name
'''
ZONE_TESTS = '''from shop.zones import Zone


def test_names():
    for zone in (Zone("UTC"), Zone("CET"), Zone("EST"), Zone("PST"), Zone("JST"), Zone(name="IST")):
        assert zone.name
'''
POOL = '''"""Connections waiting to be reused."""


class Pool:
    def __init__(self) -> None:
        self.idle: list[str] = []
        self.closed = False

    def put(self, conn: str) -> None:
        if self.closed:
            return
        self.idle.append(conn)

    def close(self) -> None:
        self.closed = True
        while self.idle:
            self.idle.pop()
'''
STATED = "The registry is shared by all the server's request threads."


def _locked(source: str, methods: dict[str, str]) -> str:
    """``source`` with the bodies of ``methods`` (name → first body line) under one lock of the module."""
    lines = ["import threading", "_LOCK = threading.RLock()", *source.splitlines()]
    out: list[str] = []
    inside = ""
    for line in lines:
        stripped = line.strip()
        if inside and line.startswith("        ") and stripped:
            out.append("    " + line)
            continue
        inside = ""
        out.append(line)
        for name in methods:
            if stripped.startswith(f"def {name}("):
                out.append("        with _LOCK:")
                inside = name
    return "\n".join(out) + "\n"


def _literal(effect: str) -> str:
    """What the probe saw on the subject it built from literals (before what it saw on the one a test builds)."""
    return effect.split("; on the object the tests build")[0]


async def _probe(tmp_path: Path, modules: dict[str, str], path: str, qualname: str, sink: str = "state",
                 sandbox_for: Callable[[Path], Any] = LocalProbeSandbox) -> ProbeOutcome:
    """The race probe of one callable, run for real whatever the static pass says (a locked version too), in the
    sandbox ``sandbox_for`` makes of the repository; a ``file:`` sink drives it from processes."""
    repo = write_repo(tmp_path / f"direct{len(list(tmp_path.iterdir()))}", modules)
    target = Target(path=path, qualname=qualname, params=(), is_method="." in qualname)
    hypothesis = Hypothesis(kind=RACE_KIND, path=path, line=1, sink=sink, detail="state", target=target)
    sandbox = sandbox_for(repo)
    for family in families(RACE_KIND):
        probe = Probe(hypothesis, "*", family.name)
        nonce = probe_nonce(7, probe)
        outcome = judge_probe(probe, nonce, await sandbox.run_probe(build_probe(probe, nonce, 7), 60.0))
        if outcome.confirmed:
            return outcome
    return outcome


async def test_an_object_built_twice_for_one_key_is_confirmed(attack: Attack, tmp_path: Path) -> None:
    analysis, _agent, _sandbox = await attack({"shop/registry.py": REGISTRY}, body=STATED)
    (race,) = analysis.findings
    assert race.confirmed and race.effect is not None
    assert "one object expected, several built" in race.effect and "client#0" in race.effect
    locked = _locked(REGISTRY, {"client": ""})
    assert "with _LOCK:" in locked
    fixed = await _probe(tmp_path, {"shop/registry.py": locked}, "shop/registry.py", "Registry.client")
    assert not fixed.confirmed and fixed.effect.startswith("no race seen in 5 trial(s)")


async def test_a_metaclass_cache_is_driven_through_its_classes_with_the_tests_arguments(
        attack: Attack, tmp_path: Path) -> None:
    modules = {"shop/zones.py": ZONES, "tests/test_zones.py": ZONE_TESTS}
    analysis, _agent, _sandbox = await attack(modules, body="Zone lookups are shared by the request threads.")
    (race,) = [f for f in analysis.findings if f.id.startswith(RACE_KIND)]
    assert race.confirmed and race.effect is not None
    # six names from the tests, three kept: two threads both evicting leave fewer than any order of the calls, or
    # one evicts what the other just moved; with one inferred name the cache never evicts and nothing is seen
    assert race.effect.startswith(("a broken size: self._recent holds", "an exception only under concurrency"))
    assert "every sequential order 3" in race.effect or "KeyError" in race.effect
    assert race.reproducer is None
    locked = _locked(ZONES, {"__call__": ""})
    fixed = await _probe(tmp_path, {"shop/zones.py": locked, "tests/test_zones.py": ZONE_TESTS}, "shop/zones.py",
                         "_Cached.__call__")
    assert not fixed.confirmed and fixed.effect.startswith("no race seen in 15 trial(s)"), fixed.effect
    assert _literal(fixed.effect).endswith(
        "alone, alone with one argument set repeated, and 3 calls that differ against each of their orders, 5 each in "
        "turn"), fixed.effect


async def test_a_check_in_one_method_and_an_act_in_another_are_driven_together(
        attack: Attack, tmp_path: Path) -> None:
    analysis, _agent, _sandbox = await attack({"shop/pool.py": POOL},
                                              body="One pool is shared by the worker threads.")
    (race,) = analysis.findings
    assert race.confirmed and race.effect is not None
    # close() alone has no race; a put() that checked `closed` before close() emptied the pool leaves a connection,
    # or one that appended between close()'s check and its pop makes the pop fail
    assert race.effect.startswith(("a broken size: self.idle holds 1", "an exception only under concurrency"))
    assert "(close and put called together)" in race.effect and race.reproducer is None
    locked = _locked(POOL, {"put": "", "close": ""})
    fixed = await _probe(tmp_path, {"shop/pool.py": locked}, "shop/pool.py", "Pool.close")
    # each way of calling close gets its own trials: alone, and together with put
    assert not fixed.confirmed and fixed.effect.startswith("no race seen in 15 trial(s)")
    assert _literal(fixed.effect).endswith(
        "interleavings: alone and with put, and 3 calls that differ against each of their orders, 5 each in turn"), \
        fixed.effect


SLOW = '''"""Counts events, slowly, under its lock."""
import threading
import time


class Slow:
    def __init__(self) -> None:
        self.value = 0
        self.lock = threading.Lock()

    def bump(self) -> int:
        with self.lock:
            time.sleep(0.005)
            self.value += 1
            return self.value
'''


async def test_a_slow_target_reports_the_trials_its_time_budget_allowed(tmp_path: Path) -> None:
    """A probe that would outlive its timeout reports what it ran (and says the budget ended it), never nothing."""
    repo = write_repo(tmp_path / "slow", {"shop/slow.py": SLOW})
    target = Target(path="shop/slow.py", qualname="Slow.bump", params=(), is_method=True)
    hypothesis = Hypothesis(kind=RACE_KIND, path="shop/slow.py", line=1, sink="state", detail="state", target=target)
    probe = Probe(hypothesis, "*", families(RACE_KIND)[0].name)
    nonce = probe_nonce(7, probe)
    # 32 calls of 5 ms: each run takes at least 0.16 s, so 0.6 of a 1 s timeout ends the trials after the first
    program = build_probe(probe, nonce, 7, timeout_seconds=1.0)
    assert '"budget": 0.6,' in program
    outcome = judge_probe(probe, nonce, await LocalProbeSandbox(repo).run_probe(program, 60.0))
    assert not outcome.confirmed
    assert re.fullmatch(r"no race seen in [1-4] of 5 trial\(s\) of 8 threads × 4 calls with forced interleavings: "
                        r"the probe's time budget \(0\.6 s\) ended the rest; on the object the tests build: not "
                        r"tried: the probe's time budget ended", outcome.effect), outcome.effect
    unbounded = judge_probe(probe, nonce, await LocalProbeSandbox(repo).run_probe(build_probe(probe, nonce, 7), 60.0))
    assert _literal(unbounded.effect) == "no race seen in 5 trial(s) of 8 threads × 4 calls with forced interleavings"


QUEUED = '''"""Sends through one slow shared line."""
import threading
import time

LINE = threading.Lock()


class Sender:
    def __init__(self) -> None:
        self.sent = 0
        self.lock = threading.Lock()

    def send(self) -> int:
        with LINE:
            time.sleep(0.01)
        with self.lock:
            self.sent += 1
            return self.sent
'''
CROSSED = '''"""Moves items between two shelves, each under its own lock."""
import threading


class Shelves:
    def __init__(self) -> None:
        self.left_lock = threading.Lock()
        self.right_lock = threading.Lock()
        self.left = [1, 2, 3]
        self.right = [4, 5, 6]

    def to_right(self) -> None:
        with self.left_lock:
            with self.right_lock:
                self.right.append(self.left.pop() if self.left else 0)

    def to_left(self) -> None:
        with self.right_lock:
            with self.left_lock:
                self.left.append(self.right.pop() if self.right else 0)
'''


async def test_calls_slow_in_every_order_are_not_hung_threads_but_a_deadlock_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads are hung only when they outlive several times what the same calls take one after another: calls
    queued on one slow shared resource take as long together, a deadlock between two methods never ends."""
    monkeypatch.setattr("checks.red.race.PATIENCE", 0.15)
    # 32 calls of 10 ms on one line: 0.32 s one after another and as long together, twice the 0.15 s floor
    slow = await _probe(tmp_path, {"shop/sender.py": QUEUED}, "shop/sender.py", "Sender.send")
    assert not slow.confirmed and slow.effect.startswith("no race seen in 5 trial(s)"), slow.effect
    crossed = await _probe(tmp_path, {"shop/shelves.py": CROSSED}, "shop/shelves.py", "Shelves.to_right")
    assert crossed.confirmed, crossed.effect
    assert re.match(r"[2-8] thread\(s\) never finished, each waiting for a lock \((shelves\.py:(13|14|18|19)(, )?)+\): "
                    r"still running 0\.[12] s after they started, where one after another the same calls took 0\.0 s "
                    r"\(to_right and to_left called together\)", crossed.effect), crossed.effect


GUARDED = '''"""A tally whose helper runs only under its callers' lock."""
import threading


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    def add(self) -> int:
        with self.lock:
            return self._bump()

    def add_twice(self) -> int:
        self.lock.acquire()
        try:
            self._bump()
            return self._bump()
        finally:
            self.lock.release()

    def _bump(self) -> int:
        value = self.count
        self.count = value + 1
        return self.count
'''


async def test_a_private_helper_only_called_under_its_callers_lock_is_probed_through_them(tmp_path: Path) -> None:
    helper = await _probe(tmp_path, {"shop/tally.py": GUARDED}, "shop/tally.py", "Tally._bump")
    assert not helper.confirmed
    assert helper.effect == ("inconclusive: every call of _bump in its module is made holding a lock (line 12, 17, "
                             "18): its callers' locking guards it, so it is probed through them, not alone")
    caller = await _probe(tmp_path, {"shop/tally.py": GUARDED}, "shop/tally.py", "Tally.add")
    assert not caller.confirmed and caller.effect.startswith("no race seen in 15 trial(s)"), caller.effect
    assert _literal(caller.effect).endswith(
        "alone and with add_twice, and 3 calls that differ against each of their orders, 5 each in turn"), caller.effect
    # hostile: one caller that skips the lock, and the helper is probed alone — its lost update confirmed
    leaky = GUARDED.replace("    def _bump(self)", "    def peek(self) -> int:\n        return self._bump()\n\n"
                            "    def _bump(self)")
    raced = await _probe(tmp_path, {"shop/tally.py": leaky}, "shop/tally.py", "Tally._bump")
    assert raced.confirmed and raced.effect.startswith(("a lost update: self.count is ",
                                                        "results no sequential order gives")), raced.effect


AGGREGATE = '''"""Sums what it is given."""


class Sum:
    def __init__(self) -> None:
        self.current = 0

    def update(self, value: float) -> None:
        self.current += value
'''
AGGREGATE_TESTS = """from shop.aggregate import Sum


def test_sums():
    total = Sum()
    total.update(123)
    total.update(4.0)
    total.update(1.0)
    assert total.current == 128.0
"""


async def test_a_lost_update_between_calls_with_several_argument_sets_is_confirmed_by_one_set_repeated(
        tmp_path: Path) -> None:
    """The tests call ``update`` with three values: their calls in another order may give another state (only the
    invariants could tell a race), but one argument set repeated has one order, so a lost update shows; the
    locked version shows none, and a state the calls set at random is no race."""
    modules = {"shop/aggregate.py": AGGREGATE, "tests/test_aggregate.py": AGGREGATE_TESTS}
    raced = await _probe(tmp_path, modules, "shop/aggregate.py", "Sum.update")
    assert raced.confirmed and raced.effect.startswith("a lost update"), raced.effect
    assert "(every call with one argument set)" in raced.effect
    assert raced.reproducer is not None and "CALLS = [((123,), {})]" in raced.reproducer
    fixed = await _probe(tmp_path, {**modules, "shop/aggregate.py": _locked(AGGREGATE, {"update": ""})},
                         "shop/aggregate.py", "Sum.update")
    assert not fixed.confirmed and "alone with one argument set repeated" in fixed.effect, fixed.effect
    noisy = AGGREGATE.replace('"""Sums what it is given."""\n', '"""Samples."""\nimport random\n').replace(
        "self.current += value", "self.current = random.random() * value")
    sampled = await _probe(tmp_path, {**modules, "shop/aggregate.py": noisy}, "shop/aggregate.py", "Sum.update")
    assert not sampled.confirmed, sampled.effect


CATALOG = '''"""Names and whether each is enabled, kept for the whole process."""


class Catalog:
    _entries: dict = {}
    LIMIT = 10

    def enable_all(self) -> int:
        enabled = 0
        for name in Catalog._entries:
            Catalog._entries[name] = True
            enabled += 1
        return 0

    def touch(self) -> None:
        Catalog._entries["n%d" % len(Catalog._entries)] = False

    def limit(self) -> int:
        return self.LIMIT
'''


async def test_a_registry_kept_on_the_class_pairs_the_methods_that_share_it(tmp_path: Path) -> None:
    """``enable_all`` iterates a dict the class keeps for every instance while ``touch`` adds to it: only
    together does the dict change size during the iteration; a method that reads a class constant is no pair."""
    modules = {"shop/catalog.py": CATALOG}
    raced = await _probe(tmp_path, modules, "shop/catalog.py", "Catalog.enable_all")
    assert raced.confirmed and "RuntimeError" in raced.effect and "touch called together" in raced.effect, \
        raced.effect
    locked = _locked(CATALOG, {"enable_all": "", "touch": ""})
    fixed = await _probe(tmp_path, {"shop/catalog.py": locked}, "shop/catalog.py", "Catalog.enable_all")
    assert not fixed.confirmed and _literal(fixed.effect).endswith(
        "alone and with touch, and 3 calls that differ against each of their orders, 5 each in turn"), fixed.effect


async def test_a_module_its_package_uses_at_import_starts_every_run_alike(tmp_path: Path) -> None:
    """The package's ``__init__`` registers a default at import: the first run (a fresh import) and every later
    one (a reload) must start from the same state, or the calls one after another differ and nothing is seen."""
    modules = {"tally/__init__.py": "from .counter import Counter\n\nCounter.total += 5\n",
               "tally/counter.py": COUNTER.replace("    def __init__(self) -> None:\n        self.value = 0\n",
                                                   "    total = 0\n").replace("self.value += 1",
                                                                               "Counter.total += 1")}
    raced = await _probe(tmp_path, modules, "tally/counter.py", "Counter.bump")
    assert raced.confirmed and raced.effect.startswith("a lost update"), raced.effect


BROKER = '''"""Subscriptions to events."""


class Subscription:
    def __init__(self, broker: "Broker", name: str) -> None:
        self.broker = broker
        self.name = name

    def __repr__(self) -> str:
        return f"Subscription({self.name!r}, one of {len(self.broker._subscriptions)})"


class Broker:
    def __init__(self) -> None:
        self._subscriptions: list = []

    def subscribe(self, name: str) -> Subscription:
        subscription = Subscription(self, name)
        self._subscriptions.append(subscription)
        return subscription
'''


async def test_what_a_call_returns_is_read_once_the_calls_are_over(tmp_path: Path) -> None:
    """``subscribe`` appends in one step (no race), and returns an object whose text shows how many subscriptions
    the broker holds: read while the other threads still subscribe, it differs from any order's text, which is
    the probe's reading, not the code's race."""
    honest = await _probe(tmp_path, {"events/broker.py": BROKER}, "events/broker.py", "Broker.subscribe")
    assert not honest.confirmed and honest.effect.startswith("no race seen"), honest.effect
    # hostile: the same text, but the append is a read-modify-write of the list: the lost update is still seen
    racy = BROKER.replace("self._subscriptions.append(subscription)",
                          "self._subscriptions = self._subscriptions + [subscription]")
    raced = await _probe(tmp_path, {"events/broker.py": racy}, "events/broker.py", "Broker.subscribe")
    assert raced.confirmed, raced.effect


RESERVOIR = '''"""Keeps a random sample of what it is offered."""
from abc import ABC, abstractmethod
from random import randrange


class Reservoir(ABC):
    def __init__(self, size: int = 2) -> None:
        self.size = size
        self.seen = 0
        self.kept: dict = {}

    def offer(self, value: float) -> None:
        index = self._slot()
        if index is not None:
            self.kept[index] = value

    @abstractmethod
    def _slot(self) -> "int | None": ...


class Sample(Reservoir):
    def _slot(self) -> "int | None":
        self.seen += 1
        if self.seen <= self.size:
            return self.seen - 1
        index = randrange(self.seen)
        return index if index < self.size else None
'''
RESERVOIR_TESTS = """from stats.reservoir import Sample


def test_keeps_two():
    sample = Sample(2)
    sample.offer(1.0)
    sample.offer(2.0)
    sample.offer(3.0)
    assert len(sample.kept) == 2
"""


async def test_an_abstract_class_method_is_driven_through_its_subclass_and_calls_that_draw_are_compared_by_counts(
        tmp_path: Path) -> None:
    """``Reservoir.offer`` is the abstract class's: it is driven on ``Sample``, the class that inherits it as it is.
    Its calls draw random numbers, so overlapping calls get other draws than in any order one after another (a draw
    and its use are two steps): which values it keeps is not compared, only what the same calls leave with other
    draws too — how many values it has seen, which the unlocked count loses and the locked one does not."""
    modules = {"stats/__init__.py": "", "stats/reservoir.py": RESERVOIR, "tests/test_reservoir.py": RESERVOIR_TESTS}
    drawn = await _probe(tmp_path, modules, "stats/reservoir.py", "Reservoir.offer")
    # the count loses updates; a value kept at a slot past the sample's size is what a lost update does next
    assert drawn.confirmed and (drawn.effect.startswith("a lost update: self.seen is ") or re.match(
        r"a broken size: self\.kept holds [3-9] items, after every sequential order 2", drawn.effect)), drawn.effect
    locked = _locked(RESERVOIR, {"offer": ""})
    assert locked != RESERVOIR
    fixed = await _probe(tmp_path, {**modules, "stats/reservoir.py": locked}, "stats/reservoir.py",
                         "Reservoir.offer")
    assert not fixed.confirmed, fixed.effect
    # the same abstract method without the draw: reached through the subclass, its unlocked count loses updates
    counted = RESERVOIR.replace("        index = randrange(self.seen)\n", "        index = self.seen % 3\n")
    raced = await _probe(tmp_path, {**modules, "stats/reservoir.py": counted}, "stats/reservoir.py",
                         "Reservoir.offer")
    assert raced.confirmed, raced.effect
    assert raced.reproducer is None  # built through a subclass: the effect names what was called


async def test_a_module_that_draws_at_import_is_still_compared(tmp_path: Path) -> None:
    """A module that draws a random token when it is imported: its calls draw nothing, so they are compared (the
    draw at import is the same in every run) and the lost update is seen."""
    drawing = COUNTER.replace("import threading\n", "import random\nimport threading\n\nTOKEN = random.random()\n")
    raced = await _probe(tmp_path, {"shop/counter.py": drawing}, "shop/counter.py", "Counter.bump")
    assert raced.confirmed and "lost update" in raced.effect, raced.effect


async def test_objects_per_call_are_counted_only_where_every_call_is_the_same(tmp_path: Path) -> None:
    """With the tests' two services the calls differ (the order of calls may decide what a bounded cache keeps,
    so objects per call are not counted there); the same service repeated shows the client built twice."""
    tests = ("from shop.registry import Registry\n\n\ndef test_clients():\n    registry = Registry()\n"
             "    assert registry.client('billing') is registry.client('billing')\n"
             "    assert registry.client('search').name == 'search'\n")
    raced = await _probe(tmp_path, {"shop/registry.py": REGISTRY, "tests/test_registry.py": tests},
                         "shop/registry.py", "Registry.client")
    assert raced.confirmed and raced.effect.startswith("one object expected, several built"), raced.effect
    assert "(every call with one argument set)" in raced.effect, raced.effect


async def test_a_module_of_a_src_layout_package_is_reached(attack: Attack) -> None:
    modules = {"src/tally/__init__.py": "", "src/tally/base.py": "START = 0\n",
               "src/tally/counter.py": COUNTER.replace("import threading\n",
                                                       "import threading\n\nfrom .base import START\n")
               .replace("self.value = 0", "self.value = START")}
    analysis, _agent, _sandbox = await attack(modules)
    (race,) = analysis.findings
    assert race.confirmed and race.effect is not None and "lost update" in race.effect
    assert race.reproducer is not None and "import tally.counter as target" in race.reproducer


async def test_a_module_of_one_package_of_a_monorepo_is_reached_with_its_siblings(attack: Attack) -> None:
    """A monorepo of src-layout packages sharing one namespace package (``acme``): the changed module of
    ``acme-sdk`` imports ``acme.api`` from ``acme-api`` beside it, as a development install of the repository
    has it; the reproducer names the module as installed."""
    modules = {"acme-api/src/acme/api/__init__.py": "START = 0\n",
               "acme-sdk/src/acme/sdk/__init__.py": "",
               "acme-sdk/src/acme/sdk/counter.py": COUNTER.replace(
                   "import threading\n", "import threading\n\nfrom acme.api import START\n")
               .replace("self.value = 0", "self.value = START")}
    analysis, _agent, _sandbox = await attack(modules)
    (race,) = analysis.findings
    assert race.confirmed and race.effect is not None and "lost update" in race.effect, race.effect
    assert race.reproducer is not None and "import acme.sdk.counter as target" in race.reproducer


async def test_a_module_whose_package_fails_to_import_is_reached_alone_and_so_is_its_reproducer(
        attack: Attack, tmp_path: Path) -> None:
    """The package's ``__init__`` imports a sibling in a syntax this Python rejects (code of Python 2's time): the
    changed module, which needs neither, is imported without it, under its real name — and the reproducer does
    the same; a module whose own code fails is still not reached."""
    modules = {"shop/__init__.py": "from shop import legacy\n", "shop/legacy.py": 'print "ready"\n',
               "shop/counter.py": COUNTER.replace("import threading\n", "import threading\n\nfrom . import base\n"),
               "shop/base.py": "START = 0\n"}
    analysis, _agent, _sandbox = await attack(modules)
    (race,) = analysis.findings
    assert race.confirmed and race.effect is not None and "lost update" in race.effect, race.effect
    assert race.reproducer is not None and "without their __init__" in race.reproducer
    repo = write_repo(tmp_path / "again", modules)
    assert subprocess.run([sys.executable, "-c", "import shop.counter"], cwd=repo, capture_output=True).returncode
    shown = subprocess.run([sys.executable, "-c", race.reproducer], cwd=repo, capture_output=True, text=True,
                           timeout=60, check=True).stdout
    alone, together = (ast.literal_eval(line.split(":", 1)[1].strip()) for line in shown.splitlines())
    assert alone == together == {"0": 32}  # each call returns 0: the lost update is in the state, not shown here
    broken = {**modules, "shop/counter.py": modules["shop/counter.py"].replace("from . import base",
                                                                               "from . import legacy")}
    unreached, _agent, _sandbox = await attack(broken)
    (hint,) = unreached.findings
    assert not hint.confirmed and "could not reach the target: SyntaxError" in (hint.effect or ""), hint.effect


def test_the_host_and_the_probe_name_a_module_alike() -> None:
    from checks.red.probe_source import COMMON
    from checks.red.race import module_of

    namespace: dict[str, Any] = {}
    exec(compile("import json\nCONFIG_JSON = json.dumps({'nonce': 'n'})\nclass Sightings:\n"
                 "    def __init__(self, repo): pass\n" + COMMON, "common", "exec"), namespace)
    for path, root in (("shop/counter.py", ""), ("src/tally/counter.py", "src"),
                       ("acme-sdk/src/acme/sdk/counter.py", "acme-sdk/src"), ("pkg/__init__.py", ""),
                       ("tools/src.py", "")):
        assert namespace["source_root"](path) == root
        probe_name = namespace["module_name"](path[len(root) + 1:] if root else path)
        assert module_of(path) == probe_name, path


def test_the_race_program_is_written_for_python_3_9_and_newer() -> None:
    """A project's test environment may run an older Python than LogoMesh (an old project's code needs it)."""
    from checks.red.probe_source import RACE_TEMPLATE

    program = RACE_TEMPLATE.replace("__CONFIG__", repr("{}"), 1)
    ast.parse(program, feature_version=(3, 9))
    with pytest.raises(SyntaxError):
        ast.parse(program + "\nmatch 1:\n    case 1:\n        pass\n", feature_version=(3, 9))


async def test_a_private_method_is_reached_by_its_mangled_name(attack: Attack, tmp_path: Path) -> None:
    private = COUNTER.replace("def bump(", "def __bump(")
    analysis, _agent, _sandbox = await attack({"shop/counter.py": private})
    (race,) = analysis.findings
    assert race.confirmed and race.effect is not None and "lost update" in race.effect
    assert race.reproducer is not None and "._Counter__bump" in race.reproducer
    repo = write_repo(tmp_path / "again", {"shop/counter.py": private})
    shown = subprocess.run([sys.executable, "-c", race.reproducer], cwd=repo, capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    fixed = await _probe(tmp_path, {"shop/counter.py": _locked(private, {"__bump": ""})}, "shop/counter.py",
                         "Counter.__bump")
    assert not fixed.confirmed and fixed.effect.startswith("no race seen in 5 trial(s)")


SINGLETONS = '''"""File locks, one instance per path when asked for a singleton."""
from abc import ABCMeta, abstractmethod


class _OnePerPath(ABCMeta):
    def __init__(cls, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cls._instances = {}

    def __call__(cls, path, *, timeout=-1.0, singleton=False):
        if not singleton:
            return super().__call__(path, timeout)
        found = cls._instances.get(path)
        if found is None:
            found = super().__call__(path, timeout)
            cls._instances[path] = found
        elif found.timeout != timeout:
            raise ValueError("a singleton lock cannot be made again with another timeout")
        return found


class BaseLock(metaclass=_OnePerPath):
    def __init__(self, path, timeout):
        self.path = path
        self.timeout = timeout

    def __call__(self, func):  # a lock decorates functions: the class's own __call__ is not the metaclass's
        return func

    @abstractmethod
    def acquire(self): ...
'''
SINGLETON_MODULES = {
    "locks/__init__.py": "from locks._unix import UnixLock\n\nPathLock = UnixLock\n",
    "locks/_unix.py": "from locks._api import BaseLock\n\n\nclass UnixLock(BaseLock):\n"
                      "    def acquire(self):\n        return self.path\n",
    # the tests call the lock by the name the package exports, with a fixture's path: only the keyword is literal
    "tests/test_locks.py": "from locks import PathLock\n\n\ndef test_one(tmp_path):\n"
                           "    assert PathLock(str(tmp_path / 'a'), singleton=True) is PathLock(str(tmp_path / 'a'),"
                           " singleton=True)\n"
                           # which timeout the singleton keeps depends on the order of the calls, not on a race
                           + "".join(f"    PathLock(str(tmp_path / 'b'), timeout={t}.0, singleton=True)\n"
                                     for t in range(1, 9)),
}


async def test_a_metaclass_singleton_is_driven_through_a_concrete_class_with_the_tests_keywords(
        tmp_path: Path) -> None:
    """The class built with the metaclass in the changed module is abstract; the one the project instantiates
    lives in another module and is exported under another name; the tests pass a fixture's path, and the keyword
    that takes the singleton's path is the literal part of the call. With the lock, a call that raises in one
    order of the calls and succeeds in another is no second object."""
    modules = {"locks/_api.py": SINGLETONS, **SINGLETON_MODULES}
    racy = await _probe(tmp_path, modules, "locks/_api.py", "_OnePerPath.__call__")
    # two threads both miss the cache: two objects for one path, or a call with another timeout that no longer fails
    assert racy.confirmed and racy.effect.startswith(("one object expected, several built", "a limit exceeded")), \
        racy.effect
    locked = {**modules, "locks/_api.py": _locked(SINGLETONS, {"__call__": ""})}
    fixed = await _probe(tmp_path, locked, "locks/_api.py", "_OnePerPath.__call__")
    assert not fixed.confirmed and fixed.effect.startswith("no race seen in 15 trial(s)"), fixed.effect


def _race_program() -> dict[str, object]:
    """The race probe program's own definitions (the text the probe sends, without what runs it)."""
    from checks.red.probe_source import program_text

    text = program_text("race").rstrip()
    assert text.endswith("\nmain()")
    namespace: dict[str, object] = {"__name__": "logomesh_race_program", "CONFIG": {}}
    exec(compile(text[:-len("main()")], "race.py", "exec"), namespace)
    return namespace


def test_a_hung_thread_is_a_deadlock_only_when_it_waits_for_a_lock_of_the_changed_module(tmp_path: Path) -> None:
    """A thread blocked on a queue, a condition or the network waits where a design may wait on purpose; one blocked
    entering a ``with`` on a lock of the changed module is where a lock-order deadlock waits."""
    import importlib.util
    import queue
    import threading

    program = _race_program()
    waiting_at: Any = program["waiting_at"]
    deadlocked: Any = program["deadlocked"]
    path = tmp_path / "gate.py"
    path.write_text("def enter(lock, box):\n    with lock:\n        return None\n\n\n"
                    "def take(box):\n    return box.get()\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("gate", path)
    assert spec is not None and spec.loader is not None
    gate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gate)
    lock, box = threading.Lock(), queue.Queue()  # type: ignore[var-annotated]
    lock.acquire()
    entering = threading.Thread(target=gate.enter, args=(lock, box), daemon=True)
    taking = threading.Thread(target=gate.take, args=(box,), daemon=True)
    entering.start()
    taking.start()
    entering.join(0.3)
    taking.join(0.3)
    try:
        assert waiting_at(entering, str(path)) == "gate.py:2"
        assert waiting_at(taking, str(path)) is None  # its innermost frame is the queue's own wait
        assert waiting_at(entering, str(tmp_path / "other.py")) is None
        assert deadlocked({"blocked": ["gate.py:2", "gate.py:2"]})
        assert not deadlocked({"blocked": ["gate.py:2"]}) and not deadlocked({"blocked": ["gate.py:2", None]})
    finally:
        lock.release()
        box.put(1)
        entering.join(1.0)
        taking.join(1.0)


def test_the_calls_made_holding_a_lock_are_told_from_the_others() -> None:
    guarded_calls: Any = _race_program()["guarded_calls"]
    assert guarded_calls(ast.parse(GUARDED), "_bump") == ([12, 17, 18], [12, 17, 18])
    source = GUARDED.replace("            self.lock.release()\n", "            pass\n")
    source = source.replace("        self.lock.acquire()\n", "        print('no lock')\n")
    assert guarded_calls(ast.parse(source), "_bump") == ([12, 17, 18], [12])


def test_an_exception_is_a_race_only_where_no_sequential_order_raised() -> None:
    from collections import Counter

    broken: Any = _race_program()["invariant_broken"]

    def run(**results: int) -> dict[str, object]:
        return {"results": Counter({k.replace("_", " "): v for k, v in results.items()}), "state": None,
                "sizes": {}, "counts": {}, "distinct": {}, "hung": 0, "identical": False}

    calm = [run(none=8), run(none=8)]
    assert broken(calm, run(none=7, raised_KeyError=1)) == "an exception only under concurrency: raised KeyError"
    # filelock's ReadWriteLock.release: one after another, releasing what no call holds raises RuntimeError; under
    # threads another error is no race
    misuse = [run(none=6, raised_RuntimeError=2), run(none=6, raised_RuntimeError=2)]
    assert broken(misuse, run(none=6, raised_OperationalError=2)) is None


def test_a_count_is_compared_where_every_order_and_every_draw_leave_the_same() -> None:
    """A whole number of the state (a count of calls) is compared as a size is: only where every sequential run
    left the same. Where the calls draw random numbers, the runs made with other draws must agree too, and an
    exception (which a draw may cause) is not compared."""
    from collections import Counter

    broken: Any = _race_program()["invariant_broken"]

    def run(seen: int, raised: int = 0) -> dict[str, object]:
        results = Counter({"None": 8 - raised, **({"raised KeyError": raised} if raised else {})})
        return {"results": results, "state": None, "sizes": {},
                "counts": {"self.seen": seen}, "distinct": {}, "hung": 0, "identical": False}

    assert broken([run(8), run(8)], run(6)) == "a lost update: self.seen is 6, after every sequential order 8"
    assert broken([run(8), run(8)], run(9)) == "a broken count: self.seen is 9, after every sequential order 8"
    assert broken([run(8), run(7)], run(6)) is None  # the order of the calls decides it
    assert broken([run(8), run(8)], run(8, raised=1)) == "an exception only under concurrency: raised KeyError"
    assert broken([run(8), run(8)], run(8, raised=1), True) is None  # with draws: not compared
    assert broken([run(8), run(8)], run(7, raised=1), True) == ("a lost update: self.seen is 7, after every "
                                                                "sequential order 8")



SENDER = '''"""Sends in the background."""
import threading


class Job:
    def __init__(self) -> None:
        self.started = False

    def start(self) -> None:
        if self.started:
            raise RuntimeError("a job can only be started once")
        self.started = True


class Sender:
    def __init__(self) -> None:
        self.job = Job()
        self.job.start()

    def send(self, n: int = 1) -> int:
        self._schedule(n > 0)
        return n

    def _schedule(self, due: bool = False) -> None:
        if due:
            self.job = Job()
            self.job.start()
'''


async def test_a_private_helper_is_driven_through_the_methods_that_call_it(tmp_path: Path) -> None:
    """Alone, the helper is called as no caller calls it (its default leaves it idle, as a timer still running
    leaves a scheduler idle): its callers are its companions, and through them one job is started twice; the
    locked helper starts none twice."""
    modules = {"shop/sender.py": SENDER}
    raced = await _probe(tmp_path, modules, "shop/sender.py", "Sender._schedule")
    assert raced.confirmed and raced.effect.startswith("an exception only under concurrency: raised RuntimeError"), \
        raced.effect
    locked = SENDER.replace("import threading\n", "import threading\n\nLOCK = threading.Lock()\n").replace(
        "        if due:\n            self.job = Job()\n            self.job.start()\n",
        "        with LOCK:\n            if due:\n                self.job = Job()\n                self.job.start()\n")
    assert "with LOCK:" in locked
    fixed = await _probe(tmp_path, {"shop/sender.py": locked}, "shop/sender.py", "Sender._schedule")
    assert not fixed.confirmed and fixed.effect.startswith("no race seen") and "with send" in fixed.effect, \
        fixed.effect


TICKER = '''"""Counts hits and wakes a flusher for each."""
import threading


class Ticker:
    def __init__(self) -> None:
        self.hits = 0
        self.flusher = threading.Thread(target=lambda: None)

    def hit(self) -> None:
        flusher = threading.Thread(target=lambda: None)
        flusher.start()
        self.flusher = flusher
        self.hits += 1
'''


async def test_a_thread_the_calls_start_is_state_by_its_type_not_its_name(tmp_path: Path) -> None:
    """Each run names its threads anew (``Thread-12``) and finds them alive or done: that is when they ran, not
    what the calls computed, so runs one after another still agree and the lost update of the count shows; the
    locked count is no race."""
    raced = await _probe(tmp_path, {"shop/ticker.py": TICKER}, "shop/ticker.py", "Ticker.hit")
    assert raced.confirmed and raced.effect.startswith("a lost update"), raced.effect
    locked = TICKER.replace("import threading\n", "import threading\n\nLOCK = threading.Lock()\n").replace(
        "        self.hits += 1\n", "        with LOCK:\n            self.hits += 1\n")
    fixed = await _probe(tmp_path, {"shop/ticker.py": locked}, "shop/ticker.py", "Ticker.hit")
    assert not fixed.confirmed and fixed.effect.startswith("no race seen"), fixed.effect


TOGGLE = '''"""Records while a switch is on."""
import threading

LOCK = threading.Lock()


class Recorder:
    def __init__(self) -> None:
        self.on = False
        self.items = []

    def record(self) -> None:
        with LOCK:
            if self.on:
                self.items.append(1)

    def switch(self) -> None:
        with LOCK:
            self.on = not self.on
'''


async def test_a_size_that_depends_on_the_order_of_different_calls_is_no_race(tmp_path: Path) -> None:
    """Every call takes the lock, so any run is some order of the calls one after another; how many items are
    recorded depends on that order (0 to 16), and a few orders tried are not all of them: a size the sequential
    orders disagree on is not compared, and the locked pair is no race."""
    locked = await _probe(tmp_path, {"shop/recorder.py": TOGGLE}, "shop/recorder.py", "Recorder.record")
    assert not locked.confirmed and locked.effect.startswith("no race seen") and "with switch" in locked.effect, \
        locked.effect


BAR = '''"""Progress bars, each registered with its class."""


class Bar:
    _instances: list = []

    def __init__(self, total: int = 3) -> None:
        self.total = None
        self.n = 0
        self._instances.append(self)
        self.total = total

    def __len__(self) -> int:
        return self.total + 0
'''


async def test_a_constructor_is_paired_only_with_what_touches_its_class_state(tmp_path: Path) -> None:
    """A constructor runs on a new object each time: reading the attributes of one object while it is built again
    (``__len__`` sees ``total`` still None) is no use of the class, so ``__len__`` is not its pair."""
    outcome = await _probe(tmp_path, {"ui/bar.py": BAR}, "ui/bar.py", "Bar.__init__")
    assert not outcome.confirmed, outcome.effect
    assert "__len__" not in outcome.effect, outcome.effect


# a memo: the lookup and the store each hold the lock, the search between them does not (two calls that miss
# together both store what they found); the keys and the answers are kept in two lists side by side
MEMO = '''"""The rule in force at an hour, the last ten answers kept."""
import threading


class Rule:
    def __init__(self, start: int) -> None:
        self.start = start


class Schedule:
    def __init__(self, name: str) -> None:
        self.name = name
        self._rules = [Rule(0), Rule(6), Rule(18)]
        self._hours: list[int] = []
        self._found: list[Rule] = []
        self._lock = threading.Lock()

    def rule_at(self, hour: int) -> Rule:
        with self._lock:
            if hour in self._hours:
                return self._found[self._hours.index(hour)]
        found = max((rule for rule in self._rules if rule.start <= hour % 24), key=lambda rule: rule.start)
        with self._lock:
            self._hours.insert(0, hour)
            self._found.insert(0, found)
            if len(self._hours) > 10:
                self._hours.pop()
                self._found.pop()
        return found
'''
# a set kept as a list: a callback subscribed twice is called twice
HUB = '''"""Callbacks told of every event."""


class Hub:
    def __init__(self, name: str) -> None:
        self.name = name
        self._callbacks: list[str] = []

    def subscribe(self, callback: str) -> None:
        if callback not in self._callbacks:
            self._callbacks.append(callback)
'''


async def test_a_memo_entry_stored_twice_is_no_race_but_a_set_kept_as_a_list_is(tmp_path: Path) -> None:
    """Calls that overlap store the same answer twice: the memo's lists count each entry once (work done twice is
    no wrong state). A list that holds what the calls returned makes it a memo: a subscription returns nothing,
    and a callback stored twice is a race."""
    memo = await _probe(tmp_path, {"shop/schedule.py": MEMO}, "shop/schedule.py", "Schedule.rule_at")
    assert not memo.confirmed, memo.effect
    assert memo.effect.startswith("no race seen"), memo.effect
    hub = await _probe(tmp_path, {"shop/hub.py": HUB}, "shop/hub.py", "Hub.subscribe")
    assert hub.confirmed, hub.effect
    assert hub.effect.startswith("a broken size: self._callbacks holds"), hub.effect


# each bar takes the first free line: it joins the class's set under the lock, then reads the set without it
BARS = '''"""Progress bars, each on its own line of the terminal."""
import threading


class Bar:
    _instances: set = set()
    _lock = threading.Lock()

    def __init__(self, total: int = 3) -> None:
        with self._lock:
            self._instances.add(self)
        self.total = total
        self.pos = self._free_position()

    @classmethod
    def _free_position(cls) -> int:
        taken = {bar.pos for bar in cls._instances if hasattr(bar, "pos")}
        return min(set(range(len(taken) + 1)) - taken)

    def close(self) -> None:
        with self._lock:
            self._instances.discard(self)
'''
BAR_TESTS = '''from ui.bars import Bar


def test_bars_take_free_lines():
    assert [Bar(total=5).pos, Bar(total=5).pos] == [0, 1]
'''


async def test_a_constructor_is_driven_by_building_objects_as_the_tests_do(tmp_path: Path) -> None:
    """Each call builds a new bar with the tests' arguments (called again on one bar, ``__init__`` adds nothing
    new to the set and reads it alone): a bar that reads the set while another joins it fails, which one after
    another none does; the reproducer builds bars the same way."""
    files = {"ui/bars.py": BARS, "tests/test_bars.py": BAR_TESTS}
    raced = await _probe(tmp_path, files, "ui/bars.py", "Bar.__init__")
    assert raced.confirmed, raced.effect
    assert raced.effect.startswith("an exception only under concurrency: raised RuntimeError"), raced.effect
    assert "called together" not in raced.effect, raced.effect  # alone: the bars race among themselves
    assert raced.reproducer is not None and "call = target.Bar\n" in raced.reproducer
    assert "CALLS = [((), {'total': 5})]" in raced.reproducer
    repo = write_repo(tmp_path / "again", files)
    shown = subprocess.run([sys.executable, "-c", raced.reproducer], cwd=repo, capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "raised RuntimeError" in shown.stdout.split("together:")[1], shown.stdout
    locked = BARS.replace('''        with self._lock:
            self._instances.add(self)
        self.total = total
        self.pos = self._free_position()''', '''        with self._lock:
            self._instances.add(self)
            self.total = total
            self.pos = self._free_position()''')
    assert locked != BARS
    fixed = await _probe(tmp_path, {**files, "ui/bars.py": locked}, "ui/bars.py", "Bar.__init__")
    assert not fixed.confirmed, fixed.effect


SCOPES = '''"""Feature switches by scope: a switch set on a scope replaces those set below it."""
import threading

LOCK = threading.Lock()


class Switches:
    def __init__(self) -> None:
        self.set_on = []  # (scope, on), read by every request without a lock

    def set(self, scope: str, on: bool) -> None:
        with LOCK:
            kept = [(s, o) for s, o in self.set_on if not s.startswith(scope)]
        kept.append((scope, on))
        with LOCK:
            self.set_on = kept
'''
SCOPE_TESTS = """from app.switches import Switches


def test_a_scope_replaces_those_below_it():
    switches = Switches()
    switches.set("shop", False)
    switches.set("shop.cart", True)
    switches.set("blog", True)
    switches.set("", True)
    assert switches.set_on == [("", True)]
"""


async def test_a_lost_update_that_no_order_of_different_calls_gives_is_confirmed(tmp_path: Path) -> None:
    """Which switches are left depends on the order of the calls (a scope set later drops those below it), so
    neither the count nor the state of many calls can be compared, and one argument set repeated leaves one switch
    whatever happens. Three calls that differ, one a thread, tried against each of their six orders: two that
    both copy the list before either stores it lose one switch, which no order does. With one lock around the
    whole update every run is some order: no race. The reproducer shows it on its own."""
    files = {"app/switches.py": SCOPES, "tests/test_switches.py": SCOPE_TESTS}
    raced = await _probe(tmp_path, files, "app/switches.py", "Switches.set")
    assert raced.confirmed, raced.effect
    assert raced.effect.startswith("a lost update: set('shop', False) and set("), raced.effect
    assert "leave self.set_on as no order leaves it" in raced.effect, raced.effect
    assert "(3 threads × 1 call, against each of the 6 orders of the calls one after another" in raced.effect
    assert raced.reproducer is not None and "CALLS = [(('shop', False), {}), " in raced.reproducer
    repo = write_repo(tmp_path / "again", files)
    shown = subprocess.run([sys.executable, "-c", raced.reproducer], cwd=repo, capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "one after another, in each order: " in shown.stdout and "as no order leaves it" in shown.stdout, \
        shown.stdout
    locked = SCOPES.replace('''        with LOCK:
            kept = [(s, o) for s, o in self.set_on if not s.startswith(scope)]
        kept.append((scope, on))
        with LOCK:
            self.set_on = kept''', '''        with LOCK:
            kept = [(s, o) for s, o in self.set_on if not s.startswith(scope)]
            kept.append((scope, on))
            self.set_on = kept''')
    assert locked != SCOPES
    fixed = await _probe(tmp_path, {**files, "app/switches.py": locked}, "app/switches.py", "Switches.set")
    assert not fixed.confirmed, fixed.effect
    assert "and 3 calls that differ against each of their orders" in fixed.effect, fixed.effect


def test_the_judge_says_how_many_calls_a_trial_made_only_from_a_plain_count() -> None:
    """The report comes from a process the probed code shares: a count of calls tried in every order is shown
    only when it is a small integer, else the trial is told as the usual 8 threads × 4 calls."""
    report = {"confirmed": "a lost update", "trials": 2, "of": 15}
    assert "(3 threads × 1 call, against each of the 6 orders" in judge_race({**report, "every_order": 3})[1]
    for hostile in (True, 10**9, "3", 1, None):
        confirmed, effect = judge_race({**report, "every_order": hostile})
        assert confirmed and "(8 threads × 4 calls, trial 2 of 15" in effect, effect


PANELS = '''"""Panels stacked on a screen, each placed below the panels alive."""
import threading
import weakref

LOCK = threading.Lock()


class Panel:
    _alive = weakref.WeakSet()

    def __init__(self, height, out) -> None:
        with LOCK:
            self._alive.add(self)
            self.row = sum(1 for panel in self._alive if panel is not self and hasattr(panel, "row"))
        if self.row:
            out.write("\\\\n" * self.row)
        self.height = int(height)
'''
PANEL_TESTS = """import pytest

from ui.panels import Panel


def test_a_height_is_a_number():
    with pytest.raises(ValueError):
        Panel("tall", "screen")
    with pytest.raises(ValueError):
        Panel("wide", "screen")
    with pytest.raises(ValueError):
        Panel("short", "screen")
"""


async def test_constructor_calls_that_fail_one_after_another_are_not_compared_in_every_order(
        tmp_path: Path) -> None:
    """Each call fails (a height that is no number) and drops its panel when it ends: one after another no panel
    sees another, together a panel still being built is alive while the next is placed below it (and writes to
    its output, a string here). That is no order the calls could take one after another, and no race either: what
    such calls return is not compared, with one argument set or several (the every-order trials say why)."""
    files = {"ui/panels.py": PANELS, "tests/test_panels.py": PANEL_TESTS}
    outcome = await _probe(tmp_path, files, "ui/panels.py", "Panel.__init__")
    assert not outcome.confirmed, outcome.effect
    assert "every order: a constructor call fails one after another" in outcome.effect, outcome.effect
    one = PANEL_TESTS.split("    with pytest.raises(ValueError):\n        Panel(\"wide\"")[0]
    assert one.count("Panel(") == 1
    outcome = await _probe(tmp_path, {**files, "tests/test_panels.py": one}, "ui/panels.py", "Panel.__init__")
    assert not outcome.confirmed, outcome.effect


CALLS = '''"""Counts calls and remembers the thread that made the last."""
import threading

LOCK = threading.Lock()


class Calls:
    def __init__(self) -> None:
        self.count = 0
        self.last = 0

    def note(self) -> None:
        with LOCK:
            self.last = threading.get_ident()
            self.count += 1
'''


async def test_a_number_the_threads_change_is_not_compared_but_a_count_is(tmp_path: Path) -> None:
    """``last`` is a thread's id: threads that take turns leave another one than calls one after another, so it is
    not compared (nor does it make the probe inconclusive); ``count`` every run leaves at 32, and the unlocked one
    loses updates."""
    locked = await _probe(tmp_path, {"app/calls.py": CALLS}, "app/calls.py", "Calls.note")
    assert not locked.confirmed and locked.effect.startswith("no race seen"), locked.effect
    unlocked = CALLS.replace("            self.count += 1\n", "").replace(
        "    def note(self) -> None:\n", "    def note(self) -> None:\n        self.count += 1\n")
    assert unlocked != CALLS
    raced = await _probe(tmp_path, {"app/calls.py": unlocked}, "app/calls.py", "Calls.note")
    assert raced.confirmed and raced.effect.startswith("a lost update: self.count is "), raced.effect


GATE = '''"""One holder at a time, each waiting a little for its turn."""
import threading
import time


class Gate:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.passed = 0

    def enter(self, wait: float) -> None:
        if not self.lock.acquire(timeout=wait):
            raise TimeoutError("the gate is busy")
        try:
            self.passed += 1
            time.sleep(0.002)
        finally:
            self.lock.release()
'''
GATE_TESTS = """from app.gate import Gate


def test_enters():
    gate = Gate()
    gate.enter(0.001)
    gate.enter(0.0005)
    assert gate.passed == 2
"""


async def test_a_call_that_gives_up_waiting_for_a_lock_is_no_race(tmp_path: Path) -> None:
    """Together, a call finds the gate held and gives up after its timeout, which no call one after another does,
    and the gate counts fewer passes: the lock working as meant, not a race. Without the lock the count is lost."""
    files = {"app/gate.py": GATE, "tests/test_gate.py": GATE_TESTS}
    locked = await _probe(tmp_path, files, "app/gate.py", "Gate.enter")
    assert not locked.confirmed, locked.effect
    assert "a call gave up waiting for another (its timeout)" in locked.effect, locked.effect
    open_gate = GATE.replace(
        "        if not self.lock.acquire(timeout=wait):\n            raise TimeoutError(\"the gate is busy\")\n"
        "        try:\n            self.passed += 1",
        "        try:\n            passed = self.passed\n            time.sleep(0.002)\n"
        "            self.passed = passed + 1")
    open_gate = open_gate.replace("            self.lock.release()\n", "            pass\n")
    assert "acquire" not in open_gate
    raced = await _probe(tmp_path, {**files, "app/gate.py": open_gate}, "app/gate.py", "Gate.enter")
    assert raced.confirmed and "self.passed" in raced.effect, raced.effect


HOLD = '''"""A shared hold on a resource: the first holder opens it, the last one to let go closes it."""
import threading


class Resource:
    def __init__(self) -> None:
        self.opened = False

    def begin(self) -> None:
        if self.opened:
            raise RuntimeError("the resource is already open")
        self.opened = True

    def end(self) -> None:
        self.opened = False


class Hold:
    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._level = 0
        self._resource = Resource()

    def acquire(self) -> None:
        with self._lock:
            if self._level > 0:
                self._level += 1
                return
            self._resource.begin()
            self._level = 1

    def release(self) -> None:
        with self._lock:
            if self._level == 0:
                raise RuntimeError("not held")
            self._level -= 1
            last = self._level == 0
        if last:
            self._resource.end()
'''
HOLD_TESTS = """from app.hold import Hold


def test_holds():
    hold = Hold("db")
    hold.acquire()
    hold.acquire()
    hold.release()
    hold.release()
"""


async def test_a_release_that_lets_go_outside_its_lock_is_confirmed_by_threads_that_acquire_first(
        tmp_path: Path) -> None:
    """filelock's ReadWriteLock.release: the last holder lowers the level under the lock and closes the resource
    after it, so another thread can open it again in between. Alone, a release of what no call holds raises; only
    threads that each acquire and then release (or two acquires against a release) reach the window."""
    files = {"app/hold.py": HOLD, "tests/test_hold.py": HOLD_TESTS}
    raced = await _probe(tmp_path, files, "app/hold.py", "Hold.release")
    assert raced.confirmed, raced.effect
    assert "RuntimeError" in raced.effect or "results no order gives" in raced.effect, raced.effect
    if "each thread calling acquire and then release" in raced.effect:  # one after another, the sessions raise nothing
        assert "one after another: {'None': 32}" in raced.effect, raced.effect
    locked = HOLD.replace("            last = self._level == 0\n        if last:\n            self._resource.end()\n",
                          "            if self._level == 0:\n                self._resource.end()\n")
    assert locked != HOLD
    calm = await _probe(tmp_path, {**files, "app/hold.py": locked}, "app/hold.py", "Hold.release")
    assert not calm.confirmed, calm.effect
    assert "each thread calling a companion, then the target" in _literal(calm.effect), calm.effect


def test_sessions_keep_each_threads_calls_in_order() -> None:
    """A run of sessions: each thread calls the companion (odd) and then the target (even), and every sequential
    order of them keeps each thread's calls in that order."""
    program = _race_program()
    session_slots: Any = program["session_slots"]
    session_orders: Any = program["session_orders"]
    slots = session_slots(4, 4)
    assert slots == [[1, 0, 9, 8], [3, 2, 11, 10], [5, 4, 13, 12], [7, 6, 15, 14]]
    orders = session_orders(slots)
    assert len(orders) > 2
    for order in orders.values():
        assert sorted(order) == list(range(16))
        for slot in slots:
            assert [index for index in order if index in slot] == slot


DOOR = '''"""A door one visitor at a time goes through."""
import threading


class Door:
    def __init__(self) -> None:
        self._gate = threading.Lock()
        self.visits = 0

    def _take(self, wait: float = -1) -> None:
        self._gate.acquire(timeout=wait)

    def visit(self) -> None:
        self._take()
        try:
            self.visits += 1
        finally:
            self._gate.release()
'''


async def test_calls_that_never_return_one_after_another_are_not_compared_and_the_probe_ends(
        tmp_path: Path) -> None:
    """``visit`` paired with ``_take``: one after another, a ``_take`` holds the gate and the next call waits for it
    forever — no sequential order exists to compare with. The probe says so and goes on with the other ways, within
    its time, instead of waiting until the sandbox kills it."""
    outcome = await _probe(tmp_path, {"app/door.py": DOOR}, "app/door.py", "Door.visit")
    assert not outcome.confirmed, outcome.effect
    assert "never returned one after another, waiting for a lock (door.py:" in outcome.effect, outcome.effect
    # the helper alone: its reference run never ends, which the probe reports as such within its budget
    repo = write_repo(tmp_path / "alone", {"app/door.py": DOOR})
    target = Target(path="app/door.py", qualname="Door._take", params=(), is_method=True)
    probe = Probe(Hypothesis(kind=RACE_KIND, path="app/door.py", line=1, sink="state", detail="state",
                             target=target), "*", families(RACE_KIND)[0].name)
    nonce = probe_nonce(7, probe)
    result = await LocalProbeSandbox(repo).run_probe(build_probe(probe, nonce, 7, 10.0), 30.0)
    assert not result.timed_out
    alone = judge_probe(probe, nonce, result)
    assert not alone.confirmed and "_take() never returned one after another" in alone.effect, alone.effect
