"""Dependency changes: what the change does to the environment its tests run in, compared with the base's.

``dependency_changes(base, head)`` is pure: it reads the two runs' environment plans (the requirement lines and
the file declaring each) and setup reports (the distributions pip installed and the start-up code the environment
holds) and returns

- the requirements the change *adds*, *removes* or *re-pins* (the same project under another specifier or marker),
  each with the file that declares it and the versions pip installed at base and at head where known;
- the start-up code of the head's environment that the base's did not hold: an executable ``.pth`` line, a
  ``sitecustomize``/``usercustomize`` or a pytest plugin loaded automatically, named with its file and its
  distribution. A ``sitecustomize`` the change brings in keeps it from ``pass`` (:func:`holds_back_pass`); the rest
  is shown, since LogoMesh's test interpreter never runs it or its collector watches it.

Start-up code is compared without its distribution's version: a re-pinned plugin is the same start-up code.
"""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from checks.models import DependencyChange, EnvironmentPlan, SetupReport, TestDiff, TestRunResult

LISTED = 100
OWNER = re.compile(r"\(from ([A-Za-z0-9_.]+)-[^\s)]+\)")


def project_name(line: str) -> str:
    """The normalised project name of a requirement line (``Foo_Bar>=1`` → ``foo-bar``); the line itself when
    it does not parse."""
    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return line.strip().lower()


def _declared(plan: EnvironmentPlan | None) -> dict[str, tuple[str, str | None]]:
    """Project name → (requirement line, declaring file); the first line naming a project wins."""
    if plan is None:
        return {}
    sources = {d.requirement: d.source for d in plan.declared}
    found: dict[str, tuple[str, str | None]] = {}
    for line in plan.requirements:
        found.setdefault(project_name(line), (line, sources.get(line)))
    return found


def _resolved(setup: SetupReport | None) -> dict[str, str]:
    """Project name → the version pip installed."""
    found: dict[str, str] = {}
    for pinned in setup.resolved if setup is not None else ():
        name, _, version = pinned.partition("==")
        found[canonicalize_name(name)] = version
    return found


def _same(a: str, b: str) -> bool:
    """Two lines that ask for the same thing (spacing and name spelling aside)."""
    try:
        first, second = Requirement(a), Requirement(b)
    except InvalidRequirement:
        return a.replace(" ", "") == b.replace(" ", "")
    return (canonicalize_name(first.name), first.specifier, first.marker and str(first.marker),
            sorted(first.extras)) == (canonicalize_name(second.name), second.specifier,
                                      second.marker and str(second.marker), sorted(second.extras))


NOT_RUN = ("executable .pth line", "pytest plugin loaded automatically")


def holds_back_pass(finding: str) -> bool:
    """Start-up code that keeps a change from ``pass``: a ``sitecustomize``/``usercustomize`` it brings in, which
    exists only to run code at every interpreter start. An executable ``.pth`` line is never run by LogoMesh's test
    interpreter (``-I -S``), and an auto-loaded pytest plugin runs inside pytest, where the collector records any
    outcome it rewrites: both are shown, never held against an honest dependency (pytest-cov ships a ``.pth``,
    pytest-mock a plugin)."""
    return not finding.startswith(NOT_RUN)


def startup_severity(finding: str) -> str:
    """``high`` for start-up code that keeps a change from ``pass``, ``medium`` for a ``.pth`` line, else ``low``."""
    return "high" if holds_back_pass(finding) else "medium" if finding.startswith(NOT_RUN[0]) else "low"


def startup_key(finding: str) -> str:
    """A start-up finding without its distribution's version (``from lm_x-1.0`` → ``from lm_x``)."""
    return OWNER.sub(lambda m: f"(from {canonicalize_name(m.group(1))})", finding)


def startup_owner(finding: str) -> str | None:
    """The normalised project name of the distribution a start-up finding names, if any."""
    found = OWNER.search(finding)
    return canonicalize_name(found.group(1)) if found else None


def dependency_changes(base: TestRunResult, head: TestRunResult
                       ) -> tuple[tuple[DependencyChange, ...], tuple[str, ...]]:
    """``(changes, start-up code added)``: what the change does to the environment (module docstring). Without a
    plan on either side there is nothing to compare; start-up code is compared whenever the head has some (a
    base that installed nothing holds none)."""
    changes: list[DependencyChange] = []
    if base.environment is not None and head.environment is not None:
        before, after = _declared(base.environment), _declared(head.environment)
        was, now = _resolved(base.setup), _resolved(head.setup)
        for name in sorted(set(before) | set(after)):
            old, new = before.get(name), after.get(name)
            if old is not None and new is not None and _same(old[0], new[0]):
                continue
            kind = "added" if old is None else "removed" if new is None else "repinned"
            changes.append(DependencyChange(
                name=name, change=kind, base=old[0] if old else None, head=new[0] if new else None,
                source=(new or old or ("", None))[1], base_resolved=was.get(name), head_resolved=now.get(name)))
    had = {startup_key(f) for f in (base.setup.startup if base.setup is not None else ())}
    added = tuple(f for f in (head.setup.startup if head.setup is not None else ()) if startup_key(f) not in had)
    return tuple(changes[:LISTED]), added[:LISTED]


def measured_files(diff: TestDiff | None, head: TestRunResult | None) -> tuple[str, ...]:
    """The changed files LogoMesh measured as dependency files, sorted: each declares a requirement the change adds,
    removes or re-pins, and the head's environment was built from the change's requirements (resolved, installed
    and verified; ``setup.status == "installed"``) and its tests ran in it against the base's (a measured
    differential run). What such a file says is analysed: what it installs, with which versions, and whether that
    brings start-up code. Any other non-Python file is not (``checks.chief_justice``'s Rule of Measurement)."""
    if diff is None or diff.status != "measured" or not diff.guarded or head is None or head.setup is None \
            or head.setup.status != "installed":
        return ()
    return tuple(sorted({(c.source or "").split(" ", 1)[0] for c in diff.dependencies} - {""}))


def describe(change: DependencyChange) -> str:
    """One line: ``requirements-test.txt adds lm-plain==1.0.0 (installed: 1.0.0)``."""
    where = change.source or "the environment"
    if change.change == "added":
        text = f"{where} adds {change.head}"
    elif change.change == "removed":
        text = f"{where} no longer asks for {change.base}"
    else:
        text = f"{where} re-pins {change.name}: {change.base} → {change.head}"
    versions = [v for v in (change.base_resolved if change.change != "added" else None,
                            change.head_resolved if change.change != "removed" else None) if v]
    if change.change == "repinned" and change.base_resolved and change.head_resolved:
        return f"{text} (installed: {change.base_resolved} → {change.head_resolved})"
    return text + (f" (installed: {versions[0]})" if versions else "")
