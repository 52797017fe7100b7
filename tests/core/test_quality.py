"""Gates: lint over the tree and strict types over app/, checks/, rubric/, sandbox/, tests/ and bench/."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    candidate = Path(sys.executable).with_name(name)
    found = str(candidate) if candidate.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed; run scripts/setup.sh")
    return found


def test_ruff_is_clean() -> None:
    result = subprocess.run([_tool("ruff"), "check", "--output-format", "concise", "."], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_type_checks_strictly() -> None:
    result = subprocess.run([_tool("mypy"), "--no-incremental", "app", "checks", "rubric", "sandbox", "tests", "bench"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
