"""Putting a SQLite database in WAL mode when several processes may open it for the first time together.

SQLite answers "database is locked" at once, without calling its busy handler, to a connection whose change of
journal mode races another's on a new database; ``busy_timeout`` does not cover it. Both SQLite databases of
LogoMesh (the ledger's embedded default and the receiver's spool) are opened by several processes.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

WAL_WAIT_SECONDS = 60


def enter_wal(execute: Callable[[str], Any], *, wait_seconds: float = WAL_WAIT_SECONDS) -> None:
    """Run ``PRAGMA journal_mode = WAL`` through ``execute``, retrying a locked database for ``wait_seconds``."""
    deadline = time.monotonic() + wait_seconds
    pause = 0.01
    while True:
        try:
            execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if ("locked" not in message and "busy" not in message) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
