"""Dependency drift: a base commit that no longer runs with today's releases of its dependencies (or with the
interpreter chosen for it).

What: a project whose requirements have no upper bounds gets the newest releases; a release that removed an API
the base commit still calls (``werkzeug.urls.url_quote``, gone in Werkzeug 3) or a build tool that no longer builds
it (Cython 3 and a 2019 ``setup.py``) breaks the *base* run before the change is looked at. :func:`drift` reads a
run for that: an import of a name a third-party module no longer has, an attribute a third-party module no longer
has, a missing submodule of an installed third-party package, or the project's own build failing. The test
runner then builds the environment again from the releases uploaded before the base commit's date (pip's
``--uploaded-prior-to``) and keeps those runs when they are :func:`better`.
Why: a run that breaks on drift measures nothing; the releases of the base commit's day are the environment its
tests passed in. Only the base is read for drift, and the date is the base commit's (a PR controls its own
commits' dates and its own imports, not the base branch's): a change that itself calls a removed API still fails.
The same holds for an interpreter: when pytest itself breaks at base (an INTERNALERROR), :func:`other_interpreter`
names another interpreter the project admits, and the runs are made again with it. At head only when the break is
the interpreter's own (:func:`interpreter_broke`: the innermost frame of pytest's last lines is in the standard
library, as Debian's 3.11.2 ``traceback.extract_tb`` raising ``StopIteration``), never the change's code or plugin.
Example: ``cannot import name 'url_quote' from 'werkzeug.urls'`` at base → releases before 2023-04-12T…
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection
from datetime import UTC, datetime

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from checks.dependencies import project_name
from checks.models import TestRunResult

# the third-party module is group "module"; what it lacks, group "name"
PATTERNS = (
    re.compile(r"ImportError: cannot import name '(?P<name>[\w.]+)' from '(?P<module>[\w.]+)'"),
    re.compile(r"AttributeError: module '(?P<module>[\w.]+)' has no attribute '(?P<name>[\w.]+)'"),
    re.compile(r"ModuleNotFoundError: No module named '(?P<module>\w+)\.(?P<name>[\w.]+)'"),
)
BUILD_FAILED = "the project's editable install failed"
MAX_TEXTS = 400  # failing tests read for drift: a run with thousands of failures shows it in the first few


def _texts(run: TestRunResult) -> list[str]:
    texts = [run.reason or "", run.output[-8000:] if run.output else ""]
    texts += [c.message or "" for c in run.collection_errors[:MAX_TEXTS]]
    texts += [t.message or "" for t in run.tests[:MAX_TEXTS * 4] if t.outcome in ("failed", "error")][:MAX_TEXTS]
    return texts


def drift(run: TestRunResult, own: Collection[str]) -> str | None:
    """What in ``run`` says its dependencies moved on from the code (the first sign, quoted), or None. ``own`` are
    the repository's own top-level packages (:func:`checks.constraints.own_packages`): a name the project's own
    module lacks is the code's business, as is anything of the standard library."""
    for text in _texts(run):
        for pattern in PATTERNS:
            for match in pattern.finditer(text):
                top = match.group("module").split(".", 1)[0]
                if top in own or top in sys.stdlib_module_names or top == "__main__":
                    continue
                return match.group(0).split(": ", 1)[1]
        if BUILD_FAILED in text:
            return BUILD_FAILED
    return None


INTERNAL_ERROR = "pytest stopped with an internal error"  # sandbox/results.py's reason for an INTERNALERROR
FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+')
STDLIB = re.compile(r"^/usr/(?:local/)?lib/python3\.\d+/(?!site-packages/|dist-packages/)[\w/]+\.py$")


def interpreter_broke(run: TestRunResult) -> bool:
    """Whether pytest broke inside the interpreter itself in ``run``: an INTERNALERROR whose innermost frame (the
    last ``File "…"`` of pytest's last lines) is the interpreter's standard library, not a plugin, a dependency or
    the project."""
    reason = run.reason or ""
    if run.status != "error" or not reason.startswith(INTERNAL_ERROR):
        return False
    frames = FRAME.findall(reason)
    return bool(frames) and STDLIB.match(frames[-1]) is not None


def other_interpreter(run: TestRunResult) -> str | None:
    """Another interpreter to run ``run``'s tests with when pytest broke inside itself there (an INTERNALERROR: the
    interpreter's traceback module or a plugin failing, as pytest 8.4's tracebacks do under Debian's Python 3.11.2):
    the newest other interpreter the sandbox offers that the project's ``requires-python`` admits, or None."""
    plan = run.environment
    if run.status != "error" or not (run.reason or "").startswith(INTERNAL_ERROR) or plan is None:
        return None
    others = [v for v in plan.offered if v != plan.python and admits(plan.requires_python, v)]
    return max(others, key=version_key, default=None)


# modules the standard library removed after Python 3.9 (PEP 594 in 3.13; asynchat, asyncore, distutils, imp and
# smtpd in 3.12): the running interpreter may no longer list them among its own
REMOVED_STDLIB = frozenset({
    "aifc", "asynchat", "asyncore", "audioop", "cgi", "cgitb", "chunk", "crypt", "distutils", "imghdr", "imp",
    "lib2to3", "mailcap", "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "smtpd", "sndhdr", "spwd", "sunau",
    "telnetlib", "uu", "xdrlib"})
REMOVED_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>\w+)'")


def stdlib_drift(run: TestRunResult) -> str | None:
    """What in ``run`` says the interpreter's standard library moved on from the code (the first sign, quoted), or
    None: a name a standard-library module no longer has (``cannot import name 'Mapping' from 'collections'``,
    gone in 3.10; ``module 'asyncio' has no attribute 'coroutine'``, gone in 3.11) or a module it removed
    (``distutils``, ``imp``, ``cgi``). Read on the base only, as :func:`drift`: the base's own day had an
    interpreter that still held it; a change that itself calls a removed API still fails."""
    for text in _texts(run):
        for pattern in PATTERNS[:2]:
            for match in pattern.finditer(text):
                if match.group("module").split(".", 1)[0] in sys.stdlib_module_names:
                    return match.group(0).split(": ", 1)[1]
        for match in REMOVED_MODULE.finditer(text):
            if match.group("module") in REMOVED_STDLIB:
                return match.group(0).split(": ", 1)[1]
    return None


def older_interpreter(run: TestRunResult) -> str | None:
    """The interpreter to run ``run``'s tests with when :func:`stdlib_drift` reads it: the oldest offered one
    older than the run's that the project's ``requires-python`` admits (a removal holds in every later release,
    so the oldest is the likeliest to still have what the code calls), or None."""
    plan = run.environment
    if plan is None or plan.python is None:
        return None
    current = version_key(plan.python)
    older = [v for v in plan.offered if version_key(v) < current and admits(plan.requires_python, v)]
    return min(older, key=version_key, default=None)


def version_key(version: str) -> tuple[int, ...]:
    """``"3.11"`` → ``(3, 11)``: interpreter versions in their order."""
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def admits(requires: str | None, version: str) -> bool:
    """Whether ``requires`` (a ``requires-python``) admits interpreter ``version`` (``3.11``): any of its releases;
    no or an invalid specifier admits every one."""
    try:
        wanted = SpecifierSet(requires or "")
    except InvalidSpecifier:
        return True
    return wanted.contains(version + ".0", prereleases=True) or wanted.contains(version + ".99")


# pytest's own stack: a project that pins it (``pytest==6.2.4``, ``py==1.10.0`` in requirements/tests.txt) pins
# releases that may not start under the interpreter the sandbox offers (py's apipkg on Python 3.11:
# ``AttributeError: __spec__``); its plugins are pinned against it
TOOLING = frozenset({"pytest", "py", "pluggy", "iniconfig"})
TOOLING_FRAME = re.compile(r"/site-packages/(?:_pytest|pytest|py|pluggy)(?:/|\.py$)")


def _is_tooling(name: str) -> bool:
    return name in TOOLING or name.startswith("pytest-")


def broken_tooling(run: TestRunResult) -> tuple[str, ...]:
    """The pinned requirements of pytest's own stack (pytest, py, pluggy, iniconfig, pytest plugins) to take
    today's releases of when pytest itself could not start in ``run``: it stopped before reporting a test, and the
    innermost frame of its last lines is in that stack's installed code. In an environment of the base commit's
    day (``uploaded_before``) the date pins the whole stack, listed or installed for another requirement (tox
    3.0 brings py 1.5, whose apipkg breaks today's pytest too): all of :data:`TOOLING` and the plugins listed.
    Empty when it did not break there, or when nothing of the stack is pinned (today's releases are what it ran
    with)."""
    plan = run.environment
    if run.status != "error" or run.tests or plan is None:
        return ()
    frames = FRAME.findall(run.reason or "")
    if not frames or TOOLING_FRAME.search(frames[-1]) is None:
        return ()
    undated = {project_name(n) for n in plan.undated}
    pinned = [name for name in TOOLING if name not in undated] if plan.uploaded_before else []
    for line in plan.requirements:
        name = project_name(line)
        if not _is_tooling(name) or name in undated:
            continue
        if plan.uploaded_before or re.search(r"[<>=~!]", line.split(";", 1)[0]):
            pinned.append(name)
    return tuple(sorted(set(pinned)))


def within_lines(stack: Collection[str], run: TestRunResult) -> tuple[str, ...]:
    """``stack``'s projects bounded to the release lines ``run``'s environment installed: at least that release,
    below its line's next (``pytest==6.2.2`` → ``pytest>=6.2.2,<7``; a 0.x release's line is its minor:
    ``pluggy==0.13.1`` → ``pluggy>=0.13.1,<0.14``). The newest fix releases of the day's lines are what a project
    pinned there would move to first (pytest 6.2.5 starts under Python 3.11 where 6.2.2 does not, and still loads
    SQLAlchemy 1.4's plugin, which pytest 7.2 does not collect from). Empty when the run's setup names none of them
    (nothing to bound: the whole stack is lifted instead)."""
    installed: dict[str, Version] = {}
    for line in (run.setup.resolved if run.setup is not None else ()):
        name, _, text = line.partition("==")
        try:
            installed[project_name(name)] = Version(text)
        except InvalidVersion:
            continue
    out: list[str] = []
    for entry in sorted(stack):
        name = project_name(entry)
        found = installed.get(name)
        if found is None:
            continue
        major, minor = (*found.release, 0, 0)[:2]
        ceiling = f"{major + 1}" if major else f"0.{minor + 1}"
        out.append(f"{name}>={found.public},<{ceiling}")
    return tuple(out)


STALE_DAYS = 90  # a base older than this has seen its dependencies' next releases (set, not fitted: a quarter)


def stale_failures(run: TestRunResult, committed_at: str | None, now: datetime | None = None) -> str | None:
    """For a base committed more than :data:`STALE_DAYS` before ``now`` whose run has failing tests: what fails
    (their count), or None. Such failures may be today's releases, not the code: the runs are tried again with the
    releases of the base's day, and kept only when they measure more."""
    failing = run.failed + run.errored + len(run.collection_errors)
    if not committed_at or run.status != "ran" or not failing:
        return None
    try:
        when = datetime.fromisoformat(committed_at)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    age = (now or datetime.now(UTC)) - when
    if age.days <= STALE_DAYS:
        return None
    return f"{failing} test(s) fail at the base commit, {age.days} days old, with today's releases"


def _trouble(run: TestRunResult) -> tuple[int, int]:
    """How far a run is from measuring: (did not run, tests that failed or errored + collection errors)."""
    return (run.status != "ran", run.failed + run.errored + len(run.collection_errors))


def closer(run: TestRunResult, than: TestRunResult) -> bool:
    """Whether ``run`` is strictly closer to running clean than ``than`` (ran at all first, then fewer failures)."""
    return _trouble(run) < _trouble(than)


def better(dated: tuple[TestRunResult, TestRunResult], today: tuple[TestRunResult, TestRunResult],
           mended: str = "base") -> bool:
    """Whether the other environment's ``(base, head)`` runs measure more than today's: the ``mended`` tree (the one
    whose break asked for it) strictly closer to running clean, and the other no further from it."""
    (dated_base, dated_head), (base, head) = dated, today
    if mended == "head":
        return _trouble(dated_head) < _trouble(head) and _trouble(dated_base) <= _trouble(base)
    return _trouble(dated_base) < _trouble(base) and _trouble(dated_head) <= _trouble(head)
