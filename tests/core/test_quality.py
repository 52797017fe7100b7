"""Gates: lint over the tree and strict types over app/, checks/, rubric/, sandbox/, tests/ and bench/."""

from __future__ import annotations

import subprocess

import pytest

from tests.core.type_check import ROOT, TypeCheck, tool


def _tool(name: str) -> str:
    found = tool(name)
    if not found:
        pytest.fail(f"{name} is not installed; run scripts/setup.sh")
    return found


def test_ruff_is_clean() -> None:
    result = subprocess.run([_tool("ruff"), "check", "--output-format", "concise", "."], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_type_checks_strictly(type_check: TypeCheck) -> None:
    returncode, output = type_check.result()
    if returncode == -1:
        pytest.fail(output)
    assert returncode == 0, output
