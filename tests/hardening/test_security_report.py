"""scripts/security_report.py counts from the junit XML: held only when the test passed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "security_report.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("security_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _case(category: str, name: str) -> str:
    value = json.dumps({"category": category, "name": name}).replace('"', "&quot;")
    return f'<property name="case" value="{value}"/>'


def test_failed_and_skipped_cases_are_not_counted_as_held(tmp_path: Path) -> None:
    junit = tmp_path / "run.xml"
    junit.write_text(f"""<?xml version="1.0"?><testsuites><testsuite>
      <testcase classname="t" name="ok" time="1"><properties>{_case("fault", "redis restart")}
        {_case("input", "router fuzz example")}{_case("input", "router fuzz example")}</properties></testcase>
      <testcase classname="t" name="bad" time="1"><properties>{_case("attack", "recheck by stranger")}
        </properties><failure message="boom"/></testcase>
      <testcase classname="t" name="skip" time="0"><properties>{_case("fault", "docker down")}</properties>
        <skipped message="no docker"/></testcase>
    </testsuite></testsuites>""")
    report = _load()
    text = report.render(report.read_junit(junit), 3.0)
    assert "| Faults (injected / survived) | 1 | 1 | 0 | 1 |" in text
    assert "| Bad input (tried / rejected or handled cleanly) | 2 | 2 | 0 | 0 |" in text
    assert "| Attacks (tried / contained) | 1 | 0 | 1 | 0 |" in text
    assert "- ✗ recheck by stranger" in text and "FAILED `t::bad`: boom" in text
    assert "bad input 2 generated + 0 written" in text
