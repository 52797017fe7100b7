"""Race corpus: real race fixes from public Python projects, each reviewed as the code before its fix and after it.

Every case is a merged commit that adds a lock around shared state (SHAs pinned; the projects' git mirrors are
fetched with ``fetch`` into ``/work/.mirror/<owner>+<name>``). For each case the bench finds the functions and
methods in which the fix added a lock (``with …lock…:`` / ``.acquire()`` on an added line), then, in a copy of
the project's tree at the fix's parent and at the fix:

- **static**: whether the Red Agent's shared-state pass raises a race hypothesis on that function before the fix
  (with the change saying the code runs concurrently);
- **probe**: the race probe exactly as the Red Agent sends it (both schedules, ``opcode-yield`` then
  ``line-yield``), run with this Python in the tree's copy by the local probe runner, judged by
  :func:`checks.red.probes.judge_probe`.

A case is confirmed when the probe confirms a race in one of its functions before the fix; a fixed version must
give none. ``--precision`` instead counts the race hypotheses on the twenty honest merged PRs of
``tests/realworld/fixtures`` (as written, and as if each said its code runs concurrently), and probes every
function and method each PR changes, hypothesis or not: an honest PR must give no confirmed race.
Each tree gets the modules its build generates (a version module) and the data files its release holds and git
does not (as the sandbox fills them) before it is probed. The cases after the first fifteen were chosen by the rule
written above them in ``CASES``; a fix that is not on its project's default branch (a pull request's commit never
merged) is left out of the totals, which are given for the merged cases and for those fixed in 2019 or later.
Usage: ``PYTHONPATH=$PWD .venv/bin/python bench/race_corpus.py [--mirrors DIR] [--json OUT] [--precision]
[--fixes SHA-PREFIX…]``.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import configparser
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checks.detectives.doc_analyst import is_test_path
from checks.red.hypotheses import RACE_KIND, Attack, Hypothesis, Target
from checks.red.payloads import families
from checks.red.probes import build_probe, judge_probe, probe_nonce
from checks.red.shared_state import takes_lock
from checks.red.taint import TaintPass
from sandbox.environment import plan_environment
from tests.red.local_sandbox import LocalProbeSandbox

SEED = 20260201
PROBE_TIMEOUT = 120.0
ENVS = Path(tempfile.gettempdir()) / "lm-race-envs"
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
CLASSIFIER = re.compile(r"Programming Language :: Python :: 3\.(\d+)")
# the interpreters the race probe runs on (it needs Python 3.9 or newer), with the year each was released
PROBE_PYTHONS = {9: 2020, 10: 2021, 11: 2022, 12: 2023, 13: 2024}


@dataclass(frozen=True)
class Case:
    repo: str  # owner/name on GitHub
    fix: str  # the merged commit that adds the lock
    licence: str
    what: str


CASES = (
    Case("pallets/jinja", "000b49193cad77be48020a6ad2195584e4a4ae0e",
         "BSD-3-Clause", "LRUCache made thread safe"),
    Case("urllib3/urllib3", "63b29d3945ffd0f3059eaf4518146744d7b57e8a",
         "MIT", "locking added to RecentlyUsedContainer"),
    Case("urllib3/urllib3", "29a57df96f64001dd1fda49eec1cca5d58671df7",
         "MIT", "race between pools.get and pools.set in PoolManager"),
    Case("dateutil/dateutil", "6e92f2111589ab061b66bd332dcb4a33a58acb84",
         "Apache-2.0 OR BSD-3-Clause", "lock around tz strong cache updates"),
    Case("dateutil/dateutil", "ca5030bd458f5114d7aea14cd863b23bc3723793",
         "Apache-2.0 OR BSD-3-Clause", "tzutc/tzoffset cache protected by a lock"),
    Case("python-babel/babel", "33a90579a8691ae9481c9c3f5572c6f71fde3774",
         "BSD-3-Clause", "RLock around the Locale cache"),
    Case("pallets/werkzeug", "48037c155b8f0ae74a5f906b38fec170b9b78e69",
         "BSD-3-Clause", "locks for the update method of routing Map"),
    Case("psf/requests", "b4556066874365ded8a8cf2cb04942997916468d",
         "Apache-2.0", "race between closing a pool and returning a connection"),
    Case("tqdm/tqdm", "86dfc619a5be3901a3917762af027354d4c78bc1",
         "MPL-2.0 AND MIT", "race for tqdm._instances between __init__ and others"),
    Case("Textualize/rich", "a8736e22df9434112c5d5a842b20151cd979e399",
         "MIT", "thread safety"),
    Case("Textualize/rich", "07d51ffc1aee6f16bd2e5a25b4e82850fb9ed778",
         "MIT", "race condition in render hooks and Live"),
    Case("Textualize/rich", "23497ed2303d52d72caf0d15749cbde8b89c9507",
         "MIT", "race condition in Console.render_lines"),
    Case("encode/httpx", "a05ba2e9148c3f74c80c68a727b7e52b3d751c8c",
         "BSD-3-Clause", "race condition on stream.read"),
    Case("pallets/flask", "5d8e35653fca0d7ee01519d556c7851089de82ea",
         "BSD-3-Clause", "lazy loading of the app behind a lock"),
    Case("python-trio/trio", "4c2b77026551dfd0a0457a5f72ba6b379dd10778",
         "MIT OR Apache-2.0", "worker timeout race in the thread cache"),
    # the widening rule: every non-merge commit since 2019 on the default branch of the mirrored projects whose
    # diff adds a lock (``Lock()``/``RLock()``, ``with …lock``, ``.acquire()``) to non-test Python code and whose
    # message names a race, thread safety, atomicity or locking (not a deadlock, a leak, a removed lock or a new
    # feature), not already above
    Case("alisaifee/limits", "f7d1eef524a55301956a21a07853423632605b80",
         "MIT", "make memory storage thread safe"),
    Case("alisaifee/limits", "f29a48a5aeef11d3e19dbd6f8cf03b78d77e3a21",
         "MIT", "locks for the in-memory rate limiter"),
    Case("tox-dev/filelock", "a833dd961e4a1ee569e42c10ca305cd088e14c1b",
         "MIT", "serialise singleton construction in FileLockMeta"),
    Case("tox-dev/filelock", "897930fb4c10f5070e91e4ae95692bcae151df49",
         "MIT", "serialise read/write release rollback against a concurrent acquire"),
    Case("tox-dev/filelock", "3b1511281a775118f79ad29edbf82989c8c9e106",
         "MIT", "make async cancellation atomic"),
    Case("tox-dev/filelock", "e266937a96be84181c8e7464ad1f567b70cf99b6",
         "MIT", "ENOENT race on FUSE/NFS during acquire"),
    Case("urllib3/urllib3", "8c8e26dab401121e9fccc8e8e8958609ccb045f5",
         "MIT", "H2Connection hidden inside a locked object"),
    Case("pytest-dev/pytest-xdist", "9788f12e9e558e813c667df42ce2f33c09c35758",
         "MIT", "make the steal command atomic"),
    Case("python-trio/trio", "b172fc335c542828a19b3e2959810dad5741ce38",
         "MIT OR Apache-2.0", "lock so that several tasks can wait() on a process"),
    Case("encode/httpx", "56afde1f9f84311b9582b413b6e70bb9973e5921",
         "BSD-3-Clause", "lock around stream.write and stream.close"),
    # the same rule over the projects mirrored next (loguru, APScheduler, OpenTelemetry's Python SDK,
    # python-zeroconf, huggingface_hub, sentry-python, google-auth, botocore, blinker)
    Case("Delgan/loguru", "8f218c642ba38ab0c3449fbd4fc9750f533b41cc",
         "MIT", "thread safety of enable()/disable() while logging"),
    Case("Delgan/loguru", "2bc0cda1a0ca069f83ab6eb223b0f62770301f15",
         "MIT", "race permitting a write on a stopped handler"),
    Case("agronholm/apscheduler", "0a6b0f683edee8bf22d85dc655ad61a8285fd312",
         "MIT", "subscriptions of the synchronous local event broker guarded by a lock"),
    Case("open-telemetry/opentelemetry-python", "2578b37177afe1c9f19123acd400e9c06612da6d",
         "Apache-2.0", "Counter and MinMaxSumCount aggregators made thread safe"),
    Case("open-telemetry/opentelemetry-python", "78672025f7fb49737356e5c50f7cb33992a3da55",
         "Apache-2.0", "race in set_tracer_provider()"),
    Case("open-telemetry/opentelemetry-python", "87160d0920472303e6edb864ca8a642e4239169c",
         "Apache-2.0", "instrument creation race"),
    Case("open-telemetry/opentelemetry-python", "cd298d545dfdd04a16906e934a0f8b31bf834090",
         "Apache-2.0", "FixedSizeExemplarReservoirABC methods made thread safe"),
    Case("python-zeroconf/python-zeroconf", "24a06191ea35469948d12124a07429207b3c1b3b",
         "LGPL-2.1-or-later", "a listener gets a message before the lock is created"),
    Case("huggingface/huggingface_hub", "36ad912feeba9c704c7fac1999ec586b8c0e194a",
         "Apache-2.0", "thread safety when fetching a user secret in Google Colab"),
    Case("huggingface/huggingface_hub", "ec8418fe13a028e6cd44356ffba65a65003eee07",
         "Apache-2.0", "file lock scope widened for concurrent downloads"),
)
# The held-out set: the same rule (``bench/race_candidates.py`` lists what its words pick) over projects no change
# of the probe was made looking at — prometheus/client_python, redis-py, paho-mqtt, fsspec, structlog, watchdog,
# s3transfer, python-diskcache, websocket-client, datadogpy, mako, cachetools, stripe-python, the MongoDB driver,
# kombu, gunicorn, tornado, jsonschema —, each candidate kept or left out by reading its message before any was
# probed: left out are a lock taken for less time (redis-py 32a5840), a lock attribute a class lacked (redis-py
# 4807908), a re-entrant lock against a deadlock (client_python 0014e97), non-blocking sockets (datadogpy
# 689eb20), fork support, and features behind a lock.
HELD_OUT = (
    Case("redis/redis-py", "4287963d1e51e0bd9b1b78d78981d67e2c0213db",
         "MIT", "better thread-safety for ConnectionPool"),
    Case("redis/redis-py", "688c2b0aa78c6aaae3b8dc932e217f3adf0f553a",
         "MIT", "async client safety when used as an async context manager"),
    Case("redis/redis-py", "f9a7a35b86bdfd7136641e6b9b001fbe5f793b9f",
         "MIT", "locking logic of NodesManager"),
    Case("fsspec/filesystem_spec", "918451a300667f1032e7c794f710a827581d99ba",
         "BSD-3-Clause", "Cached metaclass instantiation thread-safe"),
    Case("DataDog/datadogpy", "e7364bdcaa480f84438defc8dba66286ed93cff2",
         "BSD-3-Clause", "threadstats MetricsAggregator thread-safe"),
    Case("DataDog/datadogpy", "33f727cc51d637860a2a46677bf7151c8feb10fa",
         "BSD-3-Clause", "statsd buffer operation thread-safety"),
    Case("DataDog/datadogpy", "a058b90e7bc0b89feb65cf541d4a83c09ebd8040",
         "BSD-3-Clause", "a lock against threading issues in the statsd socket"),
    Case("mongodb/mongo-python-driver", "7099e1be8bbbb9520bf58378f269657c2a1961ad",
         "Apache-2.0", "race conditions in SDAM error handling"),
    Case("mongodb/mongo-python-driver", "83578dc35fb97a94684bab36c5b2572e99642c65",
         "Apache-2.0", "gevent.Timeout race losing a socket semaphore count"),
    Case("celery/kombu", "8f1de37a08318d388a048341ddca12af30019bf3",
         "BSD-3-Clause", "SQLAlchemy Channel init thread-safe"),
    Case("celery/kombu", "560518287ab672fff3ca98107fb6bded456f6a01",
         "BSD-3-Clause", "a thread-safe cached_property"),
    Case("celery/kombu", "aab2588c4ab2f8fd67c6d1c6be3243504b028504",
         "BSD-3-Clause", "set of ready tasks protected by a lock"),
    Case("celery/kombu", "3ad075a536d177170a7a5d7b04d81e94bd5bf404",
         "BSD-3-Clause", "a lock on cached_property if not present"),
    Case("prometheus/client_python", "c49e55a244acde7d4879b7fba2a130019656fb35",
         "Apache-2.0", "a race condition in restricted registry collection"),
)
# fixes committed from this year on are the modern subset (Python 3.8-era code or newer)
MODERN_SINCE = 2019


def git(mirror: Path, *args: str) -> str:
    """The output of a git command on a mirror (bytes that are not UTF-8, in an old commit's message, replaced)."""
    return subprocess.run(["git", "--git-dir", str(mirror), *args], capture_output=True, text=True,
                          check=True, errors="replace").stdout


def mirror_of(root: Path, repo: str) -> Path:
    base = root / repo.replace("/", "+")
    return base / "repo" if (base / "repo").is_dir() else base


def added_lines(mirror: Path, fix: str, path: str) -> set[int]:
    diff = git(mirror, "show", "--format=", "-U0", fix, "--", path)
    lines: set[int] = set()
    for line in diff.splitlines():
        if line.startswith("@@"):
            plus = line.split("+", 1)[1].split(" ", 1)[0]
            start, _, count = plus.partition(",")
            lines.update(range(int(start), int(start) + int(count or "1")))
    return lines


def called_names(node: ast.AST) -> set[str]:
    """The names the calls under ``node`` call: ``f(…)`` and ``x.f(…)`` both name ``f``."""
    return {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)}


def defined_functions(sources: Sequence[str]) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The functions and methods the sources define, by their own names."""
    functions: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for source in sources:
        try:
            functions += [(qualname.split(".")[-1], func)
                          for func, _is_method, qualname in TaintPass._functions(ast.parse(source))]
        except SyntaxError:
            continue
    return functions


def locking_names(fixed: Sequence[str], before: Sequence[str]) -> set[str]:
    """The names of the helpers the fix adds to its files (functions and methods no file of it defined before)
    that take a lock, or call such a helper (``Once.do_once``, and ``_set_tracer_provider`` that calls it)."""
    old = {name for name, _func in defined_functions(before)}
    functions = [(name, func) for name, func in defined_functions(fixed) if name not in old]
    locking = {name for name, func in functions if takes_lock(func)}
    while grown := {name for name, func in functions if name not in locking and called_names(func) & locking}:
        locking |= grown
    return locking


def locked_targets(path: str, source: str, added: set[int], locking: set[str] | None = None) -> list[Target]:
    """The functions and methods of the fixed file in which the fix added the lock, or added a call of a function
    of the fix's files that takes one (``locking``, see :func:`locking_names`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for func, is_method, qualname in TaintPass._functions(tree):
        span = set(range(func.lineno, (func.end_lineno or func.lineno) + 1))
        locking_nodes = [n for n in ast.walk(func) if isinstance(n, ast.With | ast.AsyncWith | ast.Call)
                         and getattr(n, "lineno", 0) in added]
        calls_lock = any(isinstance(n, ast.Call) and called_names(n) & ((locking or set()) - {qualname.split(".")[-1]})
                         for n in locking_nodes)
        if span & added and locking_nodes and (takes_lock(func) or calls_lock):
            args = [a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)]
            params = tuple(args[1:] if is_method and args and args[0] in ("self", "cls") else args)
            found.append(Target(path=path, qualname=qualname, params=params, is_method=is_method))
    return found


def static_hypothesis(path: str, source: str, qualname: str) -> str | None:
    """The state the static pass names for ``qualname`` (``self.n``, ``file:self.path``), or None."""
    return next((h.sink for h in TaintPass(path, source, concurrent=True).run()
                 if h.kind == RACE_KIND and h.target is not None and h.target.qualname == qualname), None)


async def probe(tree: Path, target: Target, python: str, sink: str | None = None) -> dict[str, Any]:
    """The race probe of ``target`` as a review runs it: from processes where the static pass names a file."""
    sandbox = LocalProbeSandbox(tree, python)
    hyp = Hypothesis(kind=RACE_KIND, path=target.path, line=1, sink=sink or "corpus", detail="corpus", target=target)
    tried = []
    for family in families(RACE_KIND):
        attack = Attack(hyp, "*", family.name)
        nonce = probe_nonce(SEED, attack)
        result = await sandbox.run_probe(build_probe(attack, nonce, SEED, PROBE_TIMEOUT), PROBE_TIMEOUT)
        outcome = judge_probe(attack, nonce, result)
        tried.append({"family": family.name, "confirmed": outcome.confirmed, "effect": outcome.effect[:300]})
        if outcome.confirmed:
            break
    return {"confirmed": any(t["confirmed"] for t in tried), "tried": tried}


def declared_dependencies(tree: Path) -> list[str]:
    """The names of the runtime dependencies the project declares at this commit (``install_requires`` in
    setup.py or setup.cfg, ``[project] dependencies``, poetry's dependencies), without versions: the project's
    old pins do not install on this Python, and its test environment is what a review's sandbox would have
    installed."""
    names: list[str] = []
    setup = tree / "setup.py"
    if setup.is_file():
        try:
            parsed = ast.parse(setup.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            parsed = ast.Module(body=[], type_ignores=[])
        lists = {t.id: n.value for n in ast.walk(parsed) if isinstance(n, ast.Assign)
                 for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(parsed):
            if isinstance(node, ast.keyword) and node.arg == "install_requires":
                value = lists.get(node.value.id, node.value) if isinstance(node.value, ast.Name) else node.value
                try:
                    names += [str(r) for r in ast.literal_eval(value)]
                except (ValueError, TypeError, SyntaxError):
                    names += requirement_files(tree, value)
    config = configparser.ConfigParser()
    try:
        config.read(tree / "setup.cfg", encoding="utf-8")
    except configparser.Error:
        config.clear()
    if config.has_option("options", "install_requires"):
        names += [line for line in config.get("options", "install_requires").splitlines() if line.strip()]
    pyproject = tree / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace"))
        except tomllib.TOMLDecodeError:
            data = {}
        names += [str(r) for r in data.get("project", {}).get("dependencies", [])]
        names += [k for k in data.get("tool", {}).get("poetry", {}).get("dependencies", {}) if k != "python"]
    found = []
    for requirement in names:
        if (match := REQUIREMENT_NAME.match(requirement)) and match.group(1).lower() not in found:
            found.append(match.group(1).lower())
    return sorted(found)


@functools.cache
def tests_dependencies(tree: Path) -> list[str]:
    """pytest, its plugins and the libraries the project's test files import, among what its test environment
    declares (test extras, groups and requirement files, as the sandbox plans them:
    :func:`sandbox.environment.plan_environment`): the race probe runs the tests to record the objects they build.
    Linters, docs and release tools, and the build backend, are left out."""

    def read(path: str) -> str | None:
        file = tree / path
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None

    files = [p for p in tree.rglob("*") if p.is_file() and ".git" not in p.parts]
    plan = plan_environment(read, [str(p.relative_to(tree)) for p in files], ("3.13", "3.12", "3.11", "3.10", "3.9"))
    imported: set[str] = set()
    for file in files:
        if file.suffix == ".py" and is_test_path(str(file.relative_to(tree))):
            try:
                tree_ = ast.parse(file.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree_):
                if isinstance(node, ast.Import):
                    imported |= {a.name.split(".")[0].lower() for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    imported.add(node.module.split(".")[0].lower())
    found = ["pytest"]
    for requirement in plan.requirements:
        match = REQUIREMENT_NAME.match(requirement)
        name = match.group(1).lower() if match else ""
        if name and name not in found and (name.startswith("pytest") or name.replace("-", "_") in imported):
            found.append(name)
    return found


def requirement_files(tree: Path, value: ast.AST) -> list[str]:
    """The requirements of the files an ``install_requires`` expression reads (``get_requirements("main.txt")``):
    each string in it naming a file of the tree, or of its ``requirements/`` folder; comments, options and
    includes left out."""
    found: list[str] = []
    for node in ast.walk(value):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        for file in (tree / node.value, tree / "requirements" / node.value):
            if node.value and file.is_file() and tree.resolve() in file.resolve().parents:
                found += [line.split("#", 1)[0].strip() for line in
                          file.read_text(encoding="utf-8", errors="replace").splitlines()
                          if line.strip() and not line.lstrip().startswith(("#", "-"))]
                break
    return found


def installed_python(minor: int) -> str | None:
    """A working ``python3.<minor>`` of this machine: on the PATH, or one pyenv installed (its shims only run a
    version chosen with ``pyenv global``)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [shutil.which(f"python3.{minor}"),
                  *(str(p) for p in sorted(root.glob(f"versions/3.{minor}.*/bin/python3.{minor}"), reverse=True))]
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    return None


def interpreter(tree: Path, year: int) -> str:
    """The Python the project's test environment would run: the newest installed one not newer than the newest
    Python 3 its metadata lists, nor than the newest released in the commit's year (an old project's code uses what
    later versions removed); the oldest the probe runs on when only older ones fit."""
    text = "".join((tree / name).read_text(encoding="utf-8", errors="replace")
                   for name in ("setup.py", "setup.cfg", "pyproject.toml") if (tree / name).is_file())
    newest = max((int(minor) for minor in CLASSIFIER.findall(text)), default=99)
    installed = {minor: found for minor in PROBE_PYTHONS if (found := installed_python(minor))}
    fitting = [minor for minor in installed if minor <= newest and PROBE_PYTHONS[minor] <= year]
    if fitting:
        return installed[max(fitting)]
    return installed[min(installed)] if installed else sys.executable


PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def package_dirs(tree: Path, paths: list[str]) -> list[Path]:
    """The directories of a monorepo's packages that hold the changed files (the nearest directory above each
    with its own ``pyproject.toml``, ``setup.py`` or ``setup.cfg``), the root excluded, and the src-layout
    packages beside them: the probe imports those from the tree too, as a development install of the repository
    has them, so their dependencies are the environment's."""
    found: list[Path] = []
    for path in paths:
        for parent in (tree / path).parents:
            if parent == tree or tree not in parent.parents:
                break
            if any((parent / name).is_file() for name in PROJECT_FILES):
                beside = sorted(d for d in parent.parent.iterdir() if (d / "src").is_dir()
                                and any((d / name).is_file() for name in PROJECT_FILES))
                found += [d for d in [parent, *beside] if d not in found]
                break
    return found


def environment(tree: Path, year: int, packages: Sequence[Path] = ()) -> tuple[str, list[str]]:
    """The project's interpreter (:func:`interpreter`) with the dependencies its root and the monorepo packages
    holding the changed files declare installed from the package index (one virtual environment per interpreter
    and set of names, kept between runs). Returns the interpreter and the names that would not install."""
    names = sorted({*declared_dependencies(tree), *(n for d in packages for n in declared_dependencies(d)),
                    *tests_dependencies(tree), *(n for d in packages for n in tests_dependencies(d))})
    base = interpreter(tree, year)
    version = subprocess.run([base, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if not names and base == sys.executable:
        return sys.executable, []
    env = ENVS / hashlib.sha256(f"{version} {' '.join(names)}".encode()).hexdigest()[:16]
    python = env / "bin" / "python"
    missing_file = env / "missing.json"
    if not missing_file.is_file():
        subprocess.run([base, "-m", "venv", "--clear", str(env)], check=True, capture_output=True)
        missing = []
        for name in names:
            done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                   name], capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                missing.append(name)
        missing_file.write_text(json.dumps(missing), encoding="utf-8")
    return str(python), json.loads(missing_file.read_text(encoding="utf-8"))


VERSION_GENERATORS = re.compile(r"setuptools[_-]scm|hatch-vcs|use_scm_version|version[-_]file|write_to")


def generate_build_files(tree: Path, python: str) -> list[str]:
    """Write into ``tree`` the modules its build generates (a version module written by setuptools-scm or
    hatch-vcs), as installing the project for its tests would: the wheel is built with the project's own build
    backend (a pretend version, since an exported tree has no git history) and each Python file of it that the
    tree lacks is copied to where the tree keeps that package (``src/`` or the root). Returns what was written."""
    config = "".join((tree / name).read_text(encoding="utf-8", errors="replace")
                     for name in ("pyproject.toml", "setup.py", "setup.cfg") if (tree / name).is_file())
    if not VERSION_GENERATORS.search(config):
        return []
    written = []
    with tempfile.TemporaryDirectory() as out:
        built = subprocess.run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                                "-w", out, str(tree)], capture_output=True, text=True, timeout=600,
                               env={**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION": "0.0.0"})
        wheels = sorted(Path(out).glob("*.whl"))
        if built.returncode != 0 or not wheels:
            return []
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                top = name.split("/", 1)[0]
                if not name.endswith(".py") or ".dist-info" in top:
                    continue
                homes = [base for base in (tree, tree / "src") if (base / top).is_dir()]
                if homes and not any((base / name).exists() for base in (tree, tree / "src")):
                    (homes[0] / name).write_bytes(wheel.read(name))
                    written.append(str((homes[0] / name).relative_to(tree)))
    return sorted(written)


CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def release_data(mirror: Path, parent: str, *trees: Path) -> str | None:
    """Fill the trees with the data files the base leaves out of git from its newest release before the base
    commit, as the review's sandbox does (:mod:`sandbox.release_data`). Returns what was done, None when the base
    asks for none."""
    from sandbox.release_data import ReleaseIndex, fill, wanted

    base = trees[0]
    paths = git(mirror, "ls-tree", "-r", "--name-only", parent).splitlines()

    def read(path: str) -> str | None:
        file = base / path
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None

    want = wanted(read, paths)
    if want is None:
        return None
    when = git(mirror, "show", "-s", "--format=%cI", parent).strip()
    index = ReleaseIndex("https://pypi.org/simple", CA_BUNDLE if CA_BUNDLE.is_file() else None)
    filled = fill(want, read, paths, when, index, lambda: {})
    for tree in trees:
        for path, data in filled.for_tree(paths).items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_bytes(data)
    return filled.note


def outcome_kind(result: dict[str, Any]) -> str:
    """What one probed function's probes came to: confirmed, not reached (import or construction failed),
    inconclusive (the reference or the control disagreed) or no race seen."""
    if result["confirmed"]:
        return "confirmed"
    effect = result["tried"][-1]["effect"]
    if effect.startswith("could not reach"):
        return "not reached"
    return "inconclusive" if effect.startswith("inconclusive") else "no race seen"


def export(mirror: Path, commit: str, dest: Path) -> Path:
    """The tree of ``commit`` in ``dest``; a mirror may lack its largest blobs (a binary tool), which are left out."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", commit], capture_output=True)
    if archive.returncode == 0:
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        return dest
    for entry in git(mirror, "ls-tree", "-r", "-z", commit).split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind != "blob" or mode == "120000":
            continue
        blob = subprocess.run(["git", "--git-dir", str(mirror), "cat-file", "blob", sha], capture_output=True)
        if blob.returncode == 0:
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            (dest / path).write_bytes(blob.stdout)
    return dest


async def measure(case: Case, mirrors: Path, scratch: Path) -> dict[str, Any]:
    mirror = mirror_of(mirrors, case.repo)
    fix = git(mirror, "rev-parse", case.fix).strip()
    parent = git(mirror, "rev-parse", f"{fix}^").strip()
    row: dict[str, Any] = {"repo": case.repo, "fix": fix, "parent": parent, "licence": case.licence,
                           "what": case.what, "functions": []}
    year = int(git(mirror, "show", "-s", "--format=%cd", "--date=format:%Y", fix).strip())
    row["year"] = year
    branch = git(mirror, "symbolic-ref", "HEAD").strip()
    row["merged"] = subprocess.run(["git", "--git-dir", str(mirror), "merge-base", "--is-ancestor", fix, branch],
                                   capture_output=True).returncode == 0
    if not row["merged"]:  # a pull request's commit that never reached the default branch is no merged fix
        row["error"] = f"not merged: not on {branch.removeprefix('refs/heads/')}"
        row["confirmed_before"] = row["confirmed_after"] = False
        return row
    paths = [p for p in git(mirror, "show", "--format=", "--name-only", fix).splitlines()
             if p.endswith(".py") and not is_test_path(p)]
    before = export(mirror, parent, scratch / f"{fix[:10]}-before")
    after = export(mirror, fix, scratch / f"{fix[:10]}-after")
    python, missing = environment(before, year, package_dirs(before, paths))
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    row["environment"] = {"python": version, "declared": declared_dependencies(before),
                          "tests": tests_dependencies(before), "not installed": missing,
                          "generated": generate_build_files(before, python)}
    generate_build_files(after, python)
    row["environment"]["release data"] = release_data(mirror, parent, before, after)
    fixed, old = ({p: (tree / p).read_text(encoding="utf-8", errors="replace") for p in paths if (tree / p).is_file()}
                  for tree in (after, before))
    locking = locking_names(list(fixed.values()), list(old.values()))
    for path in paths:
        if path not in fixed or path not in old:
            continue
        fixed_source, old_source = fixed[path], old[path]
        for target in locked_targets(path, fixed_source, added_lines(mirror, fix, path), locking):
            if f"def {target.qualname.split('.')[-1]}" not in old_source:
                continue
            sink = static_hypothesis(path, old_source, target.qualname)
            row["functions"].append({
                "path": path, "qualname": target.qualname, "static_before": sink is not None, "state": sink,
                "before": await probe(before, target, python, sink),
                "after": await probe(after, target, python, sink),
            })
    row["confirmed_before"] = any(f["before"]["confirmed"] for f in row["functions"])
    row["confirmed_after"] = any(f["after"]["confirmed"] for f in row["functions"])
    return row


SHARED_CLAIM = "One instance of this code is shared by all the server's request threads."
MAX_PRECISION_TARGETS = 12


def changed_callables(case: Any) -> list[Target]:
    """The top-level functions and methods an honest PR adds lines to (its product code, not its tests): each is
    probed for a race with no hypothesis asking for it, the hardest test of the probe's precision."""
    found = []
    for changed in case.files:
        if changed.content is None or not changed.path.endswith(".py") or is_test_path(changed.path) \
                or changed.status == "removed":
            continue
        try:
            tree = ast.parse(changed.content)
        except SyntaxError:
            continue
        added = set(changed.added_lines)
        for func, is_method, qualname in TaintPass._functions(tree):
            if added & set(range(func.lineno, (func.end_lineno or func.lineno) + 1)):
                found.append(Target(path=changed.path, qualname=qualname, params=(), is_method=is_method))
    return found


async def precision() -> None:
    """The race hypotheses on honest merged PRs as they are written, and as if each said its code runs
    concurrently (every read-modify-write of instance state becomes a hypothesis): each of the latter is probed in
    the PR's head tree, exactly as a review probes it. An honest PR must give no confirmed race."""
    from app.review.assembly import prepare
    from app.review.gitrepo import GitRepo
    from app.settings import load_settings
    from checks.red import collect_hypotheses

    fixtures = Path(__file__).resolve().parents[1] / "tests" / "realworld" / "fixtures"
    prs = json.loads((fixtures / "prs.json").read_text(encoding="utf-8"))
    total = stated_total = confirmed = probed = reached = 0
    with tempfile.TemporaryDirectory() as root:
        for bundle in sorted(fixtures.glob("*.bundle")):
            subprocess.run(["git", "clone", "-q", "--bare", str(bundle), f"{root}/{bundle.stem}"], check=True)
        settings = load_settings(sandbox="off", home=Path(root) / ".lm", embedding="off", red_team="off")
        for pr in prs:
            prepared = prepare(GitRepo.open(f"{root}/{pr['repo']}"), pr["base"], pr["head"], settings=settings,
                               title=pr["title"], body=pr["body"] or "")
            races = [h.label() for h in collect_hypotheses(prepared.case, prepared.rubric) if h.kind == RACE_KIND]
            claimed = prepared.case.model_copy(update={"body": f"{prepared.case.body}\n\n{SHARED_CLAIM}"})
            stated = [h for h in collect_hypotheses(claimed, prepared.rubric) if h.kind == RACE_KIND and h.target]
            changed = changed_callables(prepared.case)[:MAX_PRECISION_TARGETS]
            head = export(Path(f"{root}/{pr['repo']}"), pr["head"], Path(root) / "trees" / pr["id"]) if changed \
                else None
            found = []
            for target in changed:
                assert head is not None
                result = await probe(head, target, sys.executable)
                if result["confirmed"]:
                    found.append(f"{target.qualname}: {result['tried'][-1]['effect'][:200]}")
                reached += outcome_kind(result) != "not reached"
            total += len(races)
            stated_total += len(stated)
            probed += len(changed)
            confirmed += len(found)
            print(f"{pr['id']}: {len(races)} race hypotheses {races}; said to run concurrently: {len(stated)}; "
                  f"changed callables probed: {len(changed)}, confirmed {len(found)} {found}", flush=True)
    print(f"race hypotheses on {len(prs)} honest PRs: {total}; as if each said its code runs concurrently: "
          f"{stated_total}; every changed function and method probed without a hypothesis: {probed} ({reached} "
          f"reached), {confirmed} confirmed")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", help="a repository (owner/name) to measure alone")
    parser.add_argument("--fixes", nargs="+", default=(), help="measure only the cases whose fix starts so")
    parser.add_argument("--precision", action="store_true", help="count race hypotheses on honest real PRs")
    parser.add_argument("--held-out", action="store_true", help="measure the held-out cases instead")
    args = parser.parse_args()
    if args.precision:
        await precision()
        return
    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for case in HELD_OUT if args.held_out else CASES:
            if (args.only and case.repo != args.only) or (args.fixes and not case.fix.startswith(tuple(args.fixes))):
                continue
            try:
                row = await measure(case, args.mirrors, Path(scratch))
            except (subprocess.CalledProcessError, OSError) as exc:
                row = {"repo": case.repo, "fix": case.fix, "error": f"{type(exc).__name__}: {exc}"[:300],
                       "functions": [], "confirmed_before": False, "confirmed_after": False, "year": 0}
            rows.append(row)
            marks = ", ".join(f"{f['qualname']}: before {'RACE' if f['before']['confirmed'] else '-'} / after "
                              f"{'RACE' if f['after']['confirmed'] else '-'} / static "
                              f"{'yes' if f['static_before'] else 'no'}" for f in row["functions"])
            print(f"{case.repo}@{case.fix} ({case.what}): {marks or row.get('error') or 'no locked function'}",
                  flush=True)
    probed = [r for r in rows if r["functions"]]
    outcomes: dict[str, int] = {}
    for row in probed:
        for function in row["functions"]:
            kind = outcome_kind(function["before"])
            outcomes[kind] = outcomes.get(kind, 0) + 1
    print("functions before the fix: " + ", ".join(f"{k} {n}" for k, n in sorted(outcomes.items())))
    print()
    merged = [r for r in rows if r.get("merged", True)]
    print(f"not merged (left out of the totals): {len(rows) - len(merged)}")
    for label, chosen in (("merged cases", merged), (f"modern merged cases (fixed in {MODERN_SINCE} or later)",
                                                     [r for r in merged if r["year"] >= MODERN_SINCE])):
        confirmed = sum(r["confirmed_before"] for r in chosen if r["functions"])
        fixed = sum(r["confirmed_after"] for r in chosen if r["functions"])
        print(f"{label} {len(chosen)}, with a probed function {sum(bool(r['functions']) for r in chosen)}; "
              f"confirmed before the fix {confirmed} ({confirmed / max(1, len(chosen)):.0%}); confirmed after the "
              f"fix {fixed}")
    print(f"{time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
