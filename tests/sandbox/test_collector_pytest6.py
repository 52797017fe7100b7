"""LogoMesh's collector plugin registers under pytest 6's hook specifications as well as the installed pytest's: a
project that pins pytest 6 is measured, not a run that ends before the collector could report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# a pytest 6 stand-in: pytest's version string and hook marker, and pytest 6.2.5's specification of the one hook
# whose argument was renamed in pytest 7 (``path`` then; ``collection_path`` since)
REGISTER = r"""
import json, os, sys, types
import pluggy
shim = types.ModuleType("pytest")
shim.__version__ = sys.argv[1]
shim.hookimpl = pluggy.HookimplMarker("pytest")
sys.modules["pytest"] = shim
sys.path[:0] = [sys.argv[2], sys.argv[3]]
import collector
spec = pluggy.HookspecMarker("pytest")
class Pytest6Spec:
    @spec(firstresult=True)
    def pytest_ignore_collect(self, path, config): ...
manager = pluggy.PluginManager("pytest")
manager.add_hookspecs(Pytest6Spec)
try:
    manager.register(collector.Collector("/tmp/out.json", [], sys.argv[4]))
except pluggy.PluginValidationError as exc:
    print(json.dumps({"registered": False, "error": str(exc)}))
    raise SystemExit(0)
outside = manager.hook.pytest_ignore_collect(path=sys.argv[5], config=None)
inside = manager.hook.pytest_ignore_collect(path=sys.argv[6], config=None)
print(json.dumps({"registered": True, "outside": outside, "inside": inside}))
"""


def _register(version: str, tmp_path: Path) -> dict[str, object]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "tests").mkdir()
    (repo / "root").symlink_to("/")
    out = subprocess.run([sys.executable, "-c", REGISTER, version, str(ROOT / "sandbox" / "inside"),
                          str(ROOT / "checks" / "red"), str(repo), str(repo / "root"), str(repo / "tests")],
                         capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_the_collector_registers_under_pytest_6_and_still_refuses_a_symlink_out_of_the_repository(
        tmp_path: Path) -> None:
    result = _register("6.2.5", tmp_path)
    assert result == {"registered": True, "outside": True, "inside": None}


def test_from_pytest_7_the_hook_takes_pytest_7_s_argument(tmp_path: Path) -> None:
    # the variant for pytest 7 and later names ``collection_path``, which pytest 6's specification refuses: the
    # version picks the variant
    result = _register("8.3.5", tmp_path)
    assert result["registered"] is False and "collection_path" in str(result["error"])
