"""LogoMesh's pytest plugin, run inside the sandbox: what was collected, what each test really did.

Handed to ``pytest.main`` as a plugin object by ``launch.py`` (so it is registered before the repository's
conftest files and ``-p`` plugins). It records

- the collected node ids and the deselected ones (``-k``, ``-m``, ``collection_modifyitems``);
- per test, the outcome pytest reported *and* the raw outcome seen by an innermost ``makereport`` wrapper from
  the call's own exception: a hook that turns a failure into a pass shows up as ``rewritten``;
- collection errors with their last ``E`` line (the ImportError a reader needs);
- every implementation of a hook that decides outcomes whose code lives in the repository (file and line);
- optionally, per-test line coverage of the changed files (``coverage`` with one dynamic context per test);
- dangerous calls made by the repository's product code while the tests run, seen by an audit hook
  (``sys.addaudithook``): a shell command, a program started through ``sh -c``, code executed from a string —
  whatever names or strings were used to reach them.

It writes one JSON file when pytest ends. PR code shares this process, so none of this is proof by itself; the
host compares it with the base's oracle.
"""

from __future__ import annotations

import json
import os

import pytest
import sightings  # beside this file in /sandbox/logomesh (launch.py puts it on the path to import us)

SENSITIVE_HOOKS = (
    "pytest_runtest_makereport", "pytest_pyfunc_call", "pytest_runtest_protocol", "pytest_runtest_call",
    "pytest_runtest_setup", "pytest_runtest_teardown", "pytest_collection_modifyitems", "pytest_report_teststatus",
    "pytest_runtest_logreport", "pytest_sessionfinish", "pytest_unconfigure", "pytest_terminal_summary",
    "pytest_collectreport", "pytest_deselected", "pytest_runtestloop", "pytest_collect_file",
    "pytest_pycollect_makeitem", "pytest_itemcollected", "pytest_collection",
)
MAX_MESSAGE = 2000
IMPORT_CONTEXT = "<import>"
MAX_RUNTIME = 50
MAX_TESTS = 20000
PYTEST_MAJOR = int(pytest.__version__.split(".", 1)[0])


def _message(report) -> str:
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2])[:MAX_MESSAGE]  # a skip: (path, line, reason)
    text = getattr(report, "longreprtext", "") or ""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    head = ""
    if crash is not None:
        head = f"{crash.path}:{crash.lineno}: "
    summary = " | ".join(lines[-3:]) if lines else text.strip().splitlines()[-1] if text.strip() else ""
    return (head + summary)[:MAX_MESSAGE]


def _location(report, repo: str) -> str | None:
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is None:
        return None
    path = str(crash.path)
    if path.startswith(repo + "/"):
        return f"{path[len(repo) + 1:]}:{crash.lineno}"
    return None


class Collector:
    def __init__(self, out: str, coverage_paths: list, repo: str, coverage_lines: dict | None = None) -> None:
        self.out = out
        # path -> the lines whose tests are asked for (the mutated ones); None: every line of the paths
        self.coverage_lines = {p: {str(n) for n in lines} for p, lines in (coverage_lines or {}).items()} \
            if coverage_lines is not None else None
        self.repo = repo
        self.tests: dict = {}
        self.raw: dict = {}
        self.errors: list = []
        self.collected: list = []
        self.collected_total = 0
        self.deselected: list = []
        self.hooks: list = []
        self.coverage_paths = coverage_paths
        self.cov = None
        # dangerous calls of product code while the tests run (LogoMesh's, from outside the repository)
        self.sightings = sightings.Sightings(repo, MAX_RUNTIME, sightings.SHELL_AND_CODE, details=False)

    # --- coverage -----------------------------------------------------------------------------------------

    def pytest_configure(self, config) -> None:
        if not self.coverage_paths:
            return
        try:
            import coverage
        except ImportError:
            return
        include = [os.path.join(self.repo, p) for p in self.coverage_paths]
        self.cov = coverage.Coverage(data_file=None, include=include, config_file=False)
        self.cov.start()

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.cov is not None:
            self.cov.switch_context(item.nodeid)
        yield
        if self.cov is not None:
            self.cov.switch_context("")

    # --- collection -----------------------------------------------------------------------------------------

    def _outside(self, path):
        """A symlink that leads out of the repository (``root -> /``) is not the repository's to collect."""
        if os.path.islink(str(path)):
            target = os.path.realpath(str(path))
            if target != self.repo and not target.startswith(self.repo + "/"):
                return True
        return None

    # the hook's argument is ``collection_path`` from pytest 7 and ``path`` before it: a project that pins pytest 6
    # must be able to register this plugin (pluggy refuses an argument its hookspec lacks)
    if PYTEST_MAJOR >= 7:
        @pytest.hookimpl(tryfirst=True)
        def pytest_ignore_collect(self, collection_path, config):
            return self._outside(collection_path)
    else:
        @pytest.hookimpl(tryfirst=True)
        def pytest_ignore_collect(self, path, config):
            return self._outside(path)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session) -> None:
        self.collected = [item.nodeid for item in session.items][:MAX_TESTS]
        self.collected_total = len(session.items)  # past MAX_TESTS the tests run but are not recorded
        manager = session.config.pluginmanager
        for name in SENSITIVE_HOOKS:
            caller = getattr(manager.hook, name, None)
            if caller is None:
                continue
            for impl in caller.get_hookimpls():
                code = getattr(impl.function, "__code__", None)
                filename = getattr(code, "co_filename", "") or ""
                if filename.startswith(self.repo + "/"):
                    self.hooks.append({"hook": name, "path": filename[len(self.repo) + 1:],
                                       "line": code.co_firstlineno, "wrapper": bool(impl.hookwrapper)})

    def pytest_deselected(self, items) -> None:
        self.deselected.extend(item.nodeid for item in items)

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append({"id": report.nodeid or ".", "message": _message(report)})

    # --- outcomes -------------------------------------------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_makereport(self, item, call):
        excinfo = call.excinfo
        if excinfo is None:
            raw = "passed"
        elif excinfo.errisinstance(pytest.skip.Exception):
            raw = "skipped"
        else:
            raw = "failed"
        self.raw[(item.nodeid, call.when)] = raw
        yield

    def pytest_runtest_logreport(self, report) -> None:
        if len(self.tests) >= MAX_TESTS and report.nodeid not in self.tests:
            return
        entry = self.tests.setdefault(report.nodeid, {"id": report.nodeid, "outcome": "passed", "duration": 0.0,
                                                     "message": None, "location": None, "rewritten": False})
        entry["duration"] = round(entry["duration"] + float(report.duration or 0.0), 4)
        raw = self.raw.get((report.nodeid, report.when))
        xfail = hasattr(report, "wasxfail")
        if report.failed:
            entry["outcome"] = "failed" if report.when == "call" else "error"
            entry["message"] = _message(report)
            entry["location"] = _location(report, self.repo)
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
            entry["message"] = ("xfail: " + str(report.wasxfail)) if xfail else _message(report)
        if raw == "failed" and report.passed and not xfail:
            entry["rewritten"] = True
        if raw is None and report.when == "call":
            entry["rewritten"] = True  # a report for a test call LogoMesh never saw made

    # --- the record -----------------------------------------------------------------------------------------

    def finish(self, exit_code: int, seconds: float) -> None:
        coverage_map: dict = {}
        if self.cov is not None:
            self.cov.stop()
            data = self.cov.get_data()
            for filename in data.measured_files():
                if not filename.startswith(self.repo + "/"):
                    continue
                lines = data.contexts_by_lineno(filename)
                path = filename[len(self.repo) + 1:]
                wanted = self.coverage_lines.get(path, set()) if self.coverage_lines is not None else None
                # "" is the context outside any test: the line ran when the module was imported
                coverage_map[path] = {
                    str(line): sorted(c or IMPORT_CONTEXT for c in contexts) for line, contexts in lines.items()
                    if wanted is None or str(line) in wanted}
        record = {"exit_code": exit_code, "seconds": round(seconds, 3), "collected": self.collected,
                  "collected_total": self.collected_total,
                  "deselected": self.deselected[:MAX_TESTS], "errors": self.errors[:200],
                  "tests": list(self.tests.values()), "hooks": self.hooks[:200], "coverage": coverage_map,
                  "runtime": self.sightings.take()}
        with open(self.out, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
