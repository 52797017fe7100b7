"""The collector records which tests ran each mutated line, and only those lines: babel#1291's head run (7,500
tests through ``babel/dates.py``) wrote a coverage map of every line of the file, outgrew the run's record, and
the run came back as one that had not reported (T not measured)."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def collector_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(ROOT / "checks" / "red"))  # sightings.py, beside the collector in the sandbox
    monkeypatch.syspath_prepend(str(ROOT / "sandbox" / "inside"))
    yield importlib.import_module("collector")
    sys.modules.pop("collector", None)


MODULE = "def one(x):\n    y = x + 1\n    return y\n\n\ndef two(x):\n    return x * 2\n"


def _record(tmp_path: Path, collector_module: ModuleType, lines: dict[str, list[int]] | None) -> dict[str, object]:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "calc.py").write_text(MODULE)
    out = tmp_path / "record.json"
    plugin = collector_module.Collector(str(out), ["pkg/calc.py"], str(repo), lines)
    plugin.pytest_configure(None)
    try:
        namespace: dict[str, object] = {}
        exec(compile(MODULE, str(repo / "pkg" / "calc.py"), "exec"), namespace)
        for test in ("tests/test_calc.py::test_one", "tests/test_calc.py::test_two"):
            plugin.cov.switch_context(test)
            function = namespace["one" if test.endswith("one") else "two"]
            assert callable(function)
            function(1)
        plugin.cov.switch_context("")
    finally:
        plugin.finish(0, 0.1)
    record = json.loads(out.read_text())
    assert isinstance(record, dict)
    return record


def test_only_the_mutated_lines_tests_are_recorded(tmp_path: Path, collector_module: ModuleType) -> None:
    record = _record(tmp_path, collector_module, {"pkg/calc.py": [2]})
    assert record["coverage"] == {"pkg/calc.py": {"2": ["tests/test_calc.py::test_one"]}}


def test_without_lines_named_every_line_is_recorded(tmp_path: Path, collector_module: ModuleType) -> None:
    coverage = _record(tmp_path, collector_module, None)["coverage"]
    assert isinstance(coverage, dict)
    assert coverage["pkg/calc.py"]["7"] == ["tests/test_calc.py::test_two"]
    assert {"2", "3", "7"} <= set(coverage["pkg/calc.py"])
