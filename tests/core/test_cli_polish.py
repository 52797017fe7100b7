"""The command line as a demanding user meets it: help that says enough, --version, a first line at once,
timed progress, a quiet --quiet, errors that name the file or the variable at fault, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner, Result

from app.cli.console import Progress
from app.cli.main import ENVIRONMENT, cli, package_version
from app.settings import Settings, SettingsError, load_settings
from tests.core.scenarios import SCENARIOS, build

ROOT = Path(__file__).resolve().parents[2]
FAST = {"LOGOMESH_SANDBOX": "off", "LOGOMESH_EMBEDDING": "off", "LOGOMESH_RED_TEAM": "off",
        "LOGOMESH_LLM_PROVIDER": "offline"}
PROGRESS = re.compile(r"^logomesh: \[ *\d+\.\ds\] \S")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **FAST, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "app.cli.main", *args], capture_output=True, text=True, cwd=ROOT,
                          env=full_env, timeout=300)


def invoke(*args: str, **env: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={**FAST, **env}, prog_name="logomesh")


def review_args(repo: Path, name: str = "clean") -> list[str]:
    spec = SCENARIOS[name]
    return ["review", str(repo), "--base", "main", "--head", "pr", "--title", spec["title"], "--body", spec["body"]]


# --- help and version -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--help"], ["review", "--help"], ["-h"]])
def test_help_lists_exit_codes_environment_and_an_example(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    text = result.output
    assert re.search(r"^ +0 +pass or neutral", text, re.M)
    assert re.search(r"^ +1 +fail", text, re.M)
    assert re.search(r"^ +2 +usage or input error", text, re.M)
    assert "offline|anthropic|openai" in text  # every provider the settings accept
    for name in ("LOGOMESH_HOME", "LOGOMESH_SANDBOX", "LOGOMESH_LLM_PROVIDER", "LOGOMESH_LLM_API_KEY",
                 "LOGOMESH_RUBRIC_PATH"):
        assert re.search(rf"^ +{name} ", text, re.M), name
    assert re.search(r"^ +logomesh review \S", text, re.M)


def test_review_help_renders_flags_as_flags() -> None:
    text = invoke("review", "--help").output
    assert re.search(r"^ +-q, --quiet +\S", text, re.M)
    assert re.search(r"^ +--base REF +The base ref", text, re.M)
    assert re.search(r"^ +--format FORMAT +text, markdown or json", text, re.M)


def _commands(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _commands(sub, (*path, name))
    return found


def test_no_help_page_shows_a_type_after_a_flag() -> None:
    for path in _commands(typer.main.get_command(cli)):
        result = invoke(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, path
        assert "-h, --help  " in result.output or "-h, --help " in result.output, path


def test_the_environment_in_the_help_names_real_settings() -> None:
    fields = {"LOGOMESH_" + name.upper() for name in Settings.model_fields}
    assert {name for name, _ in ENVIRONMENT} <= fields


def test_version_option_and_command() -> None:
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"logomesh {package_version()}\n"
    assert re.fullmatch(r"logomesh \d+\.\d+\S*\n", result.stdout)
    eager = invoke("--version", "review", "--no-such-option")  # eager: answered before anything else is parsed
    assert eager.exit_code == 0 and eager.stdout == result.stdout
    assert invoke("version").stdout == f"{package_version()}\n"


def test_the_command_line_loads_nothing_heavy_for_help_and_version() -> None:
    code = ("import sys\nfrom app.cli.main import cli\n"
            "for args in (['--help'], ['--version'], ['review', '--help']):\n"
            "    try:\n        cli(args, prog_name='logomesh')\n    except SystemExit:\n        pass\n"
            "print('--- modules'); print('\\n'.join(sorted(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split("--- modules\n", 1)[1].split())
    heavy = {"torch", "sentence_transformers", "transformers", "numpy", "sqlalchemy", "cryptography", "docker",
             "yaml", "jsonschema", "pydantic_settings", "app.review.assembly", "app.review.embeddings", "app.ledger",
             "app.audit.run", "app.review.gitrepo", "app.settings", "checks.court", "rubric", "sandbox"}
    assert not heavy & loaded


# --- progress and --quiet -------------------------------------------------------------------------------------

def test_progress_lines_carry_the_seconds_since_the_start(capsys: pytest.CaptureFixture[str]) -> None:
    now = [100.0]
    say = Progress(clock=lambda: now[0])
    now[0] = 103.24
    say("sandbox: running tests…")
    now[0] = 1234.5
    say("judges: [bold]not markup[/bold]")
    Progress(quiet=True, clock=lambda: now[0])("never printed")
    assert capsys.readouterr().err == ("logomesh: [  3.2s] sandbox: running tests…\n"
                                       "logomesh: [1134.5s] judges: [bold]not markup[/bold]\n")


def test_a_review_says_where_it_is_at_once_and_times_every_step(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    result = run(*review_args(repo), "--format", "json", env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 0, result.stderr
    json.loads(result.stdout)
    lines = result.stderr.splitlines()
    # the first two lines come before any slow step (their times are not asserted: the machine may be loaded)
    assert re.fullmatch(r"logomesh: \[ *\d+\.\ds\] review main\.\.\.pr of .*clean", lines[0]), lines[0]
    assert re.fullmatch(r"logomesh: \[ *\d+\.\ds\] preparing the offline judges…", lines[1]), lines[1]
    assert any(" verdict " in line for line in lines)
    assert re.fullmatch(r"logomesh: dbom [0-9a-f]{32}", lines[-1]), lines[-1]  # what scripts grep: no time
    assert all(PROGRESS.match(line) for line in lines[:-1]), result.stderr


def test_quiet_json_is_only_json_and_the_dbom_is_still_recorded(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    home = tmp_path / "h"
    result = run(*review_args(repo), "--format", "json", "-q", env={"LOGOMESH_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(result.stdout)["verdict"] in ("pass", "neutral")
    verified = invoke("dbom", "verify", "--all", LOGOMESH_HOME=str(home), LOGOMESH_DATABASE_URL="")
    assert verified.exit_code == 0 and verified.stdout.startswith("OK: 1 record(s)"), verified.output


def test_quiet_still_prints_errors(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    result = run("review", str(repo), "--head", "nope", "-q", env={"LOGOMESH_HOME": str(tmp_path / "h")})
    assert result.returncode == 2
    assert result.stderr.startswith("error: unknown revision 'nope'") and len(result.stderr.splitlines()) == 1


def test_errors_are_printed_as_written_never_as_markup(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    result = invoke("review", str(repo), "--head", "[red]nope[/red]", "-q", LOGOMESH_HOME=str(tmp_path / "h"))
    assert result.exit_code == 2
    assert "'[red]nope[/red]'" in result.stderr


def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    repo = build(tmp_path, "clean")
    env = {**os.environ, **FAST, "PYTHONPATH": str(ROOT), "LOGOMESH_HOME": str(tmp_path / "h")}
    for _attempt in range(5):
        # a shell without job control starts background commands with Ctrl-C ignored, and children inherit that
        with subprocess.Popen([sys.executable, "-m", "app.cli.main", *review_args(repo)], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as process:
            assert process.stderr is not None
            first = process.stderr.readline()
            assert " review main...pr of " in first
            process.send_signal(signal.SIGINT)
            _out, rest = process.communicate(timeout=120)
        if process.returncode == 0 and "logomesh: dbom " in rest:
            continue  # this machine let the whole review (under a second) finish before the signal: again
        break
    assert process.returncode == 130, rest
    assert "error: interrupted" in rest
    assert "Traceback" not in rest and "Aborted" not in rest


# --- errors in --config name the file ----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("thresholds: {pass: 7}\n", "invalid field 'thresholds.pass'"),
        ("version: 2\n", "invalid field 'version': this LogoMesh reads version 1 (got 2)"),
        ("thresholds: {pass: 0.4, fail: 0.6}\n", "invalid field 'thresholds': fail (0.6) must not exceed pass (0.4)"),
        ("thresholds: [\n", "not valid YAML"),
    ],
)
def test_a_bad_config_file_is_named_in_the_error(tmp_path: Path, text: str, expected: str) -> None:
    repo = build(tmp_path, "clean")
    bad = tmp_path / "bad.yml"
    bad.write_text(text)
    result = invoke(*review_args(repo), "--config", str(bad), "-q", LOGOMESH_HOME=str(tmp_path / "h"))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {bad}: ") and len(result.stderr.splitlines()) == 1
    assert expected in result.stderr
    assert ".logomesh.yml" not in result.stderr


def test_a_bad_config_on_the_base_branch_is_named_as_logomesh_yml(tmp_path: Path) -> None:
    from tests.gitfixture import RepoBuilder

    repo = RepoBuilder(tmp_path / "cfg")
    repo.commit("base", {"a.py": "x = 1\n", ".logomesh.yml": "version: 2\n"})
    repo.branch("pr")
    repo.commit("change", {"a.py": "x = 2\n"})
    result = invoke("review", str(repo.path), "--base", "main", "--head", "pr", LOGOMESH_HOME=str(tmp_path / "h"))
    assert result.exit_code == 2
    assert "error: .logomesh.yml: invalid field 'version'" in result.stderr


@pytest.mark.parametrize(("content", "why"), [(b"\xff\xfe\x00binary", "not UTF-8 text"), (None, "No such file")])
def test_an_unreadable_config_or_body_file_is_an_input_error(
        tmp_path: Path, content: bytes | None, why: str) -> None:
    repo = build(tmp_path, "clean")
    target = tmp_path / "file.yml"
    if content is not None:
        target.write_bytes(content)
    for option in ("--config", "--body-file"):
        args = ["review", str(repo), "--head", "pr", option, str(target)]
        result = invoke(*args, LOGOMESH_HOME=str(tmp_path / "h"))
        assert result.exit_code == 2, (option, result.output)
        assert f"error: cannot read {target}: {why}" in result.stderr
        assert "Traceback" not in result.output


# --- settings errors name the variable ----------------------------------------------------------------------

@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.chdir(tmp_path)  # no .env
    for name in list(os.environ):
        if name.startswith("LOGOMESH_"):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("LOGOMESH_PUBLIC_URL", "example.com",
         "LOGOMESH_PUBLIC_URL: must be an absolute http(s) URL, e.g. https://logomesh.example.com"),
        ("LOGOMESH_PUBLIC_URL", "https://", "LOGOMESH_PUBLIC_URL: must be an absolute http(s) URL"),
        ("LOGOMESH_GITHUB_API_URL", "ftp://github.example.com",
         "LOGOMESH_GITHUB_API_URL: must be an absolute http(s) URL, e.g. https://api.github.com"),
        ("LOGOMESH_LLM_BASE_URL", "api.anthropic.com", "LOGOMESH_LLM_BASE_URL: must be an absolute http(s) URL"),
        ("LOGOMESH_SANDBOX_INDEX_URL", "pypi.org/simple", "LOGOMESH_SANDBOX_INDEX_URL: must be an absolute"),
        ("LOGOMESH_SANDBOX", "maybe", "LOGOMESH_SANDBOX: must be 'auto', 'docker' or 'off'; got 'maybe'"),
        ("LOGOMESH_PORT", "eighty", "LOGOMESH_PORT: must be a whole number; got 'eighty'"),
        ("LOGOMESH_PORT", "70000", "LOGOMESH_PORT: must be less than or equal to 65535; got '70000'"),
        ("LOGOMESH_REVIEW_DRAFTS", "perhaps", "LOGOMESH_REVIEW_DRAFTS: must be true or false"),
        ("LOGOMESH_SANDBOX_INDEX_HOSTS", "[oops", "LOGOMESH_SANDBOX_INDEX_HOSTS: must be host[:port] names"),
        ("LOGOMESH_REDIS_URL", "http://user:hunter2@redis", "LOGOMESH_REDIS_URL: must be a redis:// or rediss://"),
    ],
)
def test_a_bad_setting_names_its_variable(
        clean_env: pytest.MonkeyPatch, name: str, value: str, message: str) -> None:
    clean_env.setenv(name, value)
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert err.value.variable == name
    assert str(err.value).startswith(message)
    assert "hunter2" not in str(err.value)  # a string setting's value is never echoed: it may hold a password


def test_the_command_line_prints_the_settings_error(tmp_path: Path) -> None:
    result = invoke("review", str(tmp_path), LOGOMESH_PUBLIC_URL="example.com")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "error: LOGOMESH_PUBLIC_URL: must be an absolute http(s) URL, e.g. https://logomesh.example.com")
    served = invoke("serve", LOGOMESH_PUBLIC_URL="example.com", LOGOMESH_WEBHOOK_SECRET="s")
    assert served.exit_code == 2 and "LOGOMESH_PUBLIC_URL: must be an absolute" in served.stderr


def test_an_empty_variable_means_unset(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("HOME", str(tmp_path / "user"))
    clean_env.delenv("XDG_DATA_HOME", raising=False)
    for name in ("LOGOMESH_HOME", "LOGOMESH_PUBLIC_URL", "LOGOMESH_SANDBOX", "LOGOMESH_PORT",
                 "LOGOMESH_SANDBOX_INDEX_HOSTS"):
        clean_env.setenv(name, "")
    settings = load_settings()
    assert settings.home == tmp_path / "user" / ".local" / "share" / "logomesh"  # not ".": the key stays out
    assert settings.public_url is None and settings.sandbox == "auto" and settings.port == 8000
    assert settings.sandbox_index_hosts == ()


def test_index_hosts_take_commas_or_json(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LOGOMESH_SANDBOX_INDEX_HOSTS", "pypi.internal, files.internal:8443")
    assert load_settings().sandbox_index_hosts == ("pypi.internal", "files.internal:8443")
    clean_env.setenv("LOGOMESH_SANDBOX_INDEX_HOSTS", '["pypi.internal"]')
    assert load_settings().sandbox_index_hosts == ("pypi.internal",)


def test_base_urls_keep_one_spelling(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LOGOMESH_PUBLIC_URL", "https://logomesh.example.com/")
    clean_env.setenv("LOGOMESH_GITHUB_API_URL", "https://github.example.com/api/v3/")
    settings = load_settings()
    assert settings.public_url == "https://logomesh.example.com"
    assert settings.github_api_url == "https://github.example.com/api/v3"
