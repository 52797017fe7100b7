"""`logomesh audit` as a user runs it: the report on stdout or in --out, identical bytes across runs, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.audit.fixtures import git

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = {"LOGOMESH_LLM_PROVIDER": "offline", "LOGOMESH_SANDBOX": "off", "LOGOMESH_EMBEDDING": "off",
           "LOGOMESH_RED_TEAM": "off"}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **OFFLINE, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "app.cli.main", "audit", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_two_runs_write_identical_bytes_and_exit_0(repo: Path, report: Path, tmp_path: Path) -> None:
    first = run(str(repo), "--report", str(report), "--out", str(tmp_path / "one.md"), cwd=tmp_path)
    second = run(str(repo), "--report", str(report), "--out", str(tmp_path / "two.md"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert first.stdout == ""  # the report went to --out
    assert (tmp_path / "one.md").read_bytes() == (tmp_path / "two.md").read_bytes()
    assert "audit pass" in first.stderr


def test_markdown_on_stdout_and_json_format(repo: Path, report: Path, tmp_path: Path) -> None:
    markdown = run(str(repo), "--report", str(report), "-q", cwd=tmp_path)
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.startswith("<!-- logomesh:audit -->")
    assert markdown.stderr.startswith("logomesh: dbom ") and len(markdown.stderr.splitlines()) == 1
    as_json = run(str(repo), "--format", "json", "-q", cwd=tmp_path)
    data = json.loads(as_json.stdout)
    assert data["rubric"]["name"] == "logomesh-auditor" and len(data["rulings"]) == 10


def test_a_failing_audit_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    git(bad, "init", "-q", "-b", "main")
    (bad / "run.py").write_text("import subprocess\n\ndef go(cmd):\n    subprocess.run(cmd, shell=True)\n")
    git(bad, "add", "-A")
    git(bad, "commit", "-q", "-m", "x")
    result = run(str(bad), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "CWE-78" in result.stdout and "run.py:4" in result.stdout


def test_input_errors_exit_2_with_a_clear_message(repo: Path, tmp_path: Path) -> None:
    missing = run(str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    not_pdf = tmp_path / "r.pdf"
    not_pdf.write_text("plain text")
    bad_report = run(str(repo), "--report", str(not_pdf), cwd=tmp_path)
    assert bad_report.returncode == 2 and "not a PDF" in bad_report.stderr
    rubric = tmp_path / "rubric.json"
    rubric.write_text(json.dumps({"name": "broken"}))
    bad_rubric = run(str(repo), "--rubric", str(rubric), cwd=tmp_path)
    assert bad_rubric.returncode == 2 and "invalid field" in bad_rubric.stderr
    usage = run(cwd=tmp_path)
    assert usage.returncode == 2


def test_the_report_names_its_dbom_and_the_ledger_vouches_for_the_file(
        repo: Path, report: Path, tmp_path: Path) -> None:
    out = tmp_path / "audit.md"
    first = run(str(repo), "--report", str(report), "--out", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    dbom_id = first.stderr.split("logomesh: dbom ", 1)[1].split()[0]
    text = out.read_text(encoding="utf-8")
    assert text.rstrip().endswith(f"`logomesh dbom verify {dbom_id} --document FILE` checks this file against it.")

    def dbom(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **OFFLINE, "PYTHONPATH": str(ROOT)}
        return subprocess.run([sys.executable, "-m", "app.cli.main", "dbom", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=300)

    ok = dbom("verify", dbom_id, "--document", str(out))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    out.write_text(text.replace("hallucination", "verified"), encoding="utf-8")
    edited = dbom("verify", dbom_id, "--document", str(out))
    assert edited.returncode == 1 and "[document]" in edited.stdout and "it was edited" in edited.stdout
    shown = json.loads(dbom("show", dbom_id).stdout)
    assert shown["dbom"]["schema"] == "logomesh.audit-dbom/v1" and shown["evaluation"]["repo"] == "courtroom"


def test_an_unreachable_ledger_loses_no_report(repo: Path, tmp_path: Path) -> None:
    env_db = {"LOGOMESH_DATABASE_URL": "postgresql+asyncpg://nobody:x@127.0.0.1:1/none"}
    result = subprocess.run([sys.executable, "-m", "app.cli.main", "audit", str(repo), "--out", str(tmp_path / "a.md")],
                            capture_output=True, text=True, cwd=tmp_path, timeout=300,
                            env={**os.environ, **OFFLINE, **env_db, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert "notice: DBOM not recorded" in result.stderr
    text = (tmp_path / "a.md").read_text(encoding="utf-8")
    assert text.startswith("<!-- logomesh:audit -->") and "logomesh:dbom" not in text
