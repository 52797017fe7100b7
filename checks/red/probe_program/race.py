# ruff: noqa: I001 - the lines above the program line are not part of the program's import block
"""The race probe: drives one changed callable from several threads at once with forced interleavings and compares
what they leave behind with the same calls made one after another.

Each trial reloads the changed module (fresh module state) and builds a fresh instance (for a method), then runs the
same ``threads × calls`` calls three ways: one after another in one thread (the reference), from threads
serialised by one lock (the control: what threads alone change, e.g. thread-local state), and from threads released
together by a barrier while a trace hook on the changed module yields (``time.sleep(0)``) at its lines or opcodes,
under a tiny switch interval. Clocks are frozen so that time-based state is the same in every run. It reports the
first trial whose concurrent run differs from the reference while the control does not.
"""

# Above the program line: for linters and type checkers only (the joined program defines these names itself).
from checks.red.probe_program.common import CONFIG, WATCH, emit, failure, import_module

# --- program ---
import collections
import importlib
import inspect
import random
import re
import sys
import threading
import time
from types import FrameType, ModuleType
from typing import Any

NUMERIC = re.compile(r"(limit|max|rate|capacity|count|size|burst|num|n$|amount|quota|tokens|per_)")
SECONDS = re.compile(r"(window|period|seconds|interval|timeout|ttl|delay|duration|refill)")
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
FROZEN = 1_700_000_000.0
_sleep = time.sleep
# Installing a trace function runs audit hooks, which may switch threads: two threads installing at once fail.
INSTALLING = threading.Lock()


def freeze_clocks() -> None:
    """Every clock reads one instant: time-based state (windows, timestamps) is the same in every run."""
    for name in ("time", "monotonic", "perf_counter"):
        setattr(time, name, lambda: FROZEN)
        setattr(time, name + "_ns", lambda: int(FROZEN * 1e9))


def argument(parameter: inspect.Parameter) -> object:
    """A plain value for a parameter by its annotation, else its name: numbers for limits and windows, one shared
    key for the rest (every call uses the same key, so that all of them touch the same state)."""
    annotation = parameter.annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    name = parameter.name.lower()
    if "bool" in text:
        return True
    if "float" in text or (not text and SECONDS.search(name)):
        return 60.0
    if "int" in text or (not text and NUMERIC.search(name)):
        return 3
    if "dict" in text or "Mapping" in text:
        return {}
    if "list" in text or "Sequence" in text:
        return []
    return "k"


def arguments(func: Any, skip_first: bool) -> dict[str, object]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return {}
    values: dict[str, object] = {}
    for index, (name, parameter) in enumerate(signature.parameters.items()):
        if (skip_first and index == 0) or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.default is parameter.empty:
            values[name] = argument(parameter)
    return values


def snapshot(value: object, depth: int = 0) -> object:
    """A comparable picture of a state value: containers as sorted multisets (order of equal calls is no race),
    objects by their attributes, locks and callables by their type."""
    if isinstance(value, bool | int | str | bytes | type(None)):
        return value
    if isinstance(value, float):
        return round(value, 6)
    if depth > 3:
        return type(value).__name__
    if isinstance(value, dict):
        return sorted((repr(snapshot(k, depth + 1)), repr(snapshot(v, depth + 1))) for k, v in value.items())[:500]
    if isinstance(value, list | tuple | set | frozenset | collections.deque):
        return sorted(repr(snapshot(v, depth + 1)) for v in value)[:500]
    if callable(value) or isinstance(value, ModuleType) or "lock" in type(value).__name__.lower():
        return type(value).__name__
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return {k: snapshot(v, depth + 1) for k, v in sorted(attributes.items()) if not k.startswith("__")}
    return type(value).__name__


def state(module: ModuleType, owner: Any) -> object:
    if owner is not None:
        return {"instance": snapshot(owner), "class": snapshot({k: v for k, v in vars(type(owner)).items()
                                                               if not k.startswith("__")})}
    return snapshot({k: v for k, v in vars(module).items() if not k.startswith("__")})


def outcome(call: Any) -> str:
    try:
        return ADDRESS.sub("", repr(call()))[:200]
    except Exception as exc:
        return "raised " + type(exc).__name__


class Subject:
    """A fresh copy of the changed module and of the instance the calls share."""

    def __init__(self) -> None:
        loaded = set(sys.modules)
        module = import_module(CONFIG["path"])
        self.module = importlib.reload(module) if module.__name__ in loaded else module
        parts = CONFIG["qualname"].split(".")
        self.owner: Any = None
        self.init_args: dict[str, object] = {}
        if CONFIG["is_method"]:
            cls = getattr(self.module, parts[0])
            self.init_args = arguments(cls.__init__, skip_first=True) if "__init__" in vars(cls) else {}
            try:
                self.owner = cls(**self.init_args)
            except Exception:
                self.init_args = {}
                self.owner = cls.__new__(cls)
            self.target = getattr(self.owner, parts[1])
        else:
            self.target = self.module
            for part in parts:
                self.target = getattr(self.target, part)
        self.call_args = arguments(self.target, skip_first=False)

    def call(self) -> str:
        return outcome(lambda: self.target(**self.call_args))

    def state(self) -> object:
        return state(self.module, self.owner)


def interleaver(filename: str, opcodes: bool, rng: random.Random) -> Any:
    """A trace function that yields the interpreter at the changed module's lines (or opcodes)."""

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event in ("line", "opcode") and rng.random() < 0.7:
            _sleep(0)
        return local

    def hook(frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename != filename:
            return None
        frame.f_trace_opcodes = opcodes
        return local

    return hook


def run(threads: int, calls: int, mode: str, seed: int) -> dict[str, Any]:
    subject = Subject()
    results: list[str] = []
    if mode == "sequential":
        results = [subject.call() for _ in range(threads * calls)]
        return {"results": collections.Counter(results), "state": subject.state(), "subject": subject}
    barrier = threading.Barrier(threads)
    serial = threading.Lock()
    filename = getattr(subject.module, "__file__", "") or ""
    guard = threading.Lock()

    def worker(index: int) -> None:
        mine: list[str] = []
        barrier.wait()
        if mode != "control":
            with INSTALLING:
                sys.settrace(interleaver(filename, mode == "opcode-yield", random.Random(seed * 1000 + index)))  # noqa: S311 - a schedule, not a secret
        for _ in range(calls):
            if mode == "control":
                with serial:
                    mine.append(subject.call())
            else:
                mine.append(subject.call())
        with INSTALLING:
            sys.settrace(None)
        with guard:
            results.extend(mine)

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=5.0)
    hung = sum(thread.is_alive() for thread in workers)
    return {"results": collections.Counter(results), "state": subject.state(), "hung": hung, "subject": subject}


def successes(counter: collections.Counter[str]) -> int:
    return sum(n for value, n in counter.items() if value not in ("False", "None", "0") and not
               value.startswith("raised "))


def compare(reference: dict[str, Any], other: dict[str, Any]) -> str | None:
    """How ``other`` differs from the reference (None: not at all)."""
    if other.get("hung"):
        return f"{other['hung']} thread(s) never finished"
    raised = {v for v in other["results"] if v.startswith("raised ")} - set(reference["results"])
    if raised:
        return "an exception only under concurrency: " + ", ".join(sorted(raised))
    if other["results"] != reference["results"]:
        more = successes(other["results"]) - successes(reference["results"])
        if more > 0:
            return (f"a limit exceeded: {successes(other['results'])} calls succeeded, one after another only "
                    f"{successes(reference['results'])} do")
        return "results no sequential order gives: " + ", ".join(
            f"{v} ×{n}" for v, n in sorted(other["results"].items()))[:300]
    if other["state"] != reference["state"]:
        return "a lost update: the final state differs from the one every sequential order leaves"
    return None


def main() -> None:
    freeze_clocks()
    threads, calls, trials = CONFIG["threads"], CONFIG["calls"], CONFIG["trials"]
    try:
        reference = run(threads, calls, "sequential", 0)
    except BaseException as exc:
        emit("import", sightings=WATCH.take(), **failure(exc))
        return
    emit("import", ok=True, sightings=WATCH.take())
    subject: Subject = reference["subject"]
    described = {"init_args": repr(subject.init_args), "call_args": repr(subject.call_args),
                 "sequential": dict(reference["results"])}
    again = run(threads, calls, "sequential", 0)
    if again["results"] != reference["results"] or again["state"] != reference["state"]:
        emit("race", ok=True, inconclusive="the same calls made one after another do not give the same result "
             "twice", trials=0, **described)
        return
    sys.setswitchinterval(1e-6)
    for trial in range(trials):
        control = run(threads, calls, "control", trial)
        if compare(reference, control) is not None:
            emit("race", ok=True, inconclusive="threads change the result even when their calls never overlap: "
                 + str(compare(reference, control)), trials=trial + 1, **described)
            return
        concurrent = run(threads, calls, CONFIG["family"], CONFIG["seed"] + trial)
        found = compare(reference, concurrent)
        if found is not None:
            emit("race", ok=True, confirmed=found, trials=trial + 1, concurrent=dict(concurrent["results"]),
                 **described)
            return
    emit("race", ok=True, trials=trials, **described)


main()
