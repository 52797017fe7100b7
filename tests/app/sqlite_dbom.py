"""A small SQLite-backed :class:`app.worker.jobs.DbomWriter` for the App's tests (the real ledger lives in app.ledger).

Each record stores the canonical evaluation, its SHA-256 and the entanglement; the id is derived from the
content and the previous record, so records are chained and a re-append of the same review is a new record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiosqlite

from checks.models import Evaluation


class SqliteDbom:
    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    @classmethod
    async def open(cls, path: Path) -> SqliteDbom:
        db = await aiosqlite.connect(path)
        await db.execute("CREATE TABLE IF NOT EXISTS dbom (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, "
                         "prev TEXT, installation_id INTEGER, evaluation TEXT, evaluation_sha256 TEXT, "
                         "entanglement TEXT)")
        await db.commit()
        return cls(db)

    async def append(self, evaluation: Evaluation, *, installation_id: int, entanglement: Mapping[str, Any]) -> str:
        canonical = evaluation.canonical_json()
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        async with self.db.execute("SELECT id FROM dbom ORDER BY seq DESC LIMIT 1") as cur:
            row = await cur.fetchone()
        prev = row[0] if row else ""
        ent = json.dumps(dict(entanglement), sort_keys=True)
        record_id = hashlib.sha256(f"{prev}|{digest}|{ent}".encode()).hexdigest()[:32]
        await self.db.execute("INSERT INTO dbom (id, prev, installation_id, evaluation, evaluation_sha256, "
                              "entanglement) VALUES (?, ?, ?, ?, ?, ?)",
                              (record_id, prev, installation_id, canonical, digest, ent))
        await self.db.commit()
        return record_id

    async def records(self) -> list[dict[str, Any]]:
        async with self.db.execute("SELECT id, prev, installation_id, evaluation_sha256, entanglement FROM dbom "
                                   "ORDER BY seq") as cur:
            rows = await cur.fetchall()
        return [{"id": r[0], "prev": r[1], "installation_id": r[2], "evaluation_sha256": r[3],
                 "entanglement": json.loads(r[4])} for r in rows]

    async def close(self) -> None:
        await self.db.close()
