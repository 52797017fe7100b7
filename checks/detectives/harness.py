"""HarnessInspector — changes to what decides whether tests pass, each located and none silently trusted.

What: reads the diff for changes to the test harness: pytest hook implementations that decide outcomes
(``pytest_runtest_makereport``, ``pytest_pyfunc_call``, ``pytest_collection_modifyitems``, …) on added lines of
any file, added or changed ``conftest.py``, pytest configuration lines (``addopts`` with ``-p``/``-k``/``-m``,
``python_files``/``python_classes``/``python_functions``, ``testpaths``, ``norecursedirs``, ``markers``),
``sitecustomize``/``usercustomize``/``.pth`` files, top-level modules named like the standard library, skip and
xfail markers added to tests, and deleted test files; for Go (:func:`checks.languages.go.harness_changes`) a
``TestMain`` added, skips added to existing test files, and test functions or files deleted.
Why: a change controls the code its tests run in. Its tests are re-run under the base's oracle by the
TestRunner; this detective says *how* the harness changed, with ``file:line``, so a reviewer can see it.
Example: ``conftest.py:4 implements pytest_runtest_makereport, a hook that can rewrite test outcomes``.
"""

from __future__ import annotations

import re
import sys
from pathlib import PurePosixPath

from checks.detectives.registry import register
from checks.languages import go, javascript
from checks.models import Case, ChangedFile, DetectiveReport, Evidence, Location, Severity
from checks.protocols import CourtResources
from checks.testpaths import PYTEST_CONFIGS, is_test_path
from rubric import Rubric

ID = "harness"
OUTCOME_HOOKS = frozenset({
    "pytest_runtest_makereport", "pytest_pyfunc_call", "pytest_runtest_protocol", "pytest_runtest_call",
    "pytest_runtest_setup", "pytest_runtest_teardown", "pytest_collection_modifyitems", "pytest_report_teststatus",
    "pytest_runtest_logreport", "pytest_sessionfinish", "pytest_unconfigure", "pytest_terminal_summary",
    "pytest_collectreport", "pytest_deselected", "pytest_runtestloop", "pytest_collect_file",
    "pytest_pycollect_makeitem", "pytest_itemcollected", "pytest_collection", "pytest_ignore_collect",
    "pytest_configure", "pytest_load_initial_conftests", "pytest_cmdline_main",
})
HOOK_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(pytest_\w+)\s*\(")
CONFIG_KEYS = re.compile(r"^\s*[\"']?(addopts|python_files|python_classes|python_functions|testpaths|norecursedirs|"
                         r"markers|pythonpath|required_plugins|xfail_strict|usefixtures|filterwarnings)[\"']?\s*[=:]")
STRONG_ADDOPTS = re.compile(r"(^|\s)(-p|-k|-m|--deselect|--ignore|--ignore-glob|--co|--collect-only|-x|"
                            r"--exitfirst|--lf|--last-failed|--runxfail)(\s|=|$)")
SKIP_MARK = re.compile(r"(@pytest\.mark\.(skip|skipif|xfail)\b|pytest\.(skip|xfail|importorskip)\(|"
                       r"@unittest\.(skip|skipIf|skipUnless|expectedFailure)\b|raise\s+unittest\.SkipTest)")
STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")
MAX_ITEMS = 40


def _lines(changed: ChangedFile) -> list[tuple[int, str]]:
    if changed.content is None:
        return []
    text = changed.content.splitlines()
    return [(n, text[n - 1]) for n in changed.added_lines if 0 < n <= len(text)]


def _evidence(kind: str, path: str, line: int | None, summary: str, severity: Severity,
              **facts: object) -> Evidence:
    where = f":{line}" if line else ""
    return Evidence(id=f"{ID}.{kind}:{path}{where}", detective=ID, kind="harness-change", summary=summary,
                    location=Location(path=path, line=line), severity=severity,
                    facts={"mechanism": kind, **facts})


def inspect(case: Case) -> list[Evidence]:
    items: list[Evidence] = []
    stdlib = set(sys.stdlib_module_names)
    for changed in sorted(case.files, key=lambda f: f.path):
        path = changed.path
        name = PurePosixPath(path).name
        if go.owns(path):
            removed = go.removed_lines(case.diff, changed.old_path or path)
            for mechanism, line, summary, severity in go.harness_changes(path, changed.status, changed.content,
                                                                         _lines(changed), removed):
                items.append(_evidence(mechanism, path, line, summary, severity))
            continue
        if javascript.owns(path) or javascript.is_harness_path(path):
            removed = go.removed_lines(case.diff, changed.old_path or path)
            for mechanism, line, summary, severity in javascript.harness_changes(
                    path, changed.status, changed.content, _lines(changed), removed):
                items.append(_evidence(mechanism, path, line, summary, severity))
            continue
        if changed.status == "removed":
            if is_test_path(path) and path.endswith(".py"):
                items.append(_evidence("deleted-test", path, None, f"{path}: a test file is deleted",
                                       "medium"))
            continue
        if name in STARTUP_FILES or name.endswith(".pth"):
            items.append(_evidence("startup-hook", path, None, f"{path} runs at interpreter start-up "
                                   "(sitecustomize/usercustomize/.pth)", "high"))
        module = name[:-3] if name.endswith(".py") else ""
        parent = str(PurePosixPath(path).parent)
        if module in stdlib and parent in (".", "src") and changed.status == "added":
            items.append(_evidence("stdlib-shadow", path, None, f"{path} is named like the standard library's "
                                   f"`{module}` and can shadow it", "high", module=module))
        if name == "conftest.py":
            items.append(_evidence("conftest", path, None, f"{path} is {changed.status}: it runs inside every "
                                   "test session below it", "medium", status=changed.status))
        for number, text in _lines(changed):
            hook = HOOK_DEF.match(text)
            if hook and hook.group(1) in OUTCOME_HOOKS:
                items.append(_evidence("hook", path, number, f"{path}:{number} implements {hook.group(1)}, a hook "
                                       "that can change which tests run or what they report", "high",
                                       hook=hook.group(1)))
            if name in PYTEST_CONFIGS and CONFIG_KEYS.match(text):
                key = CONFIG_KEYS.match(text)
                strong = key is not None and key.group(1) == "addopts" and bool(STRONG_ADDOPTS.search(text))
                items.append(_evidence("config", path, number, f"{path}:{number} changes pytest's configuration "
                                       f"({text.strip()[:80]})", "high" if strong else "medium",
                                       setting=key.group(1) if key else None))
            if is_test_path(path) and SKIP_MARK.search(text) and changed.status != "added":
                items.append(_evidence("skip", path, number, f"{path}:{number} adds a skip or xfail to an existing "
                                       "test file", "medium"))
    return items[:MAX_ITEMS]


class HarnessInspector:
    cpu_bound = True  # parses only: the court runs it in a thread (checks/court.py)
    id = ID

    async def investigate(self, case: Case, rubric: Rubric) -> DetectiveReport:
        return DetectiveReport(detective=ID, evidence=tuple(inspect(case)))


@register(ID, order=20, emits=("harness-change",))
def build(resources: CourtResources) -> HarnessInspector:
    return HarnessInspector()
