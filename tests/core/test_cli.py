"""`logomesh review` as a user runs it: formats, exit codes, determinism, an untouched working tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from checks.render import DOCS_URL
from tests.core.scenarios import SCENARIOS, build
from tests.review_schema import review_json

ROOT = Path(__file__).resolve().parents[2]
FAST = {"LOGOMESH_SANDBOX": "off", "LOGOMESH_EMBEDDING": "off", "LOGOMESH_RED_TEAM": "off",
        "LOGOMESH_LLM_PROVIDER": "offline"}


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **FAST, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "app.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=full_env, timeout=300)


def review(path: Path, name: str, *extra: str, home: Path) -> subprocess.CompletedProcess[str]:
    spec = SCENARIOS[name]
    return run("review", str(path), "--base", "main", "--head", "pr", "--title", spec["title"], "--body",
               spec["body"], *extra, env={"LOGOMESH_HOME": str(home)})


def test_json_is_the_only_thing_on_stdout_and_is_deterministic(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    first = review(repo, "clean", "--format", "json", home=tmp_path / "h1")
    second = review(repo, "clean", "--format", "json", home=tmp_path / "h2")
    assert first.returncode == 0, first.stderr
    data, again = review_json(first.stdout), review_json(second.stdout)
    assert data["schema_version"] == "1" and data["verdict"] in ("pass", "neutral")
    assert data["title"].startswith(("Pass · ", "Neutral · ")) and data["what_to_fix"]
    for key in ("rationale_score", "architecture_score", "testing_score", "logic_score", "cis_score",
                "red_penalty_applied", "intent_penalty", "red_analysis", "verdict", "evidence", "opinions",
                "dissent", "rubric", "inputs"):
        assert key in data["evaluation"]
    # the DBOM id names the record in each home (its signing key differs); the review itself is the same
    assert data.pop("dbom_id") in first.stderr and again.pop("dbom_id") in second.stderr
    assert data == again
    assert "logomesh:" in first.stderr  # progress goes to stderr


def test_a_failing_verdict_exits_1(tmp_path: Path) -> None:
    result = review(build(tmp_path, "shell"), "shell", "--format", "text", home=tmp_path / "h")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("LogoMesh verdict: FAIL")


def test_markdown_report_has_the_comment_sections(tmp_path: Path) -> None:
    result = review(build(tmp_path, "eval"), "eval", "--format", "markdown", home=tmp_path / "h")
    assert result.returncode == 0, result.stderr
    for section in ("<!-- logomesh:review -->", "**What to fix**", "| R intent", "<details>", "| Criterion | Ruling",
                    "**Evidence**", "`calc/ops.py:9`"):
        assert section in result.stdout, section
    assert "https://github.com/" not in result.stdout.replace(DOCS_URL, "")  # a local review links nowhere


def test_body_file_and_config_file(tmp_path: Path) -> None:
    repo = build(tmp_path, "eval")
    body = tmp_path / "body.md"
    body.write_text(SCENARIOS["eval"]["body"])
    config = tmp_path / "strict.yml"
    config.write_text("rejection_first: true\nthresholds: {pass: 0.9, fail: 0.6}\n")
    result = run("review", str(repo), "--base", "main", "--head", "pr", "--body-file", str(body), "--config",
                 str(config), "--format", "json", env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 1, result.stderr
    assert review_json(result.stdout)["verdict"] == "fail"


def test_base_branch_config_is_used_not_the_heads(tmp_path: Path) -> None:
    from tests.gitfixture import RepoBuilder

    repo = RepoBuilder(tmp_path / "cfg")
    repo.commit("base", {"a.py": "x = 1\n", ".logomesh.yml": "thresholds: {pass: 0.99}\n"})
    repo.branch("pr")
    repo.commit("weaken my own review", {".logomesh.yml": "thresholds: {pass: 0.01, fail: 0.0}\n",
                                         "a.py": "x = 2\n"})
    result = run("review", str(repo.path), "--base", "main", "--head", "pr", "--format", "json",
                 env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 0, result.stderr
    reasons = review_json(result.stdout)["evaluation"]["verdict_reasons"]
    assert "CIS" in reasons[0] and "pass ≥ 0.99" in reasons[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base", "nope", "--head", "pr"], "unknown revision 'nope'"),
        (["--base", "main", "--head", "--upload-pack=evil"], "unknown revision"),
        (["--base", "main", "--head", "pr", "--body", "x", "--body-file", "y"], "either --body or --body-file"),
        (["--base", "main", "--head", "pr", "--body-file", "/nonexistent/body.md"], "cannot read"),
    ],
)
def test_usage_and_input_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    repo = build(tmp_path, "clean")
    result = run("review", str(repo), *args, env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_not_a_repository_and_bad_config_exit_2(tmp_path: Path) -> None:
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


def test_the_working_tree_is_never_modified(tmp_path: Path) -> None:
    repo = build(tmp_path, "eval")
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)
    (repo / "scratch.txt").write_text("uncommitted work")
    before = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "-b"], capture_output=True,
                            text=True).stdout
    result = review(repo, "eval", "--format", "json", home=tmp_path / "h")
    assert result.returncode == 0, result.stderr
    review_json(result.stdout)
    after = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "-b"], capture_output=True,
                           text=True).stdout
    assert before == after
    assert (repo / "scratch.txt").read_text() == "uncommitted work"


def test_a_required_sandbox_that_is_missing_is_an_input_error(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    result = run("review", str(repo), "--base", "main", "--head", "pr",
                 env={"LOGOMESH_HOME": str(tmp_path / "h"), "LOGOMESH_SANDBOX": "docker",
                      "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert result.returncode == 2, result.stderr
    assert "error:" in result.stderr and "Traceback" not in result.stderr


def without_home(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who never set LOGOMESH_HOME (nor XDG_DATA_HOME), with ``home`` as ``$HOME``."""
    env = {k: v for k, v in os.environ.items() if k not in ("LOGOMESH_HOME", "XDG_DATA_HOME")}
    return {**env, **FAST, "PYTHONPATH": str(ROOT), "HOME": str(home), **extra}


def test_the_home_defaults_to_the_users_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from app.settings import load_settings

    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.delenv("LOGOMESH_HOME", raising=False)
    monkeypatch.delenv("LOGOMESH_DATABASE_URL", raising=False)
    monkeypatch.delenv("LOGOMESH_SIGNING_KEY_PATH", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    settings = load_settings()
    assert settings.home == tmp_path / "user" / ".local" / "share" / "logomesh"
    assert settings.database_url == f"sqlite+aiosqlite:///{settings.home / 'battles.db'}"
    assert settings.signing_key_path == settings.home / "keys"

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert load_settings().home == tmp_path / "xdg" / "logomesh"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # the XDG spec: a relative path is ignored
    assert load_settings().home == tmp_path / "user" / ".local" / "share" / "logomesh"

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LOGOMESH_HOME", str(tmp_path / "chosen"))
    assert load_settings().home == tmp_path / "chosen"
    assert load_settings(home=tmp_path / "passed").home == tmp_path / "passed"


def test_a_review_run_inside_the_repository_leaves_nothing_in_it(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    spec = SCENARIOS["clean"]

    def status() -> str:
        return subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--ignored", "-uall"],
                              capture_output=True, text=True, check=True).stdout

    before = status()
    result = subprocess.run([sys.executable, "-m", "app.cli.main", "review", ".", "--base", "main", "--head", "pr",
                             "--title", spec["title"], "--body", spec["body"], "--format", "json"],
                            capture_output=True, text=True, cwd=repo, env=without_home(tmp_path / "user"),
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert review_json(result.stdout)["dbom_id"] in result.stderr
    assert "logomesh: dbom " in result.stderr and "no longer used" not in result.stderr
    assert not (repo / ".logomesh").exists()
    assert status() == before  # nothing written into the repository, ignored files included
    data_home = tmp_path / "user" / ".local" / "share" / "logomesh"
    assert (data_home / "battles.db").is_file() and (data_home / "keys").is_dir()


def test_a_ledger_left_in_the_old_default_place_is_named_not_moved(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    spec = SCENARIOS["clean"]
    args = [sys.executable, "-m", "app.cli.main", "review", ".", "--base", "main", "--head", "pr", "--title",
            spec["title"], "--body", spec["body"], "--format", "json", "--quiet"]
    # an earlier version's run: ./.logomesh in the working directory
    earlier = subprocess.run(args, capture_output=True, text=True, cwd=repo, timeout=300,
                             env=without_home(tmp_path / "user", LOGOMESH_HOME=".logomesh"))
    assert earlier.returncode == 0, earlier.stderr
    assert review_json(earlier.stdout)["dbom_id"]  # recorded and named even with --quiet
    legacy = sorted(p.relative_to(repo) for p in (repo / ".logomesh").rglob("*"))
    assert Path(".logomesh/battles.db") in legacy

    now = subprocess.run(args, capture_output=True, text=True, cwd=repo, timeout=300,
                         env=without_home(tmp_path / "user"))
    assert now.returncode == 0, now.stderr
    notices = [line for line in now.stderr.splitlines() if "no longer used by default" in line]
    assert len(notices) == 1 and "LOGOMESH_HOME=" in notices[0], now.stderr  # even with --quiet
    assert sorted(p.relative_to(repo) for p in (repo / ".logomesh").rglob("*")) == legacy  # nothing migrated
    assert (tmp_path / "user" / ".local" / "share" / "logomesh" / "battles.db").is_file()

    chosen = subprocess.run(args, capture_output=True, text=True, cwd=repo, timeout=300,
                            env=without_home(tmp_path / "user", LOGOMESH_HOME=str(tmp_path / "chosen")))
    assert chosen.returncode == 0 and "no longer used" not in chosen.stderr


def test_without_an_engine_a_review_is_neutral_with_a_remedy_and_fail_on_not_measured_fails_it(
        tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    no_engine = {"LOGOMESH_HOME": str(tmp_path / "h"), "LOGOMESH_SANDBOX": "auto",
                 "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    args = ("review", str(repo), "--base", "main", "--head", "pr", "--format", "json")
    lenient = run(*args, env=no_engine)
    assert lenient.returncode == 0, lenient.stderr
    data = review_json(lenient.stdout)
    assert data["verdict"] == "neutral"
    unmeasured = next(f for f in data["what_to_fix"] if f["kind"] == "tests-not-measured")
    assert unmeasured["for_whom"] == "operator"
    assert "start the Docker engine, or set DOCKER_HOST" in unmeasured["detail"]
    assert "start the Docker engine" in lenient.stderr  # the notice says it too
    strict = run(*args, "--fail-on", "not-measured", env=no_engine)
    assert strict.returncode == 1, strict.stderr
    assert review_json(strict.stdout)["verdict"] == "neutral"
    assert run(*args, "--fail-on", "neutral", env=no_engine).returncode == 1


def test_an_empty_range_is_nothing_to_review_at_once(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    for head, output in (("main", "text"), ("main", "json"), ("main~0", "markdown")):
        result = run("review", str(repo), "--base", "main", "--head", head, "--format", output, "--fail-on",
                     "neutral", env={"LOGOMESH_HOME": str(tmp_path / "h"), "LOGOMESH_SANDBOX": "docker",
                                     "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
        assert result.returncode == 0, result.stderr  # nothing loaded, not even the required sandbox
        assert "nothing to review" in result.stdout and "veto" not in result.stdout
        if output == "json":
            data = review_json(result.stdout)
            assert data["nothing_to_review"] is True and data["evaluation"] is None
    assert not (tmp_path / "h").exists()  # no DBOM recorded, no key made
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "same", "main"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "nothing"], check=True)
    result = run("review", str(repo), "--base", "main", "--head", "same", env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 0 and "nothing to review" in result.stdout  # a commit that changes no file


def test_the_markdown_of_a_local_review_points_only_at_what_its_reader_has(tmp_path: Path) -> None:
    result = review(build(tmp_path, "shell"), "shell", "--format", "markdown", home=tmp_path / "h")
    dbom = next(line.split()[-1] for line in result.stderr.splitlines() if line.startswith("logomesh: dbom "))
    assert f"logomesh dbom show {dbom}" in result.stdout
    assert "check run" not in result.stdout and "/recheck" not in result.stdout


def test_the_shipped_review_schema_is_the_generated_one() -> None:
    from app.review.schema import SCHEMA_PATH, schema_text

    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), "run python -m app.review.schema"
