"""Signed deliveries the receiver could not enqueue wait on local disk until Redis returns.

GitHub does not redeliver a webhook that was answered with an error: a 503 while Redis restarts loses that push
for good. So a delivery whose signature verified but whose admission failed on Redis is written here (event,
delivery id and the raw body, in a SQLite file under ``settings.home``, synchronous and fsynced) and answered
202 ``spooled``. The receiver's drain task replays the spool, oldest first, through the same admission as a live
delivery (dedupe included) once Redis answers again, and deletes each entry only after it was admitted.

A delivery spooled twice (GitHub's manual redelivery during the outage) is kept once. The spool is bounded
(``max_entries``): past it the receiver answers 503 as before, rather than fill the disk.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.sqlite_wal import enter_wal

MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Spooled:
    delivery: str
    event: str
    body: bytes
    received_at: float


class SpoolFull(Exception):
    def __init__(self, entries: int) -> None:
        self.entries = entries
        super().__init__(f"the spool holds {entries} deliveries")


class Spool:
    def __init__(self, path: Path, max_entries: int = MAX_ENTRIES) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.max_entries = path, max_entries
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        enter_wal(self._db.execute)
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("CREATE TABLE IF NOT EXISTS spool (delivery TEXT PRIMARY KEY, event TEXT NOT NULL, "
                         "body BLOB NOT NULL, received_at REAL NOT NULL)")

    def put(self, delivery: str, event: str, body: bytes) -> bool:
        """Keep the delivery (False: it was spooled already)."""
        with self._lock:
            if len(self) >= self.max_entries:
                raise SpoolFull(len(self))
            cursor = self._db.execute("INSERT OR IGNORE INTO spool VALUES (?, ?, ?, ?)",
                                      (delivery, event, body, time.time()))
            return cursor.rowcount == 1

    def oldest(self, limit: int = 100) -> list[Spooled]:
        with self._lock:
            rows = self._db.execute("SELECT delivery, event, body, received_at FROM spool "
                                    "ORDER BY received_at, delivery LIMIT ?", (limit,)).fetchall()
        return [Spooled(str(d), str(e), bytes(b), float(t)) for d, e, b, t in rows]

    def remove(self, delivery: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM spool WHERE delivery = ?", (delivery,))

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM spool").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
