"""Fixtures of the audit tests: the fixture repository and its PDF report, built fresh in a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.audit.fixtures import build_repo, build_report


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_repo(tmp_path / "courtroom")


@pytest.fixture
def report(tmp_path: Path) -> Path:
    return build_report(tmp_path / "report.pdf")
