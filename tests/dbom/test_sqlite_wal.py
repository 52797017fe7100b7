"""Several processes opening one new SQLite database together all get it in WAL mode (the ledger's and the
spool's first open), instead of one of them failing with "database is locked"."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from app.sqlite_wal import enter_wal

PROCESSES, ROUNDS = 4, 25


def _open(path: str, barrier: object) -> str:
    barrier.wait()  # type: ignore[attr-defined]
    db = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        enter_wal(db.execute, wait_seconds=30)
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])
    except sqlite3.Error as exc:
        return repr(exc)
    finally:
        db.close()


@pytest.mark.slow
def test_processes_racing_to_open_a_new_database_all_enter_wal(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(PROCESSES) as pool:
        for n in range(ROUNDS):
            barrier = manager.Barrier(PROCESSES)
            path = str(tmp_path / f"race-{n}.db")
            assert pool.starmap(_open, [(path, barrier)] * PROCESSES) == ["wal"] * PROCESSES


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    calls: list[str] = []

    def execute(sql: str) -> None:
        calls.append(sql)
        raise sqlite3.OperationalError("disk I/O error")

    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        enter_wal(execute)
    assert calls == ["PRAGMA journal_mode = WAL"]


def test_a_lock_that_never_clears_gives_up_after_the_wait(tmp_path: Path) -> None:
    def execute(sql: str) -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enter_wal(execute, wait_seconds=0.05)
