"""The Red Agent confirming exploits inside the real, locked-down Docker sandbox (network off).

Runs the whole review through the engine, so whatever ``attach_sandbox`` builds is what the probes use.
Skipped until the Docker sandbox (``sandbox.docker_sandbox``) is part of the build, or when no Docker engine answers.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.red.test_cli_sarif import build, review

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("sandbox.docker_sandbox") is None,
                       reason="sandbox.docker_sandbox is not importable: the Docker sandbox is not part of this build"),
]


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False).returncode == 0


def test_probes_confirm_in_the_docker_sandbox(tmp_path: Path) -> None:
    if not docker_answers():
        pytest.skip("no Docker engine answers `docker info`")
    repo = build(tmp_path / "repo")
    out = tmp_path / "out.sarif"
    result = review(repo, tmp_path / "h", "--sarif", str(out), sandbox="docker")
    assert result.returncode in (0, 1), result.stderr
    red = json.loads(result.stdout)["evaluation"]["red_analysis"]
    findings = {f["id"].split(":")[0]: f for f in red["findings"]}
    assert findings["command-injection"]["confirmed"] is True
    assert findings["command-injection"]["severity"] == "critical"
    assert red["attack_successful"] is True and red["max_severity"] == "critical"
    assert "canary" in findings["command-injection"]["effect"]
