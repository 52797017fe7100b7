"""`logomesh review` as a user runs it: formats, exit codes, determinism, an untouched working tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.scenarios import SCENARIOS, build

ROOT = Path(__file__).resolve().parents[2]
FAST = {"LOGOMESH_SANDBOX": "off", "LOGOMESH_EMBEDDING": "off", "LOGOMESH_RED_TEAM": "off",
        "LOGOMESH_LLM_PROVIDER": "offline"}


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **FAST, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=full_env, timeout=300)


def review(path: Path, name: str, *extra: str, home: Path) -> subprocess.CompletedProcess[str]:
    spec = SCENARIOS[name]
    return run("review", str(path), "--base", "main", "--head", "pr", "--title", spec["title"], "--body",
               spec["body"], *extra, env={"LOGOMESH_HOME": str(home)})


def test_json_is_the_only_thing_on_stdout_and_is_deterministic(tmp_path):
    repo = build(tmp_path, "clean")
    first = review(repo, "clean", "--format", "json", home=tmp_path / "h1")
    second = review(repo, "clean", "--format", "json", home=tmp_path / "h2")
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["verdict"] in ("pass", "neutral")
    for key in ("rationale_score", "architecture_score", "testing_score", "logic_score", "cis_score",
                "red_penalty_applied", "intent_penalty", "red_analysis", "verdict", "evidence", "opinions",
                "dissent", "rubric", "inputs"):
        assert key in data
    assert first.stdout == second.stdout
    assert "logomesh:" in first.stderr  # progress goes to stderr


def test_a_failing_verdict_exits_1(tmp_path):
    result = review(build(tmp_path, "shell"), "shell", "--format", "text", home=tmp_path / "h")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("LogoMesh verdict: FAIL")


def test_markdown_report_has_the_comment_sections(tmp_path):
    result = review(build(tmp_path, "eval"), "eval", "--format", "markdown", home=tmp_path / "h")
    assert result.returncode == 0, result.stderr
    for section in ("<!-- logomesh:review -->", "| R — rationale", "### Judges", "### Chief Justice",
                    "### Evidence", "calc/ops.py:9"):
        assert section in result.stdout


def test_body_file_and_config_file(tmp_path):
    repo = build(tmp_path, "eval")
    body = tmp_path / "body.md"
    body.write_text(SCENARIOS["eval"]["body"])
    config = tmp_path / "strict.yml"
    config.write_text("rejection_first: true\nthresholds: {pass: 0.9, fail: 0.6}\n")
    result = run("review", str(repo), "--base", "main", "--head", "pr", "--body-file", str(body), "--config",
                 str(config), "--format", "json", env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["verdict"] == "fail"


def test_base_branch_config_is_used_not_the_heads(tmp_path):
    from tests.gitfixture import RepoBuilder

    repo = RepoBuilder(tmp_path / "cfg")
    repo.commit("base", {"a.py": "x = 1\n", ".logomesh.yml": "thresholds: {pass: 0.99}\n"})
    repo.branch("pr")
    repo.commit("weaken my own review", {".logomesh.yml": "thresholds: {pass: 0.01, fail: 0.0}\n",
                                         "a.py": "x = 2\n"})
    result = run("review", str(repo.path), "--base", "main", "--head", "pr", "--format", "json",
                 env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 0, result.stderr
    assert "CIS" in json.loads(result.stdout)["verdict_reasons"][0]
    assert "pass ≥ 0.99" in json.loads(result.stdout)["verdict_reasons"][0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base", "nope", "--head", "pr"], "unknown revision 'nope'"),
        (["--base", "main", "--head", "--upload-pack=evil"], "unknown revision"),
        (["--base", "main", "--head", "pr", "--body", "x", "--body-file", "y"], "either --body or --body-file"),
        (["--base", "main", "--head", "pr", "--body-file", "/nonexistent/body.md"], "cannot read"),
    ],
)
def test_usage_and_input_errors_exit_2(tmp_path, args, message):
    repo = build(tmp_path, "clean")
    result = run("review", str(repo), *args, env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_not_a_repository_and_bad_config_exit_2(tmp_path):
    (tmp_path / "plain").mkdir()
    result = run("review", str(tmp_path / "plain"), "--base", "main", "--head", "HEAD")
    assert result.returncode == 2 and "not a git repository" in result.stderr
    repo = build(tmp_path, "clean")
    bad = tmp_path / "bad.yml"
    bad.write_text("thresholds: {pass: 7}\n")
    result = run("review", str(repo), "--base", "main", "--head", "pr", "--config", str(bad))
    assert result.returncode == 2 and "thresholds.pass" in result.stderr
    result = run("review", str(repo), "--format", "yaml")
    assert result.returncode == 2


def test_the_working_tree_is_never_modified(tmp_path):
    repo = build(tmp_path, "eval")
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)
    (repo / "scratch.txt").write_text("uncommitted work")
    before = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "-b"], capture_output=True,
                            text=True).stdout
    result = review(repo, "eval", "--format", "json", home=tmp_path / "h")
    assert result.returncode == 0, result.stderr
    after = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "-b"], capture_output=True,
                           text=True).stdout
    assert before == after
    assert (repo / "scratch.txt").read_text() == "uncommitted work"


def test_a_required_sandbox_that_is_missing_is_an_input_error(tmp_path):
    repo = build(tmp_path, "clean")
    result = run("review", str(repo), "--base", "main", "--head", "pr",
                 env={"LOGOMESH_HOME": str(tmp_path / "h"), "LOGOMESH_SANDBOX": "docker",
                      "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert result.returncode == 2, result.stderr
    assert "error:" in result.stderr and "Traceback" not in result.stderr
