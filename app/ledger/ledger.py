"""The ledger: append signed DBOMs to per-installation Merkle logs, serve proofs, verify everything.

An append is one transaction that locks the log's head row, takes the next leaf index, stores the record with
its ``raw_result``, advances the head's frontier and root, and stores a signed tree head for the new size.
On PostgreSQL the lock is ``SELECT … FOR UPDATE`` on the head row; on SQLite the whole database is locked by
``BEGIN IMMEDIATE`` (see :mod:`app.ledger.engine`). Appending a body that is already in the log returns the
stored record: deliveries are at least once, the log stays free of duplicates. The record id is the body's leaf
hash, so the same decision (same evaluation hash, entanglement and installation) always has the same id; it is
looked up under the lock, so two workers appending it at once store it once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import column, func, inspect, select, table, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.ledger import schema
from app.ledger.engine import display_url, make_engine
from app.ledger.errors import LedgerUnavailable, RecordNotFound
from app.ledger.keys import ALGORITHM, KeyRing, load_public_pem, public_pem, verify_signature
from app.ledger.verify import VerifyReport, verify_log
from app.settings import Settings
from checks.audit import AuditResult
from checks.dbom import (
    AnyBody,
    AuditEntanglement,
    DbomRecord,
    Entanglement,
    b64decode,
    b64encode,
    build_audit_body,
    build_body,
    canonical_json,
    consistency_proof,
    evaluation_payload,
    frontier_append,
    frontier_root,
    inclusion_proof,
    parse_body,
    record_id_for,
    record_signing_payload,
    tree_head_payload,
)
from checks.models import Evaluation

MIGRATIONS = Path(__file__).parent / "migrations"
MIGRATION_LOCK = 0x4C4F474F  # "LOGO": serialises migrations of several workers starting at once
LOCAL_LOG = "local"


def log_id_for(installation_id: int | None) -> str:
    return LOCAL_LOG if installation_id is None else f"installation-{installation_id}"


# The newest migration in ``migrations/versions`` (a test holds this to alembic's own reading of the scripts).
HEAD_REVISION = "0001"
VERSION_TABLE = "logomesh_ledger_version"  # migrations/env.py names it for alembic


def _upgrade(connection: Connection) -> None:
    """Run the migrations the database lacks. A database already at the newest one is told by one query, without
    loading alembic (seconds of imports and script reading that a CLI review would pay on every run)."""
    if inspect(connection).has_table(VERSION_TABLE):
        version = table(VERSION_TABLE, column("version_num"))
        current = connection.execute(select(version.c.version_num)).scalars().all()
        if current == [HEAD_REVISION]:
            return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def _now() -> datetime:
    return datetime.now(UTC)


def _as_utc(value: datetime) -> datetime:
    # SQLite hands back naive datetimes for timezone-aware columns
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def record_from_row(row: Mapping[Any, Any]) -> DbomRecord:
    return DbomRecord(
        id=row["id"], log_id=row["log_id"], leaf_index=row["leaf_index"], leaf_hash=row["leaf_hash"],
        body=parse_body(json.loads(row["body"])), evaluation_sha256=row["evaluation_sha256"],
        raw_result=json.loads(row["raw_result"]), signature=row["signature"], key_id=row["key_id"],
        created_at=_as_utc(row["created_at"]),
    )


class Ledger:
    """The DBOM store of one database. Build it with :func:`open_ledger`; close it with :meth:`close`."""

    def __init__(self, engine: AsyncEngine, keyring: KeyRing, url: str) -> None:
        self.engine = engine
        self.keyring = keyring
        self.url = url

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    # --- writing ------------------------------------------------------------------------------------------

    async def append(self, evaluation: Evaluation, *, installation_id: int | None,
                     entanglement: Entanglement) -> DbomRecord:
        """Sign the evaluation's DBOM and append it to the installation's log (idempotent)."""
        payload = evaluation_payload(evaluation)
        body = build_body(payload, installation_id=installation_id, entanglement=entanglement)
        return await self._append(body, payload)

    async def append_audit(self, result: AuditResult, *, installation_id: int | None,
                           entanglement: AuditEntanglement) -> DbomRecord:
        """Sign a repository audit's DBOM and append it to the installation's (or the local) log (idempotent)."""
        payload = result.model_dump(mode="json")
        body = build_audit_body(payload, installation_id=installation_id, entanglement=entanglement)
        return await self._append(body, payload)

    async def _append(self, body: AnyBody, payload: Mapping[str, Any]) -> DbomRecord:
        leaf = body.leaf_hash()
        rid = record_id_for(leaf)
        key = self.keyring.active
        signature = b64encode(key.sign(record_signing_payload(body)))
        log_id = log_id_for(body.installation_id)
        try:
            async with self.engine.begin() as conn:
                head = await self._lock_head(conn, log_id)
                # under the lock: a concurrent append of the same decision has committed by now, or waits for us
                existing = (await conn.execute(select(schema.records).where(schema.records.c.id == rid))).mappings()
                found = existing.first()
                if found is not None:
                    return record_from_row(found)
                size = int(head["tree_size"])
                frontier = frontier_append([bytes.fromhex(h) for h in json.loads(head["frontier"])], size, leaf)
                root = frontier_root(frontier)
                now = _now()
                row = {
                    "id": rid, "log_id": log_id, "leaf_index": size, "leaf_hash": leaf.hex(),
                    "body": body.canonical().decode("utf-8"), "evaluation_sha256": body.evaluation_sha256,
                    "raw_result": canonical_json(dict(payload)).decode("utf-8"), "signature": signature,
                    "key_id": key.key_id, **body.columns(), "created_at": now,
                }
                await conn.execute(schema.records.insert().values(**row))
                await conn.execute(schema.logs.update().where(schema.logs.c.log_id == log_id).values(
                    tree_size=size + 1, root_hash=root.hex(), frontier=json.dumps([h.hex() for h in frontier])))
                await conn.execute(schema.tree_heads.insert().values(**self._sign_head(log_id, size + 1, root)))
        except SQLAlchemyError as exc:
            raise LedgerUnavailable(self.url, str(exc).splitlines()[0]) from exc
        return record_from_row(row)

    def _sign_head(self, log_id: str, size: int, root: bytes) -> dict[str, Any]:
        stamp = int(time.time() * 1000)
        key = self.keyring.active
        sig = key.sign(tree_head_payload(log_id, size, root, stamp))
        return {"log_id": log_id, "tree_size": size, "root_hash": root.hex(), "timestamp_ms": stamp,
                "key_id": key.key_id, "signature": b64encode(sig)}

    async def _lock_head(self, conn: AsyncConnection, log_id: str) -> RowMapping:
        empty = {"log_id": log_id, "tree_size": 0, "root_hash": frontier_root([]).hex(), "frontier": "[]"}
        dialect = postgresql if self.is_postgres else sqlite
        await conn.execute(dialect.insert(schema.logs).values(**empty).on_conflict_do_nothing())
        query = select(schema.logs).where(schema.logs.c.log_id == log_id).with_for_update()
        return (await conn.execute(query)).mappings().one()

    async def rotate_key(self) -> str:
        new = self.keyring.rotate()
        await self._register_key()
        return new.key_id

    async def _register_key(self) -> None:
        key = self.keyring.active
        dialect = postgresql if self.is_postgres else sqlite
        async with self.engine.begin() as conn:
            await conn.execute(dialect.insert(schema.keys).values(
                key_id=key.key_id, alg=ALGORITHM, public_key=public_pem(key.public), created_at=_now(),
            ).on_conflict_do_nothing())
            rows = (await conn.execute(select(schema.keys))).mappings().all()
        for row in rows:
            self.keyring.add_public(row["key_id"], load_public_pem(row["public_key"]))

    # --- reading ------------------------------------------------------------------------------------------

    async def get(self, record_id: str) -> DbomRecord | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(schema.records).where(schema.records.c.id == record_id))).mappings()
            found = row.first()
        return None if found is None else record_from_row(found)

    async def latest(self, limit: int = 20) -> list[DbomRecord]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(schema.records).order_by(schema.records.c.created_at.desc())
                                       .limit(limit))).mappings().all()
        return [record_from_row(r) for r in rows]

    async def _leaves(self, conn: AsyncConnection, log_id: str, size: int) -> list[bytes]:
        rows = await conn.execute(select(schema.records.c.leaf_hash).where(
            schema.records.c.log_id == log_id, schema.records.c.leaf_index < size,
        ).order_by(schema.records.c.leaf_index))
        return [bytes.fromhex(h) for (h,) in rows]

    async def _head(self, conn: AsyncConnection, log_id: str, size: int | None = None) -> RowMapping | None:
        query = select(schema.tree_heads).where(schema.tree_heads.c.log_id == log_id)
        if size is None:
            query = query.order_by(schema.tree_heads.c.tree_size.desc()).limit(1)
        else:
            query = query.where(schema.tree_heads.c.tree_size == size)
        return (await conn.execute(query)).mappings().first()

    @staticmethod
    def _head_json(head: Mapping[Any, Any]) -> dict[str, Any]:
        return {"log_id": head["log_id"], "tree_size": int(head["tree_size"]), "root_hash": head["root_hash"],
                "timestamp": int(head["timestamp_ms"]), "key_id": head["key_id"], "alg": ALGORITHM,
                "signature": head["signature"]}

    async def proof(self, record_id: str) -> dict[str, Any]:
        """The record's inclusion proof in its log's latest signed tree head, JSON-ready."""
        async with self.engine.connect() as conn:
            found = (await conn.execute(select(schema.records).where(schema.records.c.id == record_id))).mappings()
            row = found.first()
            if row is None:
                raise RecordNotFound(record_id)
            head = await self._head(conn, row["log_id"])
            if head is None or int(head["tree_size"]) <= int(row["leaf_index"]):
                raise RecordNotFound(record_id)
            size = int(head["tree_size"])
            leaves = await self._leaves(conn, row["log_id"], size)
        path = inclusion_proof(int(row["leaf_index"]), leaves) if len(leaves) == size else []
        return {"log_id": row["log_id"], "leaf_index": int(row["leaf_index"]), "leaf_hash": row["leaf_hash"],
                "tree_size": size, "inclusion_proof": [h.hex() for h in path], "tree_head": self._head_json(head)}

    async def consistency(self, log_id: str, first_size: int, second_size: int | None = None) -> dict[str, Any]:
        """A consistency proof between two signed tree heads of one log, JSON-ready."""
        async with self.engine.connect() as conn:
            second = await self._head(conn, log_id, second_size)
            first = await self._head(conn, log_id, first_size) if first_size else None
            if second is None or (first_size and first is None):
                raise RecordNotFound(f"{log_id}@{first_size}..{second_size}")
            leaves = await self._leaves(conn, log_id, int(second["tree_size"]))
        return {"log_id": log_id, "first": None if first is None else self._head_json(first),
                "second": self._head_json(second),
                "consistency_proof": [h.hex() for h in consistency_proof(first_size, leaves)]}

    # --- verification -------------------------------------------------------------------------------------

    def _verify_sig(self, key_id: str, signature: bytes, message: bytes) -> bool | None:
        key = self.keyring.public_key(key_id)
        if key is None:
            return None
        return verify_signature(key, signature, message)

    async def verify(self, record_id: str | None = None, *, recompute: bool = False) -> VerifyReport:
        """Recompute and check one record (and the log it sits in) or, without an id, every log; ``recompute``
        also recomputes R from each checked evaluation's recorded vectors."""
        report = VerifyReport()
        try:
            async with self.engine.connect() as conn:
                for row in (await conn.execute(select(schema.keys))).mappings():
                    self.keyring.add_public(row["key_id"], load_public_pem(row["public_key"]))
                if record_id is not None:
                    found = (await conn.execute(select(schema.records.c.log_id).where(
                        schema.records.c.id == record_id))).first()
                    if found is None:
                        raise RecordNotFound(record_id)
                    log_ids: Sequence[str] = [found[0]]
                else:
                    ids = set((await conn.execute(select(schema.logs.c.log_id))).scalars())
                    ids |= set((await conn.execute(select(schema.records.c.log_id).distinct())).scalars())
                    ids |= set((await conn.execute(select(schema.tree_heads.c.log_id).distinct())).scalars())
                    log_ids = sorted(ids)
                for log_id in log_ids:
                    rows = (await conn.execute(select(schema.records).where(schema.records.c.log_id == log_id)
                                               .order_by(schema.records.c.leaf_index))).mappings().all()
                    heads = (await conn.execute(select(schema.tree_heads).where(
                        schema.tree_heads.c.log_id == log_id).order_by(schema.tree_heads.c.tree_size))
                    ).mappings().all()
                    log_head = (await conn.execute(select(schema.logs).where(schema.logs.c.log_id == log_id))
                                ).mappings().first()
                    report.merge(verify_log(log_id, rows, heads, log_head, self._verify_sig, only=record_id,
                                               recompute=recompute))
        except SQLAlchemyError as exc:
            raise LedgerUnavailable(self.url, str(exc).splitlines()[0]) from exc
        return report

    # --- lifecycle ----------------------------------------------------------------------------------------

    def public_keys(self) -> list[dict[str, str]]:
        return self.keyring.listing()

    async def count(self) -> int:
        async with self.engine.connect() as conn:
            return int((await conn.execute(select(func.count()).select_from(schema.records))).scalar_one())

    async def ping(self) -> None:
        """Raise :class:`LedgerUnavailable` unless a record could be written now: the server answers, the records
        table is there, and the session is not read-only (a standby, ``default_transaction_read_only``, SQLite's
        ``query_only`` or a read-only file)."""
        try:
            async with self.engine.connect() as conn:
                await conn.execute(select(schema.records.c.log_id).limit(0))
                if self.engine.dialect.name == "postgresql":
                    if (await conn.execute(text("SHOW transaction_read_only"))).scalar_one() == "on":
                        raise LedgerUnavailable(self.url, "the database accepts no writes (read-only)")
                elif (await conn.execute(text("PRAGMA query_only"))).scalar_one():
                    raise LedgerUnavailable(self.url, "the database accepts no writes (query_only)")
                else:
                    path = self.engine.url.database
                    if path and path != ":memory:" and not os.access(path, os.W_OK):
                        raise LedgerUnavailable(self.url, "the database file is read-only")
        except (SQLAlchemyError, OSError) as exc:
            raise LedgerUnavailable(self.url, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc

    async def close(self) -> None:
        await self.engine.dispose()


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest migration; several processes may call this at once."""
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        await conn.run_sync(_upgrade)


async def open_ledger(settings: Settings, *, schema_name: str | None = None) -> Ledger:
    """Connect, migrate, load (or create) the signing key and register its public half."""
    url = str(settings.database_url)
    engine = make_engine(url, schema=schema_name)
    shown = display_url(url)
    try:
        await migrate(engine)
    except (SQLAlchemyError, OSError) as exc:
        await engine.dispose()
        raise LedgerUnavailable(shown, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    pem = settings.signing_key.get_secret_value() if settings.signing_key is not None else None
    try:
        keyring = KeyRing.load(settings.signing_key_path, pem)
    except BaseException:
        await engine.dispose()
        raise
    ledger = Ledger(engine, keyring, shown)
    try:
        await ledger._register_key()
    except SQLAlchemyError as exc:
        await engine.dispose()
        raise LedgerUnavailable(shown, str(exc).splitlines()[0]) from exc
    return ledger


__all__ = ["Ledger", "LedgerUnavailable", "b64decode", "log_id_for", "open_ledger"]
