"""Start pytest (or unittest) for the runner, inside the sandbox; standard library plus pytest only.

Run as ``python -I /sandbox/logomesh/launch.py CONFIG`` by ``runner.py``. It builds ``sys.path`` itself instead of
trusting the environment: the editable install's site directory (its ``.pth`` files processed), then the
repository and its import roots placed *after* the standard library, so a repository module named like a
standard one (``subprocess.py``) never replaces it. LogoMesh's collector is handed to pytest as a plugin
object, registered before any of the repository's conftest files or plugins.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import site
import sys
import time
import unittest

REPO = "/sandbox/repo"
HERE = "/sandbox/logomesh"


def set_path(config: dict) -> None:
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    packages = os.path.join(config.get("site") or "/sandbox/site", "lib", version, "site-packages")
    if os.path.isdir(packages):
        site.addsitedir(packages)
    stdlib_end = max((i for i, p in enumerate(sys.path) if "site-packages" not in p and p), default=0) + 1
    roots = [REPO] + [os.path.join(REPO, r) for r in config.get("import_roots") or [] if r not in ("", ".")]
    for offset, root in enumerate(roots):
        sys.path.insert(stdlib_end + offset, root)


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


def run_mutants(config: dict, collector: object) -> None:
    """Each mutant in a forked child of this process (pytest imported once, no project module yet), against
    the tests that covered its line, with ``-x``; the source file is restored after each, whatever happened."""
    import gc
    import signal

    import pytest

    with open(config["mutate"], encoding="utf-8") as handle:
        jobs = json.load(handle)
    deadline = time.monotonic() + float(config.get("seconds") or 0)
    verdicts = []
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
        target = os.path.join(REPO, job["path"])
        with open(target, "rb") as handle:
            original = handle.read()
        out = f"/sandbox/out/mutant-{os.urandom(6).hex()}.json"
        try:
            # Python trusts a .pyc whose recorded source mtime (whole seconds) and size match: a mutant written in
            # the same second as the test run's or another mutant's, and of the same size ("==" -> "!=", 0 -> 1),
            # would run that stale code instead. So no child writes bytecode, and none is left to read.
            with contextlib.suppress(OSError):
                os.remove(importlib.util.cache_from_source(target))
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(job["source"])
            pid = os.fork()
            if pid == 0:  # the child: a fresh pytest session that imports the mutated module
                code = 3
                try:
                    sys.dont_write_bytecode = True
                    os.setpgid(0, 0)
                    plugin = collector.Collector(out, [], REPO)  # type: ignore[attr-defined]
                    code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *job["tests"]], plugins=[plugin]))
                    plugin.finish(code, 0.0)
                finally:
                    os._exit(code)
            status = None
            # a mutant may make a test loop forever: it gets 30 s at most, and never more than the budget
            stop = min(deadline + 5, time.monotonic() + 30)
            while status is None:
                finished, _ = os.waitpid(pid, os.WNOHANG)
                if finished:
                    break
                if time.monotonic() > stop:
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    status = "timeout"  # a mutant that hangs the tests is detected by them, as a hang
                time.sleep(0.005)
        finally:
            with open(target, "wb") as handle:
                handle.write(original)
        if status is None:
            try:
                with open(out, encoding="utf-8") as handle:
                    record = json.load(handle)
                failing = [t for t in record.get("tests", []) if t.get("outcome") in ("failed", "error")]
                status = "killed" if failing or record.get("errors") else "survived"
            except (OSError, ValueError):
                status = "killed"  # the session died before it could report: the mutant broke it
        verdicts.append({"id": job["id"], "status": status, "tests_run": len(job["tests"])})
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

    plugin = collector.Collector(config["out"], config.get("coverage_paths") or [], REPO)
    started = time.monotonic()
    code = pytest.main(list(config.get("args") or []), plugins=[plugin])
    plugin.finish(int(code), time.monotonic() - started)
    sys.exit(int(code))


if __name__ == "__main__":
    main()
