"""`logomesh dbom …` and `logomesh review` as a user runs them, against a real SQLite ledger."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from app.cli.main import cli
from app.ledger import open_ledger
from app.ledger.export import open_dsse
from app.ledger.keys import load_public_pem
from app.settings import load_settings
from tests.dbom.factory import entanglement, evaluation
from tests.review_schema import review_json

ROOT = Path(__file__).resolve().parents[2]
FAST = {"LOGOMESH_SANDBOX": "off", "LOGOMESH_EMBEDDING": "off", "LOGOMESH_RED_TEAM": "off",
        "LOGOMESH_LLM_PROVIDER": "offline"}


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real command line in a process of its own."""
    full = {**os.environ, **FAST, "PYTHONPATH": str(ROOT), "LOGOMESH_HOME": str(home),
            "LOGOMESH_DATABASE_URL": "", **env}
    return subprocess.run([sys.executable, "-m", "app.cli.main", *args], capture_output=True, text=True, env=full,
                          cwd=ROOT, timeout=300)


def invoke(home: Path, *args: str, **env: str) -> Result:
    """The same command line in this process (process start-up dominates these tests' time)."""
    full = {**FAST, "LOGOMESH_HOME": str(home), "LOGOMESH_DATABASE_URL": "", **env}
    return CliRunner().invoke(cli, list(args), env=full)


def seed(home: Path, count: int) -> list[str]:
    async def work() -> list[str]:
        ledger = await open_ledger(load_settings(home=home))
        try:
            ids = []
            for n in range(count):
                ev = evaluation(n)
                ids.append((await ledger.append(ev, installation_id=None, entanglement=entanglement(ev))).id)
            return ids
        finally:
            await ledger.close()

    return asyncio.run(work())


def test_verify_show_export_on_a_good_ledger(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = seed(home, 4)
    ok = invoke(home, "dbom", "verify", "--all")
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.startswith("OK: 4 record(s) in 1 log(s), 4 signed tree head(s)")
    one = invoke(home, "dbom", "verify", ids[1], "--json")
    assert one.exit_code == 0 and json.loads(one.stdout)["ok"] is True

    shown = json.loads(invoke(home, "dbom", "show", ids[2]).stdout)
    assert shown["id"] == ids[2] and shown["proof"]["leaf_index"] == 2
    page = invoke(home, "dbom", "show", ids[2], "--format", "html").stdout
    assert page.startswith("<!doctype html>") and ids[2] in page

    exported = invoke(home, "dbom", "export", ids[2], "--format", "dsse")
    assert exported.exit_code == 0, exported.stderr
    envelope = json.loads(exported.stdout)
    listed = json.loads(invoke(home, "dbom", "keys").stdout)["keys"]
    statement = open_dsse(envelope, {k["key_id"]: load_public_pem(k["public_key"]) for k in listed})
    assert statement["predicate"]["id"] == ids[2]


def test_verify_exits_1_and_says_what_broke(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = seed(home, 4)
    db = sqlite3.connect(home / "battles.db")
    with db:
        db.execute("UPDATE dbom_records SET cis_score = 0.99 WHERE id = ?", (ids[1],))
        db.execute("DELETE FROM dbom_records WHERE id = ?", (ids[2],))
    db.close()
    result = run(home, "dbom", "verify", "--all")
    assert result.returncode == 1
    assert f"BROKEN [record] local record {ids[1]} (leaf 1): column cis_score is 0.99" in result.stdout
    assert "[sequence]" in result.stdout and "[consistency]" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("FAILED: 3 record(s)")
    assert invoke(home, "dbom", "verify", ids[1]).exit_code == 1


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = seed(home, 1)
    assert invoke(home, "dbom", "verify").exit_code == 2
    assert invoke(home, "dbom", "verify", ids[0], "--all").exit_code == 2
    missing = invoke(home, "dbom", "verify", "0" * 32)
    assert missing.exit_code == 2 and "no DBOM with id" in missing.stderr
    assert invoke(home, "dbom", "export", "0" * 32).exit_code == 2
    assert invoke(home, "dbom", "show", "nope").exit_code == 2
    bad = invoke(home, "dbom", "verify", "--all", LOGOMESH_DATABASE_URL="mysql://x@localhost/db")
    assert bad.exit_code == 2 and "unsupported database" in bad.stderr
    down = invoke(home, "dbom", "verify", "--all", LOGOMESH_DATABASE_URL="postgresql+asyncpg://u:secret@127.0.0.1:1/x")
    assert down.exit_code == 2 and "unavailable" in down.stderr and "secret" not in down.stderr


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_DATE": "@1767225600 +0000", "GIT_COMMITTER_DATE": "@1767225600 +0000"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def test_review_writes_its_dbom_and_prints_the_id(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "ops.py").write_text("def add(a, b):\n    return a + b\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Add add")
    _git(repo, "checkout", "-q", "-b", "pr")
    (repo / "ops.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    _git(repo, "commit", "-q", "-am", "Add sub")
    home = tmp_path / "home"
    args = ("review", str(repo), "--base", "main", "--head", "pr", "--title", "Add sub", "--format", "json")
    first = run(home, *args)
    assert first.returncode == 0, first.stderr
    dbom_lines = [line for line in first.stderr.splitlines() if line.startswith("logomesh: dbom ")]
    assert len(dbom_lines) == 1
    record_id = dbom_lines[0].split()[-1]
    shown = json.loads(invoke(home, "dbom", "show", record_id).stdout)
    report = review_json(first.stdout)
    assert report["dbom_id"] == record_id
    assert shown["evaluation"] == report["evaluation"]  # raw_result is exactly the review's JSON
    assert shown["dbom"]["entanglement"]["head_sha"] == shown["evaluation"]["inputs"]["head"]
    # the same review again: the same DBOM, not a second record
    second = run(home, *args)
    assert f"logomesh: dbom {record_id}" in second.stderr
    assert invoke(home, "dbom", "verify", "--all").stdout.startswith("OK: 1 record(s)")
