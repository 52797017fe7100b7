# ruff: noqa: I001 - the lines above the program line are not part of the program's import block
"""The race probe: drives one changed callable — alone, and paired with another method of the same object that
touches the same state — from several threads at once with forced interleavings, and compares what they leave
behind with the same calls made one after another.

The subject is built the way the project builds it: a method's receiver from its class's constructor, with the
arguments of a call the project's own tests make (literal arguments only) or, failing that, values inferred from
the parameters' defaults, annotations and names; a metaclass method's receiver is a class built with that
metaclass. Calls cycle through the literal argument sets the tests pass to the callable (so that a cache sees
several keys), else use one inferred set (so that every call touches the same state). When that subject shows no
race, the subject a test of the project builds is recorded (the tests run under pytest in this process until one
calls the target: its receiver at that call and the test's arguments, pickled) and probed the same way.

Each trial reloads the changed module (fresh module state) and builds a fresh receiver, then runs the same calls
three ways: one after another in one thread (the reference), from threads serialised by one lock (the control:
another sequential order, plus what threads alone change, e.g. thread-local state), and from threads released
together by a barrier while a trace hook on the changed module yields (a 10 µs sleep) at its lines or
opcodes, under a tiny switch interval. Clocks are frozen so that time-based state is the same in every run. A
concurrent run is a race when it gives what no sequential order gives: an exception, more successes, more
distinct objects for one key (a cache or singleton built twice), a container of another size or another whole
number of the state (a count of calls) — a count, a size or a number only where the sequential orders agree on
it —, or — when they agree exactly — other results or another final state. Where the calls differ (several
argument sets, a pair), 3 of them, one a thread, are also run against each of their 6 orders one after another:
what they return and leave together must be what one order gives. Calls that draw random numbers are also made
one after another with other seeds, and compared only by what all those runs leave alike.
"""

# Above the program line: for linters and type checkers only (the joined program defines these names itself).
from checks.red.probe_program.common import ALONE, CONFIG, REPO, WATCH, emit, failure, import_module, module_name

# --- program ---
import ast
import asyncio
import atexit
import collections
import collections.abc
import contextlib
import copyreg
import fcntl
import gc
import importlib
import inspect
import io
import itertools
import json
import linecache
import os
import pickle
import queue
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from types import BuiltinFunctionType, FrameType, FunctionType, ModuleType
from typing import Any

NUMERIC = re.compile(r"(limit|max|rate|capacity|count|size|burst|num|n$|amount|quota|tokens|per_)")
SECONDS = re.compile(r"(window|period|seconds|interval|timeout|ttl|delay|duration|refill)")
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
TEST_FILE = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_tests?\.py$")
FROZEN = 1_700_000_000.0
YIELD_SECONDS = 1e-5
STALL_SECONDS = 5e-3  # a stall: about as long as a few hundred yields of the other threads
STALL_CHANCE = 0.02  # at a traced line (or opcode), until the thread has stalled STALLS times in the run
STALLS = 2
MAX_TEST_FILES = 400
MAX_ARGUMENT_SETS = 12
MAX_COMPANIONS = 3
INTERLEAVED_ORDERS = 8  # seeded orders of the threads' calls one after another, where calls differ
DRAWS = 2  # other seeds of the random module the calls are made with one after another, where they draw from it
EVERY_ORDER_CALLS = 3  # calls that differ, one a thread, whose every order one after another is tried (3! = 6)
# how long threads may run before they are hung: at least this, and this many times the calls' sequential time
PATIENCE_SECONDS = float(CONFIG.get("patience") or 5.0)
PATIENCE_FACTOR = 4.0
# methods that are a class's way in for callers: a check and an act on the same state are usually two of these
PROTOCOL = ("__getitem__", "__setitem__", "__delitem__", "__contains__", "__len__", "__call__", "__iter__")
MAX_FILES = 200
FILE_BYTES = 4096
# the state is a file: the calls run in processes (which share files, not memory), each run in a fresh directory
PROCESSES = bool(CONFIG.get("processes"))
WORK = tempfile.mkdtemp(prefix="race-") if PROCESSES else ""
if WORK:
    atexit.register(shutil.rmtree, WORK, True)
_sleep = time.sleep
_clock = time.monotonic  # the real clock (the trials' budget): every other clock is frozen
# Installing a trace function runs audit hooks, which may switch threads: two threads installing at once fail.
INSTALLING = threading.Lock()
Call = tuple[tuple[object, ...], dict[str, object]]
# a recorded subject: the project's tests run (in this process, for this long at most, from this many of the test
# files that name the target) until one of them calls the target, whose receiver and arguments are kept
RECORD_SECONDS = 20.0
RECORD_MIN_SECONDS = 2.0  # tried only with this much of the budget left (half of what is left records)
RECORD_FILES = 8
REAL_CLOCKS: dict[str, Any] = {}
# the containers whose size is state: the built-in ones and whatever is a mutable mapping, set or sequence (a
# ``WeakSet`` of a class's instances, an ``OrderedDict``)
CONTAINERS = (dict, list, set, collections.deque, collections.abc.MutableMapping, collections.abc.MutableSet,
              collections.abc.MutableSequence)


def freeze_clocks() -> None:
    """Every clock reads one instant: time-based state (windows, timestamps) is the same in every run."""
    for name in ("time", "monotonic", "perf_counter"):
        REAL_CLOCKS.setdefault(name, getattr(time, name))
        REAL_CLOCKS.setdefault(name + "_ns", getattr(time, name + "_ns"))
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


class Inferred:
    """A test's argument that is not a literal (a fixture, a variable): its value is inferred when it is used."""

    def __repr__(self) -> str:
        return "<inferred>"


INFER = Inferred()


def literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return INFER


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


def test_files() -> list[str]:
    """The project's test files (by their path), in a fixed order: hidden folders, ``node_modules`` and ``venv``
    left out."""
    found = []
    for root, dirs, names in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "venv"))
        for file in sorted(names):
            path = os.path.join(root, file)
            if file.endswith(".py") and TEST_FILE.search(os.path.relpath(path, REPO).replace(os.sep, "/")):
                found.append(path)
    return found


class TestCalls:
    """The literal argument sets of the calls the project's tests make, by the called name."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[Call]] | None = None

    def _scan(self) -> dict[str, list[Call]]:
        found: dict[str, list[Call]] = collections.defaultdict(list)
        seen: set[tuple[str, str]] = set()
        for path in test_files()[:MAX_TEST_FILES]:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    tree = ast.parse(handle.read(300_000))
            except (SyntaxError, ValueError, OSError, RecursionError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if not isinstance(name, str) or any(isinstance(a, ast.Starred) for a in node.args):
                    continue
                call: Call = (tuple(literal(a) for a in node.args),
                              {k.arg: literal(k.value) for k in node.keywords if k.arg})
                if any(k.arg is None for k in node.keywords) or (name, repr(call)) in seen:
                    continue
                seen.add((name, repr(call)))
                found[name].append(call)
        return found

    def count(self, names: list[str]) -> int:
        """How many distinct calls the tests make by any of ``names``."""
        if self.by_name is None:
            self.by_name = self._scan()
        return sum(len(self.by_name.get(name, [])) for name in names)

    def of(self, name: str, func: Any, skip_first: bool = False) -> list[Call]:
        """The tests' literal calls of ``name`` that ``func``'s signature accepts. When no call is literal
        throughout, the calls whose other arguments are (a fixture's path with ``is_singleton=True``) are taken with
        each non-literal argument replaced by the value inferred for its parameter: the call's shape, the keywords
        that choose a code path, is what the tests say."""
        if self.by_name is None:
            self.by_name = self._scan()
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            return []
        accepted: list[Call] = []
        partial: list[Call] = []
        for args, kwargs in self.by_name.get(name, []):
            try:
                bound = signature.bind(*((None,) if skip_first else ()), *args, **kwargs)
            except TypeError:
                continue
            if not any(v is INFER for v in (*args, *kwargs.values())):
                accepted.append((args, kwargs))
                continue
            for key, value in bound.arguments.items():
                parameter = signature.parameters[key]
                if value is INFER and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                    bound.arguments[key] = argument(parameter)
            filled = (tuple(bound.args[1:] if skip_first else bound.args), dict(bound.kwargs))
            if not any(v is INFER for v in (*filled[0], *filled[1].values())) and filled not in partial:
                partial.append(filled)
        return (accepted or partial)[:MAX_ARGUMENT_SETS]


TESTS = TestCalls()


@contextlib.contextmanager
def thawed() -> Any:
    """The real clocks and the default switch interval while the project's tests run (a test that polls a clock
    until a deadline must see it move)."""
    frozen = {name: getattr(time, name) for name in REAL_CLOCKS}
    interval = sys.getswitchinterval()
    for name, clock in REAL_CLOCKS.items():
        setattr(time, name, clock)
    sys.setswitchinterval(0.005)
    try:
        yield
    finally:
        for name, clock in frozen.items():
            setattr(time, name, clock)
        sys.setswitchinterval(interval)


LIVE: list[object] = []  # what a recording shares rather than copies: a stream, a socket, a local function
# the locks a recording replaces with new ones: free in every run, and an asyncio one bound to no event loop (a
# recorded one is bound to the test's loop, and a task of another loop that waits for it fails)
FRESH_KINDS: dict[type, str] = {type(threading.Lock()): "lock", type(threading.RLock()): "rlock",
                                asyncio.Lock: "asyncio-lock"}
DOUBLES = ("unittest.mock", "mock.mock")  # the modules of test doubles (mocks)


def _live(index: int) -> object:
    return LIVE[index]


def _fresh(kind: str) -> object:
    """A new lock in place of a recorded one: every run starts with its locks free."""
    if kind == "asyncio-lock":
        return asyncio.Lock()
    return threading.RLock() if kind == "rlock" else threading.Lock()


def _named(module: str, qualname: str) -> object:
    """A class or function by its module and name, as the module is now (reloaded: the fresh class)."""
    found: object = sys.modules[module]
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def found_again(obj: Any) -> Any:
    """What a class or function is found as by its module and name: itself, the one a reload of its module made
    (same module, same name), or None."""
    try:
        found: Any = _named(obj.__module__, obj.__qualname__)
    except (KeyError, AttributeError, TypeError):
        return None
    same = found is obj or (type(found) is type(obj) and getattr(found, "__qualname__", None) == obj.__qualname__)
    return found if same else None


class Keeper(pickle.Pickler):
    """Pickles what a test built: classes and functions by module and name (so that, loaded after a reload, an
    object is of the fresh class), modules by name, locks as new locks, and what cannot be pickled — a stream, a
    socket, a lambda — shared as it is. ``owner`` (the receiver) is pickled by reference, for the arguments of
    later calls on it."""

    def __init__(self, file: io.BytesIO, owner: object = None) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.owner = owner

    def persistent_id(self, obj: object) -> str | None:
        return "owner" if self.owner is not None and obj is self.owner else None

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind in FRESH_KINDS:
            return _fresh, (FRESH_KINDS[kind],)
        if isinstance(obj, ModuleType):
            return importlib.import_module, (obj.__name__,)
        if isinstance(obj, type) or kind in (FunctionType, BuiltinFunctionType):
            found = found_again(obj)
            if found is obj:
                return NotImplemented  # by name, as pickle stores it
            return self.shared(obj) if found is None else (_named, (obj.__module__, obj.__qualname__))
        if copyreg.dispatch_table.get(kind) is not None:
            return NotImplemented
        if any(k.__module__ in DOUBLES for k in kind.__mro__):  # a test double answers every attribute: shared
            return self.shared(obj)
        try:
            return obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
        except Exception:
            return self.shared(obj)

    @staticmethod
    def shared(obj: object) -> tuple[Any, tuple[int]]:
        LIVE.append(obj)
        return _live, (len(LIVE) - 1,)


def kept(value: object, owner: object = None) -> bytes:
    out = io.BytesIO()
    Keeper(out, owner).dump(value)
    return out.getvalue()


class Loader(pickle.Unpickler):
    def __init__(self, data: bytes, owner: object) -> None:
        super().__init__(io.BytesIO(data))
        self.owner = owner

    def persistent_load(self, pid: object) -> object:
        return self.owner


class Recording:
    """The receiver of the target's first call in a test of the project (as it was then) and the arguments of that
    call and of the test's next calls on it, each loaded afresh for every run."""

    def __init__(self, test: str, owner: bytes | None, calls: list[bytes]) -> None:
        self.test, self.owner, self.calls = test, owner, calls

    def load(self) -> tuple[object, list[Call]]:
        owner = pickle.loads(self.owner) if self.owner is not None else None  # noqa: S301 - pickled by this program
        return owner, [Loader(blob, owner).load() for blob in self.calls]


def bound(frame: FrameType) -> tuple[list[object], dict[str, object]]:
    """The arguments a call event's frame received, as a call would pass them again."""
    code, values = frame.f_code, frame.f_locals
    names = code.co_varnames
    positional = code.co_argcount
    args = [values[n] for n in names[:positional]]
    kwargs = {n: values[n] for n in names[positional:positional + code.co_kwonlyargcount]}
    at = positional + code.co_kwonlyargcount
    if code.co_flags & inspect.CO_VARARGS:
        args += list(values[names[at]])
        at += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(values[names[at]])
    return args, kwargs


def target_code(module: ModuleType, parts: list[str], is_method: bool) -> Any:
    """The code object of the changed callable (under its decorators)."""
    if is_method:
        member: Any = inspect.getattr_static(getattr(module, parts[0]), mangled(parts[0], parts[1]))
    else:
        member = module
        for part in parts:
            member = getattr(member, part)
    member = getattr(member, "__func__", member)
    return getattr(inspect.unwrap(member), "__code__", None)


def naming_files(names: list[str], module: str | None = None) -> list[str]:
    """The project's test files that name the target (``names``: its name, then its class's), those naming the
    target itself first (a method may be reached through another: ``bind`` calls ``update``), then by how often;
    or (``module``) those whose import lines name the module."""
    patterns = [re.compile(rf"\b{re.escape(name)}\b") for name in names]
    if module is not None:
        patterns = [re.compile(rf"^\s*(from|import)\s[^\n]*\b{re.escape(module)}\b", re.MULTILINE)]
    found: list[tuple[tuple[int, ...], str]] = []
    for path in test_files():
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(300_000)
        except OSError:
            continue
        mentions = [len(pattern.findall(text)) for pattern in patterns]
        if any(mentions):
            found.append((tuple(-m for m in mentions), path))
    return [path for _, path in sorted(found)[:RECORD_FILES]]


class Recorder:
    """A pytest plugin: traces calls while the tests run and keeps the first test's calls of the target — the
    receiver as it was at the first call, and the arguments of each distinct call on it — then ends the session."""

    def __init__(self, code: Any, is_method: bool, deadline: float) -> None:
        self.where = (code.co_filename, code.co_firstlineno, code.co_name)
        self.is_method, self.deadline = is_method, deadline
        self.session: Any = None
        self.current = ""
        self.test = ""
        self.owner: object = None
        self.blob: bytes | None = None
        self.calls: list[bytes] = []

    def pytest_sessionstart(self, session: Any) -> None:
        self.session = session

    def pytest_collection_finish(self, session: Any) -> None:
        sys.settrace(self.trace)

    def pytest_sessionfinish(self, session: Any) -> None:
        sys.settrace(None)

    def pytest_runtest_setup(self, item: Any) -> None:
        self.current = item.nodeid

    def pytest_runtest_logfinish(self, nodeid: str, location: object) -> None:
        if self.calls or _clock() > self.deadline:
            self.session.shouldstop = "recorded" if self.calls else "the time to record ended"

    def trace(self, frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "call" and (code.co_filename, code.co_firstlineno, code.co_name) == self.where:
            self.take(frame)

    def take(self, frame: FrameType) -> None:
        if (self.test and self.current != self.test) or len(self.calls) >= MAX_ARGUMENT_SETS:
            return
        args, kwargs = bound(frame)
        owner = None
        if self.is_method:
            if not args or (self.test and args[0] is not self.owner):
                return
            owner, args = args[0], args[1:]
        try:
            blob = self.blob if self.test else (kept(owner) if self.is_method else None)
            call = kept((tuple(args), kwargs), owner)
            Recording(self.current, blob, [call]).load()  # what does not load again is no recording
        except Exception:  # a call whose state cannot be kept: the next one may be
            return
        if call not in self.calls:
            self.test, self.owner, self.blob = self.current, owner, blob
            self.calls.append(call)


def record(seconds: float) -> Recording | str:
    """The target as the first of the project's tests to call it builds and calls it (its receiver at that call),
    or why there is none. The tests run in this process under pytest, for at most ``seconds``, output discarded."""
    parts = CONFIG["qualname"].split(".")
    try:
        import pytest
    except ImportError:
        return "pytest is not installed"
    # the project's modules imported afresh for the tests: the trials reloaded the changed module, and a class of
    # it that another module bound before the reload is not the one its reloaded methods name (``super`` fails)
    for name, loaded in list(sys.modules.items()):
        file = os.path.realpath(getattr(loaded, "__file__", None) or "/")
        if file.startswith(os.path.realpath(REPO) + os.sep) and "site-packages" not in file:
            del sys.modules[name]
    code = target_code(import_module(CONFIG["path"]), parts, CONFIG["is_method"])
    module = module_name(CONFIG["path"]).rpartition(".")[2]
    # the files naming the target or its class, else those importing its module (``from dateutil import tz``)
    files = naming_files(list(reversed(parts))) or naming_files([], module)
    if code is None or not files:
        return f"no test of the project names {' or '.join(reversed(parts))} or imports {module}"
    recorder = Recorder(code, CONFIG["is_method"], _clock() + seconds)
    options = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "-p", "no:cov",
               "--continue-on-collection-errors",
               "-o", "addopts=", "--capture=fd", "-W", "ignore", "--rootdir", REPO]
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    # the project's configuration, else none (one this pytest no longer reads: a ``[pytest]`` section of setup.cfg)
    bare = os.path.join(tempfile.mkdtemp(), "pytest.ini")
    with open(bare, "w", encoding="utf-8") as ini:
        ini.write("[pytest]\n")
    ended: BaseException | None = None
    try:
        # the project's configuration and plugins; else none of its configuration; else no plugin it did not ask
        # for either (an installed plugin this pytest cannot load)
        autoloading = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
        for configured, autoload in (([], True), (["-c", bare], True), (["-c", bare], False)):
            ended = None
            if not autoload:
                os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            try:
                with thawed():
                    pytest.main([*options, *configured, *files], plugins=[recorder])
            except BaseException as exc:  # a test suite that exits or crashes leaves no recording
                ended = exc
            finally:
                os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
                if autoloading is not None:
                    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = autoloading
            if recorder.session is not None:
                break
    finally:
        sys.settrace(None)
        sys.stdout, sys.stderr = stdout, stderr
        WATCH.take()
    if recorder.session is None:
        return f"pytest could not start on the project's tests{f' ({type(ended).__name__})' if ended else ''}"
    if not recorder.calls and ended is not None:
        return f"the tests ended with {type(ended).__name__}"
    if not recorder.calls:
        return f"no test of {len(files)} file(s) naming {' or '.join(reversed(parts))} called it in {seconds:.0f} s"
    return Recording(recorder.test, recorder.blob, recorder.calls)


RECORDED: Recording | None = None


def snapshot(value: object, depth: int = 0) -> object:
    """A comparable picture of a state value: containers as sorted multisets (order of equal calls is no race),
    objects by their attributes, locks, threads (a timer the calls start: its name and liveness tell when it ran,
    not what the calls computed), events and callables by their type."""
    if isinstance(value, (bool, int, str, bytes, type(None))):
        return value
    if isinstance(value, float):
        return round(value, 6)
    if depth > 3:
        return type(value).__name__
    if isinstance(value, dict):
        return sorted((repr(snapshot(k, depth + 1)), repr(snapshot(v, depth + 1))) for k, v in value.items())[:500]
    if isinstance(value, (list, tuple, set, frozenset, collections.deque)):
        return sorted(repr(snapshot(v, depth + 1)) for v in value)[:500]
    if callable(value) or isinstance(value, (ModuleType, threading.Thread, threading.Event)) \
            or "lock" in type(value).__name__.lower():
        return type(value).__name__
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return {k: snapshot(v, depth + 1) for k, v in sorted(attributes.items()) if not k.startswith("__")}
    return type(value).__name__


def sizes(values: dict[str, Any]) -> dict[str, int]:
    """The length of every container among ``values`` (a cache's size does not depend on the order of calls)."""
    found = {}
    for name, value in values.items():
        if isinstance(value, CONTAINERS) and not name.startswith("__"):
            found[name] = len(value)
    return found


def counts(values: dict[str, Any]) -> dict[str, int]:
    """The whole numbers among ``values`` (a counter of calls, a running total of items): as a container's size,
    compared where every sequential order leaves the same."""
    return {name: value for name, value in values.items()
            if type(value) is int and not name.split(".")[-1].startswith("__")}


def entry(item: object) -> object:
    """What an entry of a memo is told apart by: a value (a key) by what it holds, an object by its identity."""
    if isinstance(item, (bool, int, float, str, bytes, tuple, frozenset, type(None))):
        return "value", repr(snapshot(item))
    return "object", id(item)


def memos(values: dict[str, Any], returned: list[object]) -> dict[str, list[object]]:
    """The lists among ``values`` a memo keeps, each entry once: a list that holds every object the calls returned
    (a cache the calls answer from) and a list kept beside it, as long as it (the cache's keys). Two calls that
    overlap may both miss and both store what they computed: the same entry stored twice is work done twice, not a
    wrong state. Objects only: a returned number or string may be in a list by chance."""
    lists = {name: value for name, value in values.items()
             if isinstance(value, (list, collections.deque)) and not name.split(".")[-1].startswith("__")}
    objects = [value for value in returned if not is_value(value)]
    if not objects:
        return {}
    held = {name for name, items in lists.items() if all(any(value is item for item in items) for value in objects)}
    held |= {name for name, items in lists.items() if any(len(items) == len(lists[memo]) for memo in held)}
    found = {}
    for name in held:
        once: dict[object, object] = {}
        for item in lists[name]:
            once.setdefault(entry(item), item)
        found[name] = list(once.values())
    return found


def mangled(owner: str, name: str) -> str:
    """The attribute a method of class ``owner`` is stored under: a private ``__name`` is name-mangled."""
    if name.startswith("__") and not name.endswith("__") and owner.strip("_"):
        return f"_{owner.lstrip('_')}{name}"
    return name


RETURNED = ""  # a call's text until the run is over: what it returned is shown then (:func:`shown`)


TIMED_OUT = " (timed out)"  # marks a call that gave up waiting (a lock's timeout): contention, not a wrong state


def outcome(call: Any) -> tuple[str, object]:
    try:
        return RETURNED, call()
    except Exception as exc:
        waited = isinstance(exc, (TimeoutError, asyncio.TimeoutError))
        return "raised " + type(exc).__name__ + (TIMED_OUT if waited else ""), None


def gave_up(serial: list[dict[str, Any]], other: dict[str, Any]) -> bool:
    """Whether a call of ``other`` gave up waiting for another call (its timeout ran out) where no sequential run
    had one do so: a lock held by another thread made it wait, as the lock is meant to, and what it then did not
    do leaves the rest not comparable."""
    return any(text.endswith(TIMED_OUT) for text in other["results"]) and \
        not any(text.endswith(TIMED_OUT) for run_ in serial for text in run_["results"])


def shown(value: object) -> str:
    """What a call returned, as text, once every call of the run is over: a returned object that shows the shared
    state (a subscription showing its broker's registry) is not shown while other threads change that state (its
    ``repr`` would fail or differ for the probe's own reading, not the code's), and a ``repr`` that fails is no
    exception of the call."""
    try:
        return ADDRESS.sub("", repr(value))[:200]
    except Exception:
        return f"<{type(value).__name__}>"


def is_value(obj: object) -> bool:
    return isinstance(obj, (bool, int, float, str, bytes, type(None)))


class Subject:
    """A fresh copy of the changed module, the receiver the calls share, and the calls each thread makes."""

    def __init__(self, companion: str | None = None, repeated: bool = False) -> None:
        # reloaded even when first imported: the package's own import may have used the module's state (a default
        # handler added to a class-level registry), which no later reload repeats, and every run must start alike
        self.module = importlib.reload(import_module(CONFIG["path"]))
        parts = CONFIG["qualname"].split(".")
        self.owner: Any = None
        self.init_args: Call = ((), {})
        self.name = parts[-1]
        self.concrete: str | None = None  # the subclass an abstract class's method is driven through
        # a recording, loaded after the reload: the recorded objects are of the fresh classes
        recorded = RECORDED.load() if RECORDED is not None else None
        if CONFIG["is_method"]:
            cls = getattr(self.module, parts[0])
            self.name = mangled(parts[0], parts[1])
            if recorded is not None:
                self.owner = recorded[0]
                if not any(k.__qualname__ == cls.__qualname__ and k.__module__ == cls.__module__
                           for k in type(self.owner).__mro__):
                    raise LookupError(f"the recorded receiver is a {type(self.owner).__qualname__}")
            elif inspect.isabstract(cls):
                concrete = self.concrete_class(cls, self.name)
                self.concrete = concrete.__qualname__
                self.owner = self.receiver(concrete)
            else:
                self.owner = self.receiver(cls)
            if isinstance(cls, type) and issubclass(cls, type):
                # the metaclass's own method bound to the class: the class may define a method of that name for
                # its instances (``__call__`` of a context decorator), which plain attribute lookup finds first
                self.target = inspect.getattr_static(cls, self.name).__get__(self.owner, cls)
            else:
                self.target = getattr(self.owner, self.name)
        else:
            self.target = self.module
            for part in parts:
                self.target = getattr(self.target, part)
        # a constructor is driven as the project calls it: each call builds a new object of the class (called
        # again on one object, ``__init__`` would redo what the class's ``__new__`` did once)
        self.constructs = bool(CONFIG["is_method"]) and self.name == "__init__" and not isinstance(self.owner, type)
        self.calls = recorded[1] if recorded is not None else self.calls_of(self.name, self.target)
        if repeated:  # one argument set for every call: any order of the calls is the same sequence
            self.calls = self.calls[:1]
        self.companion = companion
        self.companion_target = getattr(self.owner, companion) if companion else None
        self.companion_calls = self.calls_of(companion, self.companion_target) if companion else []

    def concrete_class(self, cls: type, name: str) -> type:
        """A class the project can instantiate that inherits ``name`` from the abstract ``cls`` as it is (no class
        between them defines it again), among the subclasses of the class as reloaded (those of the changed
        module); the one the tests call most, else the first by name."""
        found: list[type] = []
        pending: list[type] = list(cls.__subclasses__())
        while pending:
            sub = pending.pop()
            pending += sub.__subclasses__()
            between = [k for k in sub.__mro__[: sub.__mro__.index(cls)] if name in vars(k)]
            if not inspect.isabstract(sub) and not between and sub not in found:
                found.append(sub)
        if not found:
            raise LookupError(f"{cls.__qualname__} is abstract and no class of the project inherits {name} as it is")
        return max(sorted(found, key=lambda k: (k.__module__ != self.module.__name__, k.__qualname__)),
                   key=lambda k: TESTS.count([k.__name__]))

    def receiver(self, cls: type) -> Any:
        if isinstance(cls, type) and issubclass(cls, type):
            return self.built_with(cls)
        own_init = "__init__" in vars(cls)
        for args, kwargs in TESTS.of(cls.__name__, cls.__init__, skip_first=True) if own_init else []:
            try:
                made = cls(*args, **kwargs)
            except Exception:  # noqa: S112 - a test's call may need its fixtures: try the next one
                continue
            self.init_args = (args, kwargs)
            return made
        inferred = arguments(cls.__init__, skip_first=True) if own_init else {}
        try:
            made = cls(**inferred)
            self.init_args = ((), inferred)
            return made
        except Exception:
            self.init_args = ((), {"__new__": True})
            return cls.__new__(cls)

    def built_with(self, metaclass: type) -> Any:
        """A class built with ``metaclass`` (the receiver of its methods): in the changed module, else in another
        loaded module of the project, which is reloaded so that the class is rebuilt with the fresh metaclass."""

        def built(value: object) -> bool:
            kind = type(value)
            return isinstance(value, type) and kind.__qualname__ == metaclass.__qualname__ \
                and kind.__module__ == metaclass.__module__

        # a class the project can instantiate (an abstract base built with the metaclass only raises), the one the
        # tests call most; one of the changed module before one of another module
        abstract = None
        for _, value in sorted(vars(self.module).items()):
            if built(value) and getattr(value, "__module__", "") == self.module.__name__:
                if not inspect.isabstract(value):
                    return value
                abstract = abstract or value
        candidates = [(mod, attribute, value) for name, mod in project_modules(self.module)
                      for attribute, value in sorted(vars(mod).items())
                      if built(value) and getattr(value, "__module__", "") == name and not inspect.isabstract(value)]
        if candidates:
            mod, attribute, _ = max(candidates, key=lambda c: TESTS.count(self.names_of(c[2])))
            fresh = getattr(importlib.reload(mod), attribute, None)
            if isinstance(fresh, metaclass):
                return fresh
        if abstract is not None:
            return abstract
        raise LookupError(f"no class built with {metaclass.__qualname__} in the project's modules")

    def names_of(self, cls: type) -> list[str]:
        """The names the project calls ``cls`` by: its own, and those its modules bind it to (``FileLock`` for
        the platform's lock class)."""
        found = [cls.__name__]
        for _, mod in [(self.module.__name__, self.module), *project_modules(self.module)]:
            for attribute, value in sorted(vars(mod).items()):
                if isinstance(value, type) and value.__qualname__ == cls.__qualname__ \
                        and value.__module__ == cls.__module__ and attribute not in found:
                    found.append(attribute)
        return found

    def calls_of(self, name: str, func: Any) -> list[Call]:
        # a metaclass's method is called by calling the class built with it, a constructor by calling its class:
        # the tests call that class
        called = self.names_of(self.owner) if isinstance(self.owner, type) and name == self.name else \
            self.names_of(type(self.owner)) if name == self.name and self.constructs else [name]
        found = [call for each in called for call in TESTS.of(each, func)][:MAX_ARGUMENT_SETS]
        return found or [((), arguments(func, skip_first=False))]

    def chosen(self, index: int) -> tuple[str, int, Call]:
        """What call ``index`` of one run calls: the target, or (odd calls of a paired run) its companion, by name,
        with the number of its argument set and the set."""
        if self.companion is not None and self.companion_target is not None and index % 2:
            number = (index // 2) % len(self.companion_calls)
            return self.companion, number, self.companion_calls[number]
        number = (index // (2 if self.companion else 1)) % len(self.calls)
        return self.name, number, self.calls[number]

    def call(self, index: int) -> tuple[str, object]:
        """Call ``index`` of one run: the target's, or (odd calls of a paired run) its companion's."""
        _, _, (args, kwargs) = self.chosen(index)
        if self.companion_target is not None and index % 2:
            return outcome(lambda: self.companion_target(*args, **kwargs))
        if self.constructs:
            return outcome(lambda: type(self.owner)(*args, **kwargs))
        return outcome(lambda: self.target(*args, **kwargs))

    def key(self, index: int) -> str:
        """Which calls are expected to give the same object (the same callable and arguments)."""
        name, number, _ = self.chosen(index)
        return f"{name}#{number}"

    def label(self, index: int) -> str:
        """Call ``index`` as a person reads it: the callable's name and its arguments."""
        name, _, (args, kwargs) = self.chosen(index)
        shown_args = [shown(value)[:40] for value in args] + [f"{k}={shown(v)[:40]}" for k, v in kwargs.items()]
        return f"{name}({', '.join(shown_args)})"[:120]

    def values(self) -> dict[str, Any]:
        """The state's top-level values by name: the receiver's (``self.x``) and its class's (``class.x``)
        attributes, or the module's globals."""
        if self.owner is not None:
            return {**{f"class.{k}": v for k, v in vars(type(self.owner)).items()},
                    **{f"self.{k}": v for k, v in getattr(self.owner, "__dict__", {}).items()}}
        return dict(vars(self.module))

    def state(self, memo: dict[str, list[object]]) -> object:
        """The final state (``memo``: the lists a memo keeps, each entry once, in place of what they hold)."""
        if PROCESSES:  # the processes' memory is their own: what they share is the files they leave
            return {"files": files_left()}
        if self.owner is not None:
            instance = snapshot(self.owner)
            if isinstance(instance, dict):
                instance.update({k: snapshot(memo[f"self.{k}"], 1) for k in instance if f"self.{k}" in memo})
            return {"instance": instance, "class": snapshot(
                {k: memo.get(f"class.{k}", v) for k, v in vars(type(self.owner)).items() if not k.startswith("__")})}
        return snapshot({k: memo.get(k, v) for k, v in vars(self.module).items() if not k.startswith("__")})

    def sizes(self, memo: dict[str, list[object]]) -> dict[str, int]:
        if PROCESSES:
            return {}
        return sizes({**self.values(), **memo})

    def counts(self) -> dict[str, int]:
        return {} if PROCESSES else counts(self.values())

    def describe(self) -> dict[str, object]:
        """How the subject was built and called, as literals (the reproducer rebuilds it from them)."""
        if RECORDED is not None:  # built by a test: its object and arguments are no literals to rebuild from
            return {"receiver": "recorded" if self.owner is not None else "function", "recorded_from": RECORDED.test,
                    "call_args": shown(self.calls)[:2000]}
        receiver = "metaclass" if isinstance(self.owner, type) else "subclass" if self.concrete else "new" \
            if "__new__" in self.init_args[1] else "init" if self.owner is not None else "function"
        return {"receiver": receiver, "init_args": repr(self.init_args), "call_args": repr(self.calls)[:2000],
                **({"concrete": self.concrete} if self.concrete else {}),
                **({"constructs": True} if self.constructs else {})}


def files_left() -> dict[str, str]:
    """The files of the run's directory (the calls' relative paths land there) and the start of each."""
    found: dict[str, str] = {}
    for root, directories, names in os.walk("."):
        directories.sort()  # walked in order: the same files in the same order every run
        for name in sorted(names):
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as handle:
                    found[os.path.relpath(path)] = handle.read(FILE_BYTES).decode("utf-8", "replace")
            except OSError as exc:
                found[os.path.relpath(path)] = f"<{type(exc).__name__}>"
            if len(found) >= MAX_FILES:
                return found
    return found


def run_processes(subject: Subject, slots: list[list[int]], mode: str, seed: int, patience: float
                  ) -> tuple[list[tuple[int, tuple[str, object]]], int, int]:
    """The calls from forked processes, one a slot, released together through a pipe (each yielding in the changed
    module as a thread would), or, for the control, taking turns under a file lock; how many were hung, and how
    many died before they reported (killed, or ended by the code): their calls are not known."""
    filename = getattr(subject.module, "__file__", "") or ""
    outputs = tempfile.mkdtemp(dir=WORK, prefix="out-")
    gate, release = os.pipe()
    children: dict[int, int] = {}
    threads = len(slots)
    for number in range(threads):
        pid = os.fork()
        if pid == 0:  # the child: its calls, then what each returned, as text, in a file of its own
            try:
                os.close(release)
                os.read(gate, 1)
                if mode != "control":
                    sys.settrace(interleaver(filename, mode == "opcode-yield", random.Random(seed * 1000 + number)))  # noqa: S311 - a schedule, not a secret
                mine = []
                for index in slots[number]:
                    if mode == "control":
                        with open(os.path.join(WORK, "turns.lock"), "a") as turn:
                            fcntl.flock(turn, fcntl.LOCK_EX)
                            text, value = subject.call(index)
                    else:
                        text, value = subject.call(index)
                    mine.append([index, text or shown(value)])
                sys.settrace(None)
                with open(os.path.join(outputs, str(number)), "w", encoding="utf-8") as out:
                    json.dump(mine, out)
            finally:
                os._exit(0)
        children[pid] = number
    os.close(gate)
    os.write(release, b"go" * threads)
    os.close(release)
    deadline = _clock() + patience
    while children and _clock() < deadline:
        for pid in list(children):
            if os.waitpid(pid, os.WNOHANG)[0]:
                del children[pid]
        _sleep(0.005)
    for pid in children:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    done: list[tuple[int, tuple[str, object]]] = []
    died = 0
    for number in set(range(threads)) - set(children.values()):
        try:
            with open(os.path.join(outputs, str(number)), encoding="utf-8") as out:
                done += [(index, (text, None)) for index, text in json.load(out)]
        except (OSError, ValueError):
            died += 1
    return done, len(children), died


def project_modules(module: ModuleType) -> list[tuple[str, ModuleType]]:
    """The other loaded modules of ``module``'s top-level package."""
    top = module.__name__.split(".")[0]
    return [(name, mod) for name, mod in sorted(sys.modules.items())
            if mod is not None and mod is not module and (name == top or name.startswith(top + "."))]


def lock_held(statement: ast.stmt) -> bool:
    """Whether ``statement`` takes a lock that the statements after it in the same block then hold (``x.acquire()``,
    ``self._acquire_transaction_lock(...)``)."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        call = statement.value
    if not isinstance(call, ast.Call):
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return "acquire" in name.lower()


def releases(body: list[ast.stmt]) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "release"
               for statement in body for node in ast.walk(statement))


def guarded_calls(tree: ast.Module, name: str) -> tuple[list[int], list[int]]:
    """The lines of the module's calls of method ``name`` (``self.name(...)``), and of those made holding a lock: in
    a ``with`` block on a lock, after an ``acquire`` in the same block, or in a ``try`` whose ``finally`` releases."""
    calls: list[int] = []
    held_at: list[int] = []

    def visit(node: ast.AST, held: bool) -> None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name:
            calls.append(node.lineno)
            if held:
                held_at.append(node.lineno)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            held = held or any("lock" in ast.unparse(item.context_expr).lower() for item in node.items)
        if isinstance(node, ast.Try) and releases(node.finalbody):
            held = True
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            taken = held
            for child in block:
                visit(child, taken)
                taken = taken or (isinstance(child, ast.stmt) and lock_held(child))
        for field, value in ast.iter_fields(node):
            if field in ("body", "orelse", "finalbody", "handlers"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    visit(child, held)

    visit(tree, False)
    return calls, held_at


def guarded_by_callers(subject: Subject, name: str) -> list[int]:
    """The lines of the calls of private method ``name`` when every call of it in its module holds a lock (its
    callers' locking is what guards it: probing it alone would call it as no caller does); else nothing."""
    if not name.startswith("_") or name.endswith("__"):
        return []
    try:
        with open(getattr(subject.module, "__file__", "") or "", encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return []
    calls, held_at = guarded_calls(tree, name)
    return held_at if calls and len(calls) == len(held_at) else []


def companions(subject: Subject) -> list[str]:
    """Other methods of the receiver's class that read or write the attributes the target touches: a check in one
    and an act in the other race as surely as a read-modify-write in one; and for a private helper, the methods
    that call it, the ways in that callers have (the state that makes it act — a timer run out, an argument its
    default leaves out — may be theirs to set)."""
    owner = subject.owner
    if owner is None or isinstance(owner, type):
        return []
    code = getattr(getattr(subject.target, "__func__", None), "__code__", None)
    # the instance's attributes and the class's containers (a registry kept on the class is shared by every
    # instance; its constants are not state). A constructor runs on a new object each time: what its calls share
    # is the class's containers only (another method reading the attributes of an object still being built again
    # is no use of the class)
    own = set() if subject.name == "__init__" else set(getattr(owner, "__dict__", {}))
    state = own | {k for klass in type(owner).__mro__[:-1] for k, v in vars(klass).items()
                   if not k.startswith("__") and isinstance(v, CONTAINERS)}
    if code is None:
        return []
    touched = set(code.co_names) & state
    private = subject.name.startswith("_") and not subject.name.endswith("__")
    found = []
    for name, member in sorted(vars(type(owner)).items()):
        func = getattr(member, "__code__", None)
        if name == subject.name or func is None or (name.startswith("__") and name not in PROTOCOL):
            continue
        caller = private and subject.name in func.co_names
        if (caller or touched & set(func.co_names)) and not guarded_by_callers(subject, name):
            found.append(name)
    # the container protocol first (get/set pairs are where a cache checks and acts), then public methods, then
    # the private helpers a public method hands the state to (returning a connection to a pool)
    return sorted(found, key=lambda n: (n not in PROTOCOL, n.startswith("_"), n))[:MAX_COMPANIONS]


def interleaver(filename: str, opcodes: bool, rng: random.Random) -> Any:
    """A trace function that yields the interpreter at the changed module's lines (or opcodes), and at a few of
    them, chosen at random, stalls the thread long enough for the others to run many lines (a thread the
    operating system preempts between a check and its act while others run on: a window as wide as the code
    between another thread's check and its act, which short yields alone rarely keep open)."""
    stalls = [STALLS]

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event in ("line", "opcode"):
            draw = rng.random()
            if draw < STALL_CHANCE and stalls[0]:
                stalls[0] -= 1
                _sleep(STALL_SECONDS)
            elif draw < 0.7:
                # a sleep of zero may hand the interpreter straight back to this thread (as Python 3.9 does): a
                # short real sleep lets another thread run
                _sleep(YIELD_SECONDS)
        return local

    def hook(frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename != filename:
            return None
        frame.f_trace_opcodes = opcodes
        return local

    return hook


def run_tasks(subject: Subject, slots: list[list[int]], sequence: list[int] | None,
              mode: str) -> list[tuple[int, tuple[str, object]]]:
    """A coroutine target: the calls awaited one after another in ``sequence``, or from tasks gathered together,
    one a slot (they interleave at every ``await``; the control makes them take turns with one ``asyncio.Lock``)."""

    async def one(index: int) -> tuple[int, tuple[str, object]]:
        args, kwargs = subject.calls[index % len(subject.calls)]
        try:
            return index, (RETURNED, await subject.target(*args, **kwargs))
        except Exception as exc:
            return index, ("raised " + type(exc).__name__, None)

    async def task(slot: list[int], turns: asyncio.Lock | None) -> list[tuple[int, tuple[str, object]]]:
        mine = []
        for index in slot:
            if turns is None:
                mine.append(await one(index))
            else:
                async with turns:
                    mine.append(await one(index))
        return mine

    async def drive() -> list[tuple[int, tuple[str, object]]]:
        if sequence is not None:
            return [await one(index) for index in sequence]
        turns = asyncio.Lock() if mode == "control" else None
        parts = await asyncio.wait_for(asyncio.gather(*(task(slot, turns) for slot in slots)), 5.0)
        return [result for part in parts for result in part]

    done: list[tuple[int, tuple[str, object]]] = in_loop(drive())
    return done


def in_loop(main: Any) -> Any:
    """``main`` run to its end in the run's event loop (the one the subject was built in: an ``asyncio.Lock`` made
    then is bound to it on Python < 3.10), ended as ``asyncio.run`` ends its loop."""
    loop = asyncio.get_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in left:
            task.cancel()
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())


def orders(threads: int, calls: int) -> dict[str, list[int]]:
    """Sequential orders of the same calls beyond the first: reversed, (for a pair) all of one method's calls
    before the other's either way — the extremes a state that depends on the order of calls can take —, and
    seeded interleavings of the threads' calls, each thread's in its own order, as a run whose calls never overlap
    may take them (a size or a count that depends on the order is not taken for a race from a few orders)."""
    forward = list(range(threads * calls))
    evens, odds = forward[0::2], forward[1::2]
    found = {"sequential-reversed": forward[::-1], "sequential-evens": evens + odds, "sequential-odds": odds + evens}
    return {**found, **interleavings([[call * threads + thread for call in range(calls)] for thread in range(threads)])}


def interleavings(slots: list[list[int]]) -> dict[str, list[int]]:
    """Seeded orders of the threads' calls one after another, each thread's calls in their own order."""
    found = {}
    for number in range(INTERLEAVED_ORDERS):
        pick = random.Random(number)  # noqa: S311 - an order of calls, not a secret
        pending = {thread: list(slot) for thread, slot in enumerate(slots)}
        order = []
        while pending:
            thread = pick.choice(sorted(pending))
            order.append(pending[thread].pop(0))
            if not pending[thread]:
                del pending[thread]
        found[f"sequential-interleaved-{number}"] = order
    return found


def session_slots(threads: int, calls: int) -> list[list[int]]:
    """The calls of each thread of a run of sessions: the companion's call (odd) and then the target's (even), as
    many times as make ``calls`` calls — an acquire and the release of what it acquired, a push and a pop."""
    return [[index for turn in range(max(1, calls // 2)) for index in (2 * (turn * threads + number) + 1,
                                                                        2 * (turn * threads + number))]
            for number in range(threads)]


def session_orders(slots: list[list[int]]) -> dict[str, list[int]]:
    """Sequential orders of sessions beyond the first (each thread's calls after one another, thread by thread):
    the threads in reverse, each turn's companion calls before its target calls (every thread acquires, then every
    thread releases), and seeded interleavings — each keeping every thread's calls in their order, as a run whose
    calls never overlap takes them."""
    turns = range(0, max(len(slot) for slot in slots), 2)
    found = {"sequential-reversed": [index for slot in slots[::-1] for index in slot],
             "sequential-odds": [slot[turn + first] for turn in turns for first in (0, 1) for slot in slots
                                 if turn + first < len(slot)]}
    return {**found, **interleavings(slots)}


def session_order(mode: str, slots: list[list[int]]) -> list[int] | None:
    """The order a sequential ``mode`` makes a run of sessions' calls in (None: the mode is not sequential)."""
    if not mode.startswith("sequential"):
        return None
    return session_orders(slots).get(mode, [index for slot in slots for index in slot])


def sequential_order(mode: str, threads: int, calls: int, picks: list[int] | None) -> list[int] | None:
    """The order a sequential ``mode`` makes its calls in (None: the mode is not sequential): for ``picks``, its
    permutation ``sequential-order-N``, else the named order of :func:`orders`; the calls' own order by default."""
    if not mode.startswith("sequential"):
        return None
    if picks is not None:
        every = every_order(picks)
        return every.get(mode, list(picks))
    return orders(threads, calls).get(mode, list(range(threads * calls)))


def every_order(picks: list[int]) -> dict[str, list[int]]:
    """Every order of a few calls one after another, by its mode's name (the first is the calls' own order)."""
    return {f"sequential-order-{number}": list(order) for number, order in enumerate(itertools.permutations(picks))}


ACQUIRE = re.compile(r"^\s*(async\s+)?with\b.*lock|\.acquire\(", re.IGNORECASE)


def waiting_at(thread: threading.Thread, filename: str) -> str | None:
    """Where a hung thread waits when that is a lock the changed module takes (``with self.lock:``, ``.acquire()``,
    as ``file:line``); None when it waits elsewhere — a queue, a condition, a poll loop, the network: waits a design
    may make on purpose, which a deadlock's lock order is not."""
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None or frame.f_code.co_filename != filename:
        return None
    line = linecache.getline(filename, frame.f_lineno)
    return f"{os.path.basename(filename)}:{frame.f_lineno}" if ACQUIRE.search(line) else None


def deadlocked(other: dict[str, Any]) -> bool:
    """Whether every hung thread of a run (at least two: a cycle) waits for a lock of the changed module."""
    blocked = other.get("blocked") or []
    return len(blocked) >= 2 and all(blocked)


class NeverFinished(Exception):
    """A call made one after another that never returned: no sequential order of these calls exists to compare
    with (a helper that takes a lock its earlier call still holds, a wait for a call that never comes)."""


# the slowest run of calls one after another so far (None: none yet), which bounds the next (see below)
SLOWEST: list[float | None] = [None]


class SerialThread:
    """The thread every run one after another makes its calls from, the same in every run (a thread's id or a
    thread-local value the calls keep is alike from run to run), with the run's event loop set."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[Any, asyncio.AbstractEventLoop | None, threading.Event]] = queue.Queue()
        self.raised: list[BaseException] = []  # what a job raised past its calls' own handling (a SystemExit)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            job, loop, finished = self.jobs.get()
            asyncio.set_event_loop(loop)
            try:
                job()
            except BaseException as exc:  # raised again in the thread that submitted the job
                self.raised.append(exc)
            finally:
                finished.set()

    def submit(self, job: Any, bound: float | None) -> bool:
        """Run ``job`` in this thread: whether it ended within ``bound`` seconds (None: waited for)."""
        finished = threading.Event()
        self.jobs.put((job, LOOP[0], finished))
        ended = finished.wait(bound)
        if self.raised:
            raise self.raised.pop()
        return ended


SERIAL_THREAD: list[SerialThread] = []
LOOP: list[asyncio.AbstractEventLoop | None] = [None]  # the event loop of the run under way


def one_after_another(subject: Subject, sequence: list[int]) -> list[tuple[int, tuple[str, object]]]:
    """The calls of ``sequence`` one after another, in the serial thread, given ``PATIENCE_FACTOR`` times the slowest
    such run so far (at least ``PATIENCE_SECONDS``; the first run, the module's reference, the probe's budget): a
    call still running then raises :class:`NeverFinished` (it is left running, and later runs get a serial thread
    and a subject of their own)."""
    slowest = SLOWEST[0]
    bound = CONFIG.get("budget") if slowest is None else max(PATIENCE_SECONDS, PATIENCE_FACTOR * slowest)
    began = _clock()
    done: list[tuple[int, tuple[str, object]]] = []

    def calls() -> None:
        for index in sequence:
            done.append((index, subject.call(index)))

    if not SERIAL_THREAD:
        SERIAL_THREAD.append(SerialThread())
    serial = SERIAL_THREAD[0]
    if not serial.submit(calls, bound):
        SERIAL_THREAD.clear()
        at = waiting_at(serial.thread, getattr(subject.module, "__file__", "") or "")
        waiting = f", waiting for a lock ({at})" if at else ""
        raise NeverFinished(f"{subject.label(sequence[len(done)])} never returned one after another{waiting}: "
                            f"still running {bound or 0:.1f} s after the calls began")
    SLOWEST[0] = max(slowest or 0.0, _clock() - began)
    return done


def run(threads: int, calls: int, mode: str, seed: int, companion: str | None,
        patience: float = PATIENCE_SECONDS, repeated: bool = False, picks: list[int] | None = None,
        draws: int = 0, sessions: bool = False) -> dict[str, Any]:
    """One run of the calls in ``mode`` (``repeated``: every call with the first argument set; ``picks``: only
    these calls, one a thread, in place of ``threads × calls``; ``sessions``: each thread calls the companion and
    then the target with its first argument set, in turns); threads still running ``patience`` seconds after
    they started are hung; ``draws``: another seed of the random module for the calls (not for the subject)."""
    # the random module starts alike in every run (a module or constructor that draws from it draws the same), so
    # that calls which draw from it are told apart (below)
    random.seed(CONFIG["seed"])
    if PROCESSES:
        os.chdir(tempfile.mkdtemp(dir=WORK))
    # every run has an event loop of its own, set before the subject is built: what the subject binds to the
    # current loop (an ``asyncio.Lock`` on Python < 3.10) is bound to the loop its coroutines run in
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    LOOP[0] = loop
    try:
        return driven(threads, calls, mode, seed, companion, patience, repeated, picks, draws, sessions)
    finally:
        asyncio.set_event_loop(None)
        LOOP[0] = None
        loop.close()


def driven(threads: int, calls: int, mode: str, seed: int, companion: str | None, patience: float,
           repeated: bool, picks: list[int] | None, draws: int, sessions: bool = False) -> dict[str, Any]:
    # a session's target call is the target's first argument set: the release of what the thread acquired, not
    # (the set a test adds) of what every thread holds
    subject = Subject(companion, repeated or sessions)
    if draws:
        random.seed(f"{CONFIG['seed']}-{draws}")
    seeded = random.getstate()
    began = _clock()
    done: list[tuple[int, tuple[str, object]]] = []
    hung = died = 0
    blocked: list[str | None] = []
    # the calls each thread makes (a paired run: neighbouring threads call the target and its pair), and for a
    # sequential mode their order one after another
    slots = [[index] for index in picks] if picks is not None else session_slots(threads, calls) if sessions else \
        [[call * threads + number for call in range(calls)] for number in range(threads)]
    threads = len(slots)
    sequence = session_order(mode, slots) if sessions else sequential_order(mode, threads, calls, picks)
    if inspect.iscoroutinefunction(subject.target) and companion is None:
        done = run_tasks(subject, slots, sequence, mode)
    elif sequence is not None:
        done = one_after_another(subject, sequence)
    elif PROCESSES:
        done, hung, died = run_processes(subject, slots, mode, seed, patience)
    else:
        barrier = threading.Barrier(threads)
        serial = threading.Lock()
        filename = getattr(subject.module, "__file__", "") or ""
        guard = threading.Lock()

        def worker(number: int) -> None:
            mine: list[tuple[int, tuple[str, object]]] = []
            barrier.wait()
            if mode != "control":
                with INSTALLING:
                    sys.settrace(interleaver(filename, mode == "opcode-yield", random.Random(seed * 1000 + number)))  # noqa: S311 - a schedule, not a secret
            for index in slots[number]:
                if mode == "control":
                    with serial:
                        mine.append((index, subject.call(index)))
                else:
                    mine.append((index, subject.call(index)))
            with INSTALLING:
                sys.settrace(None)
            with guard:
                done.extend(mine)

        workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
        for thread in workers:
            thread.start()
        deadline = _clock() + patience
        for thread in workers:
            thread.join(timeout=max(0.0, deadline - _clock()))
        hung = sum(thread.is_alive() for thread in workers)
        blocked = [waiting_at(thread, filename) for thread in workers if thread.is_alive()]
    done = [(index, (text or shown(value), value)) for index, (text, value) in done]
    objects: dict[str, set[int]] = collections.defaultdict(set)
    for index, (_, value) in done:
        if not is_value(value) and not subject.constructs:  # a constructor's every call builds a new object
            objects[subject.key(index)].add(id(value))
    # what no call kept is collected before the state is read: a weakly held object (a ``WeakSet`` of instances)
    # that only a reference cycle keeps (an exception's traceback) is gone whenever the collector ran
    gc.collect()
    memo = {} if PROCESSES else memos(subject.values(), [value for _, (_, value) in done])
    return {"results": collections.Counter(text for _, (text, _) in done), "state": subject.state(memo),
            "sizes": subject.sizes(memo), "counts": subject.counts(),
            "distinct": {k: len(v) for k, v in objects.items()}, "hung": hung, "died": died, "subject": subject,
            "keep": done, "identical": companion is None and len(subject.calls) == 1,
            "seconds": _clock() - began, "patience": patience, "blocked": blocked, "drew": random.getstate() != seeded}


def successes(counter: collections.Counter[str]) -> int:
    return sum(n for value, n in counter.items() if value not in ("False", "None", "0") and not
               value.startswith("raised "))


def invariant_broken(serial: list[dict[str, Any]], other: dict[str, Any], drew: bool = False,
                     numbers: bool = True) -> str | None:
    """What ``other`` gives that no sequential order of the same calls gave (they differ only in order; ``drew``:
    the calls draw random numbers, and ``serial`` has runs with other draws — only what those agree on, the
    successes, sizes and counts, is compared: an exception or an object per call may come from a draw;
    ``numbers``: whether the whole numbers of the state are compared)."""
    if other.get("hung"):
        took = max(run["seconds"] for run in serial)
        where = f", each waiting for a lock ({', '.join(sorted(set(other['blocked'])))})" if deadlocked(other) else ""
        return (f"{other['hung']} thread(s) never finished{where}: still running {other['patience']:.1f} s after "
                f"they started, where one after another the same calls took {took:.1f} s")
    # an exception counts only where no sequential order raised: calls that already fail one after another (a
    # release of what no call holds) misuse the API, and another exception under threads shows no race
    raised = {v for v in other["results"] if v.startswith("raised ")}
    if raised and not drew and not any(v.startswith("raised ") for run in serial for v in run["results"]):
        return "an exception only under concurrency: " + ", ".join(sorted(raised))
    # a count or a size compared where the sequential orders agree on it (every call the same, or calls whose
    # order does not move it): where they differ it depends on the order, and the orders tried are not all
    counts = {successes(run["results"]) for run in serial}
    allowed = max(counts)
    if len(counts) == 1 and successes(other["results"]) > allowed:
        return (f"a limit exceeded: {successes(other['results'])} calls succeeded, one after another only "
                f"{allowed} do")
    # objects per call only where every call is the same: with several keys, the order of the calls decides what a
    # bounded cache evicts, and so whether a weakly held object is built again for its key
    for key, count in sorted(other["distinct"].items() if serial[0]["identical"] and not drew else ()):
        most = max(run["distinct"].get(key, 0) for run in serial)
        # several objects: one where every sequential order raised is another order's success, not a second build
        if count > max(most, 1) and most <= 2:
            return (f"one object expected, several built: the same call ({key}) returned {count} distinct objects, "
                    f"one after another {most}")
    for name, size in sorted(other["sizes"].items()):
        seen = {run["sizes"][name] for run in serial if name in run["sizes"]}
        if len(seen) == 1 and all(name in run["sizes"] for run in serial) and size not in seen:
            return f"a broken size: {name} holds {size} items, after every sequential order {min(seen)}"
    for name, count in sorted(other["counts"].items() if numbers else ()):
        seen = {run["counts"].get(name) for run in serial}
        if len(seen) == 1 and None not in seen and count not in seen:
            kind = "a lost update" if count < min(seen) else "a broken count"  # (min: the one value seen)
            return f"{kind}: {name} is {count}, after every sequential order {min(seen)}"
    return None


def constructor_failed(run_: dict[str, Any]) -> bool:
    """Whether the run built objects with the target constructor and a call of it failed."""
    return bool(run_["subject"].constructs) and any(text.startswith("raised ") for text in run_["results"])


def compare(serial: list[dict[str, Any]], other: dict[str, Any], drew: bool = False) -> str | None:
    """How ``other`` differs from every sequential run (None: not in a way no sequential order explains)."""
    broken = invariant_broken(serial, other, drew)
    if broken is not None or drew:
        return broken
    reference = serial[0]
    exact = reference["identical"] and all(run["results"] == reference["results"] and run["state"] ==
                                           reference["state"] for run in serial)
    if not exact or constructor_failed(reference):
        # (a constructor call that fails drops its object when it ends: one after another no call sees it,
        # together the others do — what they return then is no order's, and no race)
        # different calls (several arguments, a pair of methods) may depend on their order: the orders tried are
        # not all, so only the invariants above tell a race
        return None
    if other["results"] != reference["results"]:
        return "results no sequential order gives: " + ", ".join(
            f"{v} ×{n}" for v, n in sorted(other["results"].items()))[:300]
    if other["state"] != reference["state"]:
        if PROCESSES:  # the files the processes left: the first that differs, with what it holds either way
            left, after = other["state"]["files"], reference["state"]["files"]
            name = next(n for n in sorted({*left, *after}) if left.get(n) != after.get(n))
            return (f"a lost update: {name} holds {left.get(name, '(no file)')!r:.60}, after every sequential order "
                    f"{after.get(name, '(no file)')!r:.60}")
        return "a lost update: the final state differs from the one every sequential order leaves"
    return None


def control_differs(serial: list[dict[str, Any]], control: dict[str, Any], drew: bool = False) -> str | None:
    """What threads change even when their calls never overlap (thread-local or thread-id state): the same
    invariants, so that an order-dependent cache is not taken for one. Not the whole numbers: one the control
    changes (a file descriptor's number, a thread's id) is only not compared, since the control is among the runs
    a concurrent one is compared with."""
    return invariant_broken(serial, control, drew, numbers=False)


def outcome_of(run_: dict[str, Any]) -> tuple[tuple[tuple[int, str], ...], object]:
    """What each call of a run returned (by its place among the calls) and the final state it left."""
    return tuple(sorted((index, text) for index, (text, _) in run_["keep"])), run_["state"]


def named(picture: object) -> dict[str, object] | None:
    """A state's picture (:func:`snapshot`) by the names of its values: an object's attributes, a mapping's
    items by their keys (None: neither)."""
    if isinstance(picture, dict):
        return {str(name): value for name, value in picture.items()}
    if isinstance(picture, list) and all(isinstance(pair, tuple) and len(pair) == 2 for pair in picture):
        found: dict[str, object] = {}
        for key, value in picture:
            try:
                name = ast.literal_eval(key)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                name = key
            found[str(name)] = value
        return found
    return None


def differing(left: object, right: object) -> list[str]:
    """The names of the state's top-level values that differ between two final states."""
    if isinstance(left, dict) and isinstance(right, dict) and set(left) == {"instance", "class"} == set(right):
        return [f"self.{name}" for name in differing(left["instance"], right["instance"])] + \
            [f"class.{name}" for name in differing(left["class"], right["class"])]
    before, after = named(left), named(right)
    if before is not None and after is not None:
        return sorted(name for name in {*before, *after} if before.get(name) != after.get(name))
    return [] if left == right else ["the state"]


def shown_result(text: str) -> str:
    """What a call gave, as a sentence reads it: ``raised X``, or ``returned <value>``."""
    return text if text.startswith("raised ") else f"returned {text[:60]}"


class EveryOrder:
    """A few calls that differ (several argument sets of the target, or the target and its pair), one a thread,
    compared with every order of the same calls one after another: where the order decides what calls leave (two
    keys, an add and a clear), what threads leave must still be what one of the orders leaves. A state or a result
    that none of them gives is a race: a lost update of one of two keys, that no run of many calls can tell from
    an order the sequential runs did not try."""

    def __init__(self, pair: str | None, subject: Subject) -> None:
        self.pair = pair
        if pair is None:
            own, other, again = list(range(len(subject.calls))), [], []
        else:  # a paired run: even calls are the target's, odd ones its companion's, each by its argument set
            own = [2 * number for number in range(len(subject.calls))]
            sets = len(subject.calls_of(pair, getattr(subject.owner, pair)))
            # and each companion call once more (the call of the same argument set a cycle later): a release races
            # two acquires — the holder's, done, and another's — as a check in one call races two acts
            other = [2 * number + 1 for number in range(sets)]
            again = [2 * (number + sets) + 1 for number in range(sets)]
        self.first, self.rest = own[0], (other + own[1:] + again)[:MAX_ARGUMENT_SETS]
        self.serial: dict[tuple[int, ...], list[dict[str, Any]] | str] = {}
        self.seen: tuple[list[int], list[dict[str, Any]], dict[str, Any]] | None = None

    def picks(self, selection: int) -> list[int]:
        """The calls of one selection: the target's first, and two of the others, a different two each time."""
        if len(self.rest) < 2:
            return [self.first, *self.rest, self.first][:EVERY_ORDER_CALLS]
        return [self.first, self.rest[selection % len(self.rest)], self.rest[(selection + 1) % len(self.rest)]]

    def sequential(self, picks: list[int]) -> list[dict[str, Any]] | str:
        """Every order of ``picks`` one after another, or why they cannot be compared."""
        key = tuple(picks)
        if key not in self.serial:
            runs = [run(len(picks), 1, mode, 0, self.pair, picks=picks) for mode in every_order(picks)]
            again = run(len(picks), 1, "sequential-order-0", 0, self.pair, picks=picks)
            # a constructor call that fails drops its object when it ends: one after another no other call sees
            # it, together the others do (a progress bar placed below one still being built) — no order to compare
            failed = constructor_failed(again)
            self.serial[key] = "its calls draw random numbers" if any(r["drew"] for r in runs) else \
                "the same calls one after another do not give the same result twice" \
                if outcome_of(again) != outcome_of(runs[0]) else \
                "a constructor call fails one after another" if failed else runs
        return self.serial[key]

    def trial(self, selection: int, seed: int) -> str | None:
        """One trial: what the calls together gave that no order gives, ``skipped: why`` when they cannot be
        compared, or None."""
        picks = self.picks(selection)
        serial = self.sequential(picks)
        if isinstance(serial, str):
            return f"skipped: {serial}"
        patience = max(PATIENCE_SECONDS, PATIENCE_FACTOR * max(each["seconds"] for each in serial))
        count = len(picks)
        control = run(count, 1, "control", seed, self.pair, patience, picks=picks)
        if control["died"] or control["hung"]:
            return "skipped: the calls did not end even when they never overlap"
        if control_differs(serial, control) is not None or \
                outcome_of(control) not in [outcome_of(each) for each in serial]:
            return "skipped: threads change the result even when their calls never overlap"
        concurrent = run(count, 1, CONFIG["family"], CONFIG["seed"] + seed, self.pair, patience, picks=picks)
        if (concurrent["hung"] and not deadlocked(concurrent)) or concurrent["died"]:
            return "skipped: the calls waited outside the module's locks"
        if gave_up([*serial, control], concurrent):
            return "skipped: a call gave up waiting for another (its timeout)"
        found = invariant_broken([*serial, control], concurrent) or self.unexplained(serial, concurrent)
        if found is not None:
            self.seen = (picks, serial, concurrent)
        return found

    def unexplained(self, serial: list[dict[str, Any]], other: dict[str, Any]) -> str | None:
        """How ``other`` differs from what each order of its calls gives (None: it is what one of them gives)."""
        results, state = outcome_of(other)
        if any(outcome_of(each) == (results, state) for each in serial):
            return None
        subject: Subject = other["subject"]
        calls = " and ".join(subject.label(index) for index, _ in results)
        orders_ = f"each of the {len(serial)} orders of the {len(results)} calls one after another"
        alike = [each for each in serial if outcome_of(each)[0] == results]
        if not alike:
            # the calls whose result no order gives them, else (each result is some order's, not all together) all
            possible = {index: {dict(outcome_of(each)[0]).get(index) for each in serial} for index, _ in results}
            odd = [(index, text) for index, text in results if text not in possible[index]] or list(results)
            gave = "; ".join(f"{subject.label(index)} {shown_result(text)}, one after another "
                             f"{' or '.join(sorted(shown_result(t) for t in possible[index] if t is not None))}"
                             for index, text in odd)
            return f"results no order gives: {gave[:300]} ({calls} called together, unlike {orders_})"
        names = min((differing(each["state"], state) for each in alike), key=len)
        return (f"a lost update: {calls} called together leave {', '.join(names[:3]) or 'the state'} as no order "
                f"leaves it ({orders_} leaves another)")[:400]

    def report(self) -> dict[str, object]:
        """The confirming trial as the race report shows it: the calls one after another (their first order) and
        together, by what each returned."""
        if self.seen is None:
            return {}
        picks, serial, concurrent = self.seen
        subject: Subject = concurrent["subject"]
        returned = [{subject.label(index): text for index, text in outcome_of(each)[0]} for each in
                    (serial[0], concurrent)]
        picked = {"call_args": repr([subject.chosen(index)[2] for index in picks])[:2000]} \
            if self.pair is None and RECORDED is None else {}  # the argument sets a reproducer calls, in order
        return {"every_order": len(picks), "orders": len(serial), "sequential": returned[0],
                "concurrent": returned[1], "picked": [subject.label(index) for index in picks], **picked}


def why_not(exc: Exception, never: set[tuple[str | None, str]], way: tuple[str | None, str]) -> str:
    """Why a way of calling was not compared, from what its runs raised: a call that never returned one after
    another says which (and the way, added to ``never``, is not tried again); any other exception, its type."""
    if isinstance(exc, NeverFinished):
        never.add(way)
        return str(exc)
    return type(exc).__name__


def analyse(reference: dict[str, Any], started: float) -> dict[str, Any]:
    """The trials of every way of calling the subject ``reference`` was run on: what the race report says."""
    threads, calls, trials = CONFIG["threads"], CONFIG["calls"], CONFIG["trials"]
    budget = CONFIG.get("budget")
    subject: Subject = reference["subject"]
    described = {**subject.describe(), "coroutine": inspect.iscoroutinefunction(subject.target), "processes": PROCESSES,
                 "sequential": dict(reference["results"])}
    try:
        again = run(threads, calls, "sequential", 0, None)
    except NeverFinished as exc:
        return dict(inconclusive=f"the same calls made one after another again do not finish: {exc}", trials=0,
                    **described)
    if again["results"] != reference["results"] or again["state"] != reference["state"]:
        return dict(inconclusive="the same calls made one after another do not give the same result twice",
                    trials=0, **described)
    guarded = guarded_by_callers(subject, subject.name)
    if guarded:
        return dict(inconclusive=f"every call of {subject.name} in its module is made holding a lock "
                    f"(line {', '.join(map(str, guarded[:5]))}): its callers' locking guards it, so it is probed "
                    "through them, not alone", trials=0, guarded=True, **described)
    pairs: list[str | None] = [None, *companions(subject)]
    # alone, with each companion, and — when the calls cycle through several argument sets, so that only the
    # invariants can tell a race — alone with one argument set repeated, whose every order is the same sequence;
    # and where calls differ (several argument sets, a pair), a few of them one a thread, against every order
    several = len(subject.calls) > 1
    # a target that fails alone one after another (a release of what no call holds) is also driven in sessions:
    # each thread calls a companion and then the target (acquires, then releases what it acquired)
    fails = any(text.startswith("raised ") for text in reference["results"])
    ways = [(pair, "") for pair in pairs] + ([(None, "repeated")] if several else []) + \
        [(pair, "sessions") for pair in pairs if pair is not None and fails] + \
        [(pair, "orders") for pair in pairs if pair is not None or several]
    described["ways"] = len(ways)
    sys.setswitchinterval(1e-6)
    skipped: list[str] = []
    never: set[tuple[str | None, str]] = set()  # the ways whose calls never returned one after another
    every: dict[str | None, EveryOrder] = {}
    ended = dict(paired=[p for p in pairs if p], repeated=several, orders=any(h == "orders" for _, h in ways),
                 sessions=any(h == "sessions" for _, h in ways))
    # every way of calling (alone, with each companion) gets its own trials, taken in turns: a check-then-act split
    # over two methods is hit by a fraction of the schedules, as a read-modify-write in one is
    total = trials * len(ways)
    for trial in range(total):
        if trial and isinstance(budget, (int, float)) and _clock() - started > budget:
            return dict(trials=trial, of=total, budget=budget, skipped=list(dict.fromkeys(skipped))[:5], **ended,
                        **described)
        pair, how = ways[trial % len(ways)]
        if (pair, how) in never:  # tried once: its sequential calls would wait as long again
            continue
        repeated, sessions = how == "repeated", how == "sessions"
        way = "one argument set" if repeated else \
            f"{pair or 'alone'}{', every order' if how == 'orders' else ', sessions' if sessions else ''}"
        if how == "orders":
            try:
                found = every.setdefault(pair, EveryOrder(pair, subject)).trial(trial // len(ways), trial)
            except Exception as exc:
                skipped.append(f"{way}: {why_not(exc, never, (pair, how))}"[:100])
                continue
            if found is None or found.startswith("skipped: "):
                if found is not None:
                    skipped.append(f"{way}: {found.removeprefix('skipped: ')}"[:100])
                continue
            if pair is not None:
                described["companion"] = pair
                if "called together" not in found:
                    found = f"{found} ({CONFIG['qualname'].split('.')[-1]} and {pair} called together)"
            return dict(confirmed=found, trials=trial + 1, of=total, **{**described, **every[pair].report()})
        try:
            first = reference if pair is None and not repeated else run(threads, calls, "sequential", 0, pair,
                                                                         repeated=repeated, sessions=sessions)
            if repeated:  # the same calls one after another twice: state that varies from run to run is no race
                serial = [first, run(threads, calls, "sequential", 0, pair, repeated=True)]
            elif first["identical"]:
                serial = [first]
            else:
                named = session_orders(session_slots(threads, calls)) if sessions else orders(threads, calls)
                serial = [first, *(run(threads, calls, order, 0, pair, sessions=sessions) for order in named)]
            # a thread is hung only when it outlives several times what the same calls take one after another (a
            # call that waits on the network or a timeout is slow in every order, not deadlocked)
            patience = max(PATIENCE_SECONDS, PATIENCE_FACTOR * max(each["seconds"] for each in serial))
            control = run(threads, calls, "control", trial, pair, patience, repeated, sessions=sessions)
        except Exception as exc:
            skipped.append(f"{way}: {why_not(exc, never, (pair, how))}"[:100])
            continue
        drew = any(each["drew"] for each in serial)
        if drew:
            # calls that draw random numbers get other draws when they overlap (a draw and its use are two steps):
            # what they leave may differ from every sequential order without a race in the code's state, so only
            # what the same calls leave with other draws too is compared (a count of calls, a bounded sample's size)
            try:
                serial += [run(threads, calls, "sequential", 0, pair, repeated=repeated, draws=number,
                               sessions=sessions) for number in range(1, DRAWS + 1)]
            except Exception as exc:
                skipped.append(f"{way}: {why_not(exc, never, (pair, how))}"[:100])
                continue
        if control["died"]:
            skipped.append(f"{way}: {control['died']} process(es) died before they reported")
            continue
        if (why := control_differs(serial, control, drew)) is not None:
            if pair is None and not repeated:
                return dict(inconclusive=f"{'processes' if PROCESSES else 'threads'} change the result "
                            f"even when their calls never overlap: {why}", trials=trial + 1, **described)
            skipped.append(f"{way}: {why}"[:100])
            continue
        concurrent = run(threads, calls, CONFIG["family"], CONFIG["seed"] + trial, pair, patience, repeated,
                         sessions=sessions)
        if concurrent["hung"] and not deadlocked(concurrent):
            # threads that wait on a queue, a condition, a poll loop (its clock frozen) or the network wait by
            # design, or for calls that never came: that is no race, and what the others did is not comparable
            who = "process(es)" if PROCESSES else "thread(s)"
            skipped.append(f"{way}: {concurrent['hung']} {who} waited outside the module's locks"[:100])
            continue
        if concurrent["died"]:
            # a process killed (out of memory: 8 at once hold more than one) or ended by the code told nothing of
            # its calls: what the others did is not comparable
            skipped.append(f"{way}: {concurrent['died']} process(es) died before they reported")
            continue
        if gave_up([*serial, control], concurrent):
            skipped.append(f"{way}: a call gave up waiting for another (its timeout)")
            continue
        found = compare([*serial, control], concurrent, drew)
        if found is not None:
            described["sequential"] = dict(first["results"])  # the same calls one after another, as compared
            if sessions:
                found = f"{found} (each thread calling {pair} and then {CONFIG['qualname'].split('.')[-1]})"
                described["companion"], described["sessions"] = pair, True
            elif pair is not None:
                found = f"{found} ({CONFIG['qualname'].split('.')[-1]} and {pair} called together)"
                described["companion"] = pair
            if repeated:
                found = f"{found} (every call with one argument set)"
                described["call_args"] = first["subject"].describe()["call_args"]
            return dict(confirmed=found, trials=trial + 1, of=total, concurrent=dict(concurrent["results"]),
                        **described)
    return dict(trials=total, of=total, skipped=list(dict.fromkeys(skipped))[:5], **ended, **described)


def recorded(started: float) -> dict[str, Any]:
    """The probe again on the object the project's tests build (a receiver whose state only the tests' setup
    gives: a map with rules, a console with output recorded), for when the subject built from literals shows no
    race: the trials' report, or why there is none (``note``)."""
    global RECORDED
    budget = CONFIG.get("budget")
    left = budget - (_clock() - started) if isinstance(budget, (int, float)) else 3 * RECORD_SECONDS
    if left < RECORD_MIN_SECONDS:
        return {"note": "not tried: the probe's time budget ended"}
    found = record(min(RECORD_SECONDS, left / 2))
    if isinstance(found, str):
        return {"note": found}
    RECORDED = found
    try:
        reference = run(CONFIG["threads"], CONFIG["calls"], "sequential", 0, None)
    except Exception as exc:
        return {"note": f"the calls {found.test} made do not load again ({type(exc).__name__})",
                "recorded_from": found.test}
    return analyse(reference, started)


def main() -> None:
    started = _clock()
    freeze_clocks()
    try:
        reference = run(CONFIG["threads"], CONFIG["calls"], "sequential", 0, None)
    except BaseException as exc:
        emit("import", sightings=WATCH.take(), **failure(exc))
        return
    emit("import", ok=True, sightings=WATCH.take())
    report = analyse(reference, started)
    if ALONE:  # the changed module was imported without its packages' __init__
        report["alone"] = ALONE
    # reported before the project's tests run in this process (one that ends the process loses nothing of it)
    emit("race", ok=True, **report)
    # (a helper its callers' locking guards is no less guarded on a recorded object)
    if not report.get("confirmed") and not report.get("guarded") and not isinstance(reference["subject"].owner, type):
        emit("recorded", ok=True, **recorded(started))


main()
