"""Concurrency probes: confirm a race in changed code by running it, and the short script that reproduces it.

What: an ``unlocked-shared-state`` hypothesis (a function or method that reads, modifies and writes module, class
or instance state without a lock) is probed by the race program (``checks/red/probe_program/race.py``). It calls
the changed callable ``THREADS × CALLS`` times three ways — one after another (the reference), from threads that
never overlap (the control), and from threads released together by a barrier while a trace hook on the changed
module yields at every line or opcode under a tiny switch interval — for at most ``TRIALS`` seeded trials per way
of calling it (alone, alone with one argument set repeated when the tests give several, and paired with each
method touching the same state; where calls differ, also 3 of them, one a thread, against each of their 6 orders
one after another), within a share of the probe's time, with
the clocks frozen. :func:`judge_race` confirms when a concurrent run gives what no sequential order gives: more
successes than the limit allows, other results, another final state, or an exception; and only when the control
gives the reference (so thread-local state or thread ids are not taken for a race). When the subject built
from literals confirms nothing, the probe records the one the project's tests build and tries again (its second
report, ``recorded``; :func:`with_recorded` picks the one to judge).
Why: CPython's GIL almost never switches between a check and its act, so a limiter without its lock passes every
single-threaded test and most concurrent ones; forcing the switches finds the interleaving the language allows.
Example: ``RateLimiter.allow`` without its lock, limit 3, 8 threads × 4 calls → 24 calls allowed, 3 one after
another → confirmed, with :func:`reproducer` as evidence.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from checks import pyast
from checks.red.hypotheses import Attack
from checks.red.shared_state import FILE_PREFIX

THREADS = 8
CALLS = 4
TRIALS = 5  # per way of calling the target: alone, and with each companion method
BUDGET_SHARE = 0.6
MAX_EVERY_ORDER = 4  # the most calls a report may say it tried in every order (the program tries 3)
PATIENCE = 5.0  # threads still running this long (or 4 × the calls' sequential time, if longer) are hung
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
QUALNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")
DIRECTORY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def race_config(attack: Attack, nonce: str, seed: int, timeout_seconds: float | None = None) -> dict[str, Any]:
    """The race program's configuration. With the probe's ``timeout_seconds``, the program starts no trial after
    ``BUDGET_SHARE`` of it (a slow target reports the trials it ran rather than nothing)."""
    target = attack.hypothesis.target
    if target is None:
        raise ValueError(f"hypothesis {attack.hypothesis.key} has no callable target to probe")
    budget = None if timeout_seconds is None else round(timeout_seconds * BUDGET_SHARE, 3)
    return {"nonce": nonce, "path": target.path, "qualname": target.qualname, "is_method": target.is_method,
            "family": attack.family, "threads": THREADS, "calls": CALLS, "trials": TRIALS, "seed": seed % 1_000_003,
            "budget": budget, "patience": PATIENCE, "processes": attack.hypothesis.sink.startswith(FILE_PREFIX)}


def _literal(text: object) -> str | None:
    """``text`` again if it is a plain literal (the probe's output comes from a process hostile code shares)."""
    if not isinstance(text, str):
        return None
    try:
        return repr(ast.literal_eval(pyast.parse_expression(text)))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def module_of(path: str) -> str:
    """The changed file's module name, as the probe imports it: below the first ``src`` directory on its path (a
    src layout, also in one package of a monorepo), else below the repository's root."""
    parts = path.split("/")
    if "src" in parts[:-1]:
        path = "/".join(parts[parts.index("src") + 1:])
    name = path[:-3].replace("/", ".") if path.endswith(".py") else path
    return name.removesuffix(".__init__")


def reproducer(attack: Attack, data: dict[str, Any]) -> str | None:
    """A short script that shows the race outside LogoMesh: the same calls one after another, then from threads
    (for a file: processes, each run in a fresh directory, the files left shown) released together while a trace
    hook yields in the changed module. None when the probe's report is not plain,
    for a coroutine (its race is shown by the effect: tasks gathered together), for a pair of methods and for a
    metaclass's method (the effect names what was called)."""
    target = attack.hypothesis.target
    calls = _literal(data.get("call_args"))
    init = _literal(data.get("init_args"))
    module = module_of(target.path) if target else ""
    receiver = data.get("receiver")
    if target is None or calls is None or init is None or data.get("coroutine") or data.get("companion") \
            or receiver not in ("init", "new", "function") or not MODULE_NAME.fullmatch(module) \
            or not QUALNAME.fullmatch(target.qualname) or len(calls) + len(init) > 1000:
        return None
    if target.is_method:
        owner, method = target.qualname.split(".")
        if method.startswith("__") and not method.endswith("__") and owner.strip("_"):
            method = f"_{owner.lstrip('_')}{method}"  # outside its class a private method goes by its mangled name
        build = (f"target.{owner}" if data.get("constructs") is True else  # each call builds an object
                 f"target.{owner}.__new__(target.{owner}).{method}" if receiver == "new" else
                 f"(lambda a, k: target.{owner}(*a, **k))(*{init}).{method}")
    else:
        build = f"target.{target.qualname}"
    opcodes = attack.family == "opcode-yield"
    processes = data.get("processes") is True
    every = _every_order(data)
    if every and processes:
        return None
    runner = (_ORDERS_RUN if every else _PROCESSES_RUN if processes else _THREADS_RUN).replace(
        "THREADS", str(THREADS)).replace("CALLS_EACH", str(CALLS)).replace("TOTAL", str(THREADS * CALLS)).replace(
        "BUILD", build)
    drivers = "processes" if processes else "threads"
    shape = (f"{every} threads × 1 call, each order of the calls one after another, then together" if every else
             f"{THREADS} {drivers} × {CALLS} calls, one after another, then\n# together")
    modules = "itertools, re, " if every else ""
    alone = _alone(data.get("alone"))
    if alone is None:
        return None
    load = f"import {module} as target" if not alone else (
        "import importlib.machinery, importlib.util\n"
        f"for package, directory in {alone!r}:  # its packages without their __init__, which fails here\n"
        "    spec = importlib.machinery.ModuleSpec(package, None, is_package=True)\n"
        "    spec.submodule_search_locations = [directory]\n"
        "    sys.modules[package] = importlib.util.module_from_spec(spec)\n"
        f"target = importlib.import_module({module!r})")
    return f'''# {target.qualname} ({target.path}): {shape}
import collections, importlib, {modules}sys, threading, time{", json, os, tempfile" if processes else ""}
{load}

CALLS = {calls}

def yielder(frame, event, arg):  # yield at every {"opcode" if opcodes else "line"} of the changed module
    if frame.f_code.co_filename != target.__file__:
        return None
    frame.f_trace_opcodes = {opcodes}
    def local(frame, event, arg):
        time.sleep(1e-5)
        return local
    return local

class Raised(str):
    __repr__ = str.__str__

def one(call, index):
    args, kwargs = CALLS[index % len(CALLS)]
    try:
        return call(*args, **kwargs)
    except Exception as exc:
        return Raised("raised " + type(exc).__name__)

def shown(values):  # what the calls returned, read once they are all over
    return collections.Counter(repr(value) for value in values)
{runner}'''


def _alone(value: object) -> list[tuple[str, str]] | None:
    """The packages the probe imported bare (``[]`` for none), or None when the report's list is not plain."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 20:
        return None
    pairs = [tuple(pair) for pair in value if isinstance(pair, list | tuple) and len(pair) == 2]
    if len(pairs) != len(value) or not all(
            isinstance(name, str) and isinstance(directory, str) and MODULE_NAME.fullmatch(name)
            and DIRECTORY.fullmatch(directory) and ".." not in directory.split("/") for name, directory in pairs):
        return None
    return [(str(name), str(directory)) for name, directory in pairs]


_THREADS_RUN = '''
def run(together):
    importlib.reload(target)
    call = BUILD
    if not together:
        return shown([one(call, i) for i in range(TOTAL)])
    results, barrier, installing = [], threading.Barrier(THREADS), threading.Lock()
    def worker(number):
        barrier.wait()
        with installing:
            sys.settrace(yielder)
        for i in range(CALLS_EACH):
            results.append(one(call, i * THREADS + number))
        with installing:
            sys.settrace(None)
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return shown(results)

sys.setswitchinterval(1e-6)
print("one after another:", dict(sorted(run(False).items())))
print("together:         ", dict(sorted(run(True).items())))
'''
_ORDERS_RUN = '''
def picture(value):  # a value as compared: containers as sorted multisets, no addresses
    if isinstance(value, dict):
        return sorted((repr(k), picture(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset, collections.deque)):
        return sorted(repr(picture(v)) for v in value)
    return re.sub(" at 0x[0-9a-f]+", "", repr(value))

def state(call):  # what the calls share: the receiver's and its class's values, or the module's
    holder = call if isinstance(call, type) else getattr(call, "__self__", None)
    values = vars(target) if holder is None else vars(holder) if isinstance(holder, type) else \\
        {**vars(type(holder)), **getattr(holder, "__dict__", {})}
    return picture({k: v for k, v in values.items() if not k.startswith("__") and not callable(v)})

def run(order, together):
    importlib.reload(target)
    call = BUILD
    results = {}
    if not together:
        for index in order:
            results[index] = one(call, index)
    else:
        barrier, installing = threading.Barrier(len(CALLS)), threading.Lock()
        def worker(index):
            barrier.wait()
            with installing:
                sys.settrace(yielder)
            results[index] = one(call, index)
            with installing:
                sys.settrace(None)
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(len(CALLS))]
        [t.start() for t in threads]
        [t.join() for t in threads]
    return repr(sorted((i, repr(r)) for i, r in results.items())), repr(state(call))

orders = {run(order, False) for order in itertools.permutations(range(len(CALLS)))}
print(f"one after another, in each order: {len(orders)} outcome(s)")
for each in sorted(orders):
    print("  ", each)
sys.setswitchinterval(1e-6)
for attempt in range(50):
    seen = run(range(len(CALLS)), True)
    if seen not in orders:
        print(f"together (attempt {attempt + 1}), as no order leaves it:", seen)
        break
else:
    print("together: 50 attempts, each what some order leaves")
'''
_PROCESSES_RUN = '''
def files():  # what the calls left in the run's directory
    return {name: open(name, "rb").read(200).decode(errors="replace") for name in sorted(os.listdir("."))}

def run(together):
    os.chdir(tempfile.mkdtemp())
    importlib.reload(target)
    call = BUILD
    if not together:
        return {**shown([one(call, i) for i in range(TOTAL)]), "files": files()}
    outputs = tempfile.mkdtemp()
    gate, release = os.pipe()
    for number in range(THREADS):
        if os.fork() == 0:
            os.read(gate, 1)
            sys.settrace(yielder)
            mine = [repr(one(call, i * THREADS + number)) for i in range(CALLS_EACH)]
            sys.settrace(None)
            with open(os.path.join(outputs, str(number)), "w") as out:
                json.dump(mine, out)
            os._exit(0)
    os.write(release, b"x" * THREADS)
    for number in range(THREADS):
        os.wait()
    returned = [r for n in range(THREADS) for r in json.load(open(os.path.join(outputs, str(n))))]
    return {**collections.Counter(returned), "files": files()}

sys.setswitchinterval(1e-6)
print("one after another:", dict(sorted(run(False).items())))
print("together:         ", dict(sorted(run(True).items())))
'''


def with_recorded(data: dict[str, Any] | None, recorded: dict[str, Any] | None) -> dict[str, Any] | None:
    """The race report to judge, from the probe's two: the subject built from literals (``race``), and — when that
    one confirmed nothing — the subject a test of the project built (``recorded``). The recorded one when it
    confirms a race, else the first, with what the recorded subject showed (``recorded``: its test and summary)."""
    if data is None or data.get("confirmed") or not isinstance(recorded, dict):
        return data
    test = recorded.get("recorded_from")
    test = test[:200] if isinstance(test, str) else None
    found = recorded.get("confirmed")
    if isinstance(found, str) and found and test:
        return recorded
    if isinstance(recorded.get("note"), str):
        showed = recorded["note"][:200]
    elif isinstance(recorded.get("inconclusive"), str):
        showed = f"inconclusive: {recorded['inconclusive']}"[:200]
    else:
        showed = f"no race seen in {recorded.get('trials')} trial(s)"
    return {**data, "recorded": {"test": test, "showed": showed}}


def judge_race(data: dict[str, Any] | None) -> tuple[bool, str]:
    """Whether the race probe's report confirms a race, and what it saw."""
    if data is None:
        return False, "the race probe did not report"
    drivers = f"{THREADS} {'processes' if data.get('processes') is True else 'threads'} × {CALLS} calls"
    every = _every_order(data)
    if every:
        drivers = (f"{every} {'processes' if data.get('processes') is True else 'threads'} × 1 call, against each "
                   f"of the {math.factorial(every)} orders of the calls one after another")
    test = data.get("recorded_from")
    if data.get("receiver") == "recorded" and isinstance(test, str):
        drivers += f" on the object {test[:200]} builds"
    found = data.get("confirmed")
    trials = data.get("trials")
    total = data.get("of", TRIALS)
    if isinstance(found, str) and found:
        seen = f"one after another: {data.get('sequential')}, together: {data.get('concurrent')}"
        return True, f"{found} ({drivers}, trial {trials} of {total}; {seen})"[:600]
    effect = _unconfirmed(data, drivers, trials, total)
    recorded = data.get("recorded")
    if isinstance(recorded, dict):
        test = recorded.get("test")
        effect += f"; on the object the tests build{f' ({test})' if test else ''}: {recorded.get('showed')}"
    return False, effect[:700]


def _every_order(data: dict[str, Any]) -> int:
    """How many calls a confirming trial made against every order of them (0: the trial was ``THREADS × CALLS``)."""
    every = data.get("every_order")
    return every if isinstance(every, int) and not isinstance(every, bool) and 1 < every <= MAX_EVERY_ORDER else 0


def _unconfirmed(data: dict[str, Any], drivers: str, trials: object, total: object) -> str:
    """What a race report that confirms nothing saw: why it is inconclusive, or the ways and trials it ran."""
    if isinstance(data.get("inconclusive"), str):
        return f"inconclusive: {data['inconclusive']}"[:400]
    paired = [str(p) for p in data.get("paired") or []][:5]
    alone = ["alone", *(["alone with one argument set repeated"] if data.get("repeated") is True else [])]
    named = ", ".join(alone) + (" and with " + ", ".join(paired) if paired else "")
    every = (", each thread calling a companion, then the target" if data.get("sessions") is True else "") + \
        (", and 3 calls that differ against each of their orders" if data.get("orders") is True else "")
    ways = f": {named}{every}, {TRIALS} each in turn" if paired or len(alone) > 1 else ""
    skipped = [str(x) for x in data.get("skipped") or []]
    if skipped:
        ways += f"; {len(skipped)} way(s) not compared ({'; '.join(skipped[:2])})"
    if "budget" in data and trials != total:
        return (f"no race seen in {trials} of {total} trial(s) of {drivers} with "
                f"forced interleavings{ways}: the probe's time budget ({data['budget']} s) ended the rest")[:400]
    return f"no race seen in {trials} trial(s) of {drivers} with forced interleavings{ways}"[:400]
