"""Start pytest (or unittest) for the runner, inside the sandbox; standard library plus pytest only.

Run as ``python -I -S /sandbox/logomesh/launch.py CONFIG`` by ``runner.py``: no site processing, so nothing the
environment holds runs at start-up (a dependency's executable ``.pth`` line, ``sitecustomize``,
``usercustomize``). It builds ``sys.path`` itself: the standard library, the repository and its import roots
(*after* the standard library, so a repository module named like a standard one, ``subprocess.py``, never
replaces it), then the environment's and the editable install's site directories with the path lines of their
``.pth`` files. Executable lines are listed on standard error, never run; a setuptools editable finder whose
files match pip's RECORD is read (its ``MAPPING``), not run. LogoMesh's collector is handed to pytest as a plugin
object, registered before any of the repository's conftest files or plugins.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import json
import os
import re
import sys
import time
import unittest

REPO = "/sandbox/repo"
HERE = "/sandbox/logomesh"
TOOLS = "/opt/logomesh/tools/"


EXECUTABLE = ("import ", "import\t")
# setuptools' editable finder line: "import __editable___NAME_finder; __editable___NAME_finder.install(PATH)"
FINDER = re.compile(r"^import (__editable___\w+_finder)\s*;\s*\1\.install\((.*)\)\s*$")
STARTUP = {"path": [], "not_run": [], "finders": []}  # what this interpreter's start did, for the runner


def site_dirs(config: dict) -> list:
    """The site directories this interpreter would use (its venv's, else the installation's), then the
    editable install's: found from ``pyvenv.cfg`` beside ``sys.executable``, as ``site`` would, never run."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    venv = os.path.dirname(os.path.dirname(sys.executable))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        dirs = [os.path.join(venv, "lib", version, "site-packages")]
    else:
        import site  # under -S this runs nothing: only its path arithmetic is used

        dirs = list(site.getsitepackages())
    dirs.append(os.path.join(config.get("site") or "/sandbox/site", "lib", version, "site-packages"))
    return [d for d in dirs if os.path.isdir(d)]


def _recorded(sitedir: str) -> dict:
    """Path (absolute) -> sha256 (urlsafe base64, as in RECORD) of every file pip recorded in ``sitedir``."""
    recorded: dict = {}
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(sitedir)):
            if not entry.endswith(".dist-info"):
                continue
            with contextlib.suppress(OSError, ValueError), \
                    open(os.path.join(sitedir, entry, "RECORD"), encoding="utf-8") as handle:
                for row in csv.reader(handle):
                    if len(row) >= 2 and row[1].startswith("sha256="):
                        path = os.path.normpath(os.path.join(sitedir, row[0]))
                        recorded[path] = (row[1][len("sha256="):], entry[:-len(".dist-info")])
    return recorded


def _matches(path: str, recorded: dict) -> bool:
    import base64
    import hashlib

    expected = recorded.get(os.path.normpath(path))
    if expected is None:
        return False
    try:
        with open(path, "rb") as handle:
            digest = base64.urlsafe_b64encode(hashlib.sha256(handle.read()).digest()).rstrip(b"=").decode()
    except OSError:
        return False
    return digest == expected[0]


def _finder_roots(sitedir: str, module: str, pth: str, recorded: dict) -> list | None:
    """The directories a setuptools editable finder maps its packages from, read from its ``MAPPING`` literal
    (the finder is never run); None unless both files match pip's RECORD and every mapping is a plain
    ``<root>/<name>`` directory."""
    import ast

    finder = os.path.join(sitedir, module + ".py")
    if not (_matches(pth, recorded) and _matches(finder, recorded)):
        return None
    try:
        with open(finder, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    mapping = None
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "MAPPING" and node.value is not None:
            with contextlib.suppress(ValueError, TypeError, SyntaxError):
                mapping = ast.literal_eval(node.value)
    if not isinstance(mapping, dict):
        return None
    roots = []
    for name, where in mapping.items():
        if not (isinstance(name, str) and isinstance(where, str)):
            return None
        if os.path.basename(os.path.normpath(where)) != name.rpartition(".")[2]:
            return None
        root = os.path.dirname(os.path.normpath(where))
        if root not in roots:
            roots.append(root)
    return roots


def read_pth(sitedir: str, name: str, recorded: dict) -> list:
    """A ``.pth`` file's path lines (as ``site`` reads them); its executable lines are recorded, never run,
    except a setuptools editable finder verified against RECORD, whose mapping is read instead."""
    pth = os.path.join(sitedir, name)
    try:
        with open(pth, "rb") as handle:
            text = handle.read().decode("utf-8-sig", "replace")
    except OSError:
        return []
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith(EXECUTABLE):
            found = FINDER.match(line.strip())
            roots = _finder_roots(sitedir, found.group(1), pth, recorded) if found else None
            if roots is not None:
                STARTUP["finders"].append({"file": pth, "roots": roots})
                entries.extend(r for r in roots if os.path.isdir(r))
                continue
            owner = recorded.get(os.path.normpath(pth))
            STARTUP["not_run"].append({"file": pth, "line": number, "code": line.strip()[:300],
                                       "distribution": owner[1] if owner else None})
            continue
        entry = os.path.normpath(os.path.join(sitedir, line.rstrip()))
        if os.path.exists(entry):
            entries.append(entry)
    return entries


def set_path(config: dict) -> None:
    """``sys.path`` built here, for an interpreter started with ``-I -S``: the standard library, the repository
    and its import roots, then each site directory with the path lines of its ``.pth`` files. Nothing found in
    the environment runs before LogoMesh's collector holds the outcomes: no executable ``.pth`` line, no
    ``sitecustomize``/``usercustomize``. Child interpreters the tests start get the editable install's paths
    through ``PYTHONPATH`` (their own site processing is theirs; it cannot touch this process's outcomes)."""
    roots = [REPO] + [os.path.join(REPO, r) for r in config.get("import_roots") or [] if r not in ("", ".")]
    added: list = []
    for root in roots:
        if root not in sys.path and root not in added:
            added.append(root)
    editable: list = []
    for sitedir in site_dirs(config):
        recorded = _recorded(sitedir)
        found = [sitedir]
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(sitedir)):
                if name.endswith(".pth") and not name.startswith("."):
                    found.extend(read_pth(sitedir, name, recorded))
        for entry in found:
            if entry not in sys.path and entry not in added:
                added.append(entry)
        if sitedir.startswith((config.get("site") or "/sandbox/site") + "/"):
            editable.extend(found)
    sys.path.extend(added)
    STARTUP["path"] = list(added)
    # the import roots below the repository (src/) as well: a child started elsewhere (pytester's tmp dir)
    # imports the project as this process does; the repository root itself stays the child's cwd's business
    children = [r for r in roots if r != REPO] + editable
    if children:
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(children))


def run_unittest(out: str) -> int:
    records = []

    class Recorder(unittest.TextTestResult):
        def _add(self, test: unittest.TestCase, outcome: str, message: str | None = None) -> None:
            records.append({"id": test.id(), "outcome": outcome, "duration": 0.0, "message": message})

        def addSuccess(self, test):
            super().addSuccess(test)
            self._add(test, "passed")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._add(test, "failed", self._exc_info_to_string(err, test)[-2000:])

        def addError(self, test, err):
            super().addError(test, err)
            self._add(test, "error", self._exc_info_to_string(err, test)[-2000:])

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._add(test, "skipped", reason)

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._add(test, "skipped", "expected failure")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._add(test, "failed", "unexpected success")

    os.chdir(REPO)
    suite = unittest.TestLoader().discover(".", top_level_dir=".")
    result = unittest.TextTestRunner(resultclass=Recorder, verbosity=1).run(suite)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"tests": records, "collected": [r["id"] for r in records], "errors": [], "hooks": [],
                   "deselected": []}, handle)
    return 0 if result.wasSuccessful() else 1


def _import_builtin_plugins() -> None:
    """pytest's own plugin modules, as its sessions would import them (none of them is the repository's)."""
    try:
        from _pytest.config import default_plugins
    except ImportError:  # a pytest without the list: each session imports its plugins itself
        return
    for name in default_plugins:
        with contextlib.suppress(Exception):
            importlib.import_module("_pytest." + name)


def _session(tests: list, out: str, collector: object, stop_at: float, first_failure: bool) -> tuple:
    """One pytest session in a forked child of this process over ``tests``; ``(status, what it told)``: ``status``
    None when it ended in time, ``"timeout"`` when it was killed at ``stop_at``; what it told is the tests that
    failed and the errors it reported (or that it died before reporting)."""
    import signal

    import pytest

    pid = os.fork()
    if pid == 0:  # the child: a fresh pytest session that imports the (mutated) module
        code = 3
        try:
            sys.dont_write_bytecode = True
            os.setpgid(0, 0)
            plugin = collector.Collector(out, [], REPO)  # type: ignore[attr-defined]
            code = int(pytest.main([*(["-x"] if first_failure else []), "-q", "-p", "no:cacheprovider", *tests],
                                   plugins=[plugin]))
            plugin.finish(code, 0.0)
        finally:
            os._exit(code)
    while True:
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished:
            break
        if time.monotonic() > stop_at:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", {"(timeout)"}  # a mutant that hangs the tests is detected by them, as a hang
        time.sleep(0.005)
    try:
        with open(out, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None, {"(died)"}  # the session died before it could report: the mutant broke it
    told = {t.get("id") for t in record.get("tests", []) if t.get("outcome") in ("failed", "error")}
    told |= {"(error) " + str(e.get("id")) for e in record.get("errors") or [] if isinstance(e, dict)}
    return None, told


def _mutated(job: dict, tests: list, collector: object, stop_at: float) -> tuple:
    """:func:`_session` over ``tests`` with the mutant's source in place of the file's; the file restored after it,
    whatever happened."""
    target = os.path.join(REPO, job["path"])
    with open(target, "rb") as handle:
        original = handle.read()
    try:
        # Python trusts a .pyc whose recorded source mtime (whole seconds) and size match: a mutant written in
        # the same second as the test run's or another mutant's, and of the same size ("==" -> "!=", 0 -> 1),
        # would run that stale code instead. So no child writes bytecode, and none is left to read.
        with contextlib.suppress(OSError):
            os.remove(importlib.util.cache_from_source(target))
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(job["source"])
        return _session(tests, f"/sandbox/out/mutant-{os.urandom(6).hex()}.json", collector, stop_at, True)
    finally:
        with open(target, "wb") as handle:
            handle.write(original)


def _mutant_session(job: dict, tests: list, collector: object, stop_at: float, control: set) -> str:
    """The mutant against ``tests`` again: killed when it tells something the control did not."""
    status, told = _mutated(job, tests, collector, stop_at)
    return "killed" if told - control and status is None else "timeout" if told - control else "survived"


def run_mutants(config: dict, collector: object) -> None:
    """Each mutant in a forked child of this process (pytest imported once, no project module yet), against
    the tests that covered its line, with ``-x``; the source file is restored after each, whatever happened. Then,
    when some mutant was killed, the control: the unmutated code against the killers' tests, the same way; a kill
    counts only when its session told something the control's did not (a test that fails on the unmutated code
    too, because it remembers an earlier run or is flaky, detects no mutant)."""
    import gc

    with open(config["mutate"], encoding="utf-8") as handle:
        jobs = json.load(handle)
    deadline = time.monotonic() + float(config.get("seconds") or 0)
    verdicts = []
    found: dict = {}
    # pytest imports its built-in plugins (junitxml, pastebin, ...) at the start of every session: imported once
    # here, before the forks, they cost each mutant's session nothing (about a sixth of its time)
    _import_builtin_plugins()
    # Everything alive now (pytest, the collector) outlives every child: frozen, it is never scanned again by the
    # cycle collections each child's pytest session runs (five at its end alone) — a third of a mutant's time.
    gc.freeze()
    for job in jobs:
        left = deadline - time.monotonic()
        if left <= 0.5:
            verdicts.append({"id": job["id"], "status": "not_run", "tests_run": 0})
            continue
        # a mutant may make a test loop forever: it gets 30 s at most, and never more than the budget
        status, told = _mutated(job, job["tests"], collector, min(deadline + 5, time.monotonic() + 30))
        if told:
            found[job["id"]] = told
        verdicts.append({"id": job["id"], "status": status or ("killed" if told else "survived"),
                         "tests_run": len(job["tests"])})
    if found:
        killers = sorted({t for job in jobs if job["id"] in found for t in job["tests"]})
        out = f"/sandbox/out/control-{os.urandom(6).hex()}.json"
        stop = deadline + 25
        _status, control = _session(killers, out, collector, min(stop, time.monotonic() + 30), False)
        for index, job in enumerate(jobs):
            verdict = verdicts[index]
            if job["id"] not in found or found[job["id"]] - control:
                continue
            # its session stopped (-x) at a test that fails on the unmutated code too: the mutant meets the
            # other tests, which pass there, before it counts as survived
            verdict["status"] = "survived"
            others = [t for t in job["tests"] if t not in control]
            if others and time.monotonic() < stop - 1:
                verdict["status"] = _mutant_session(job, others, collector, min(stop, time.monotonic() + 30),
                                                    control)
    with open(config["out"], "w", encoding="utf-8") as handle:
        json.dump(verdicts, handle)


def run_probe(path: str) -> None:
    """A red-team probe: the test run's interpreter, path, directory and command line, without pytest."""
    import types

    os.chdir(REPO)
    with open(path, encoding="utf-8") as handle:
        code = compile(handle.read(), path, "exec")
    module = types.ModuleType("case")
    module.__file__ = path
    sys.modules["case"] = module
    exec(code, module.__dict__)  # noqa: S102 - LogoMesh's own probe, run in the sandbox


def main() -> None:
    argument = sys.argv[1]
    if argument.startswith("@"):
        with open(argument[1:], encoding="utf-8") as handle:
            argument = handle.read()
    config = json.loads(argument)
    set_path(config)
    for skipped in STARTUP["not_run"]:
        if skipped["file"].startswith(TOOLS) or (os.path.basename(skipped["file"]) == "distutils-precedence.pth"
                                                 and (skipped["distribution"] or "").startswith("setuptools-")):
            continue  # LogoMesh's own tools, every venv's setuptools shim: not run either, and no news
        sys.stderr.write(f"logomesh: start-up code not run: {skipped['file']}:{skipped['line']} "
                         f"({skipped['distribution'] or 'no distribution records it'}): {skipped['code']}\n")
    if config.get("probe"):
        run_probe(config["probe"])
        return
    if config.get("unittest"):
        sys.exit(run_unittest(config["out"]))
    sys.path.insert(0, HERE)
    import collector  # LogoMesh's own, from outside the repository

    sys.path.remove(HERE)
    if config.get("mutate"):
        run_mutants(config, collector)
        return
    import pytest

    plugin = collector.Collector(config["out"], config.get("coverage_paths") or [], REPO, config.get("coverage_lines"))
    started = time.monotonic()
    code = pytest.main(list(config.get("args") or []), plugins=[plugin])
    plugin.finish(int(code), time.monotonic() - started)
    sys.exit(int(code))


if __name__ == "__main__":
    main()
