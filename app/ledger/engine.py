"""The ledger's database engine: SQLite (aiosqlite) as the embedded default, PostgreSQL (asyncpg) for many workers.

On SQLite every transaction starts with ``BEGIN IMMEDIATE`` — it takes the database's write lock up front, so two
processes can never read the same log head and both append at it. On PostgreSQL appends lock the log's head
row with ``SELECT … FOR UPDATE`` instead (see :mod:`app.ledger.ledger`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.ledger.errors import LedgerUnavailable
from app.sqlite_wal import enter_wal

SQLITE_BUSY_SECONDS = 60


def display_url(url: str | URL) -> str:
    return make_url(url).render_as_string(hide_password=True)


def make_engine(url: str, *, schema: str | None = None) -> AsyncEngine:
    """An async engine for ``url``; ``schema`` puts every table of a PostgreSQL ledger in that schema."""
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError, but also ValueError on odd ports
        raise LedgerUnavailable(url.split("@")[-1], f"not a database URL ({exc})") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if schema is not None:
            raise LedgerUnavailable(display_url(parsed), "SQLite has no schemas")
        return _sqlite_engine(parsed)
    if backend == "postgresql":
        if parsed.get_driver_name() != "asyncpg":
            raise LedgerUnavailable(display_url(parsed), "use the asyncpg driver: postgresql+asyncpg://")
        connect_args: dict[str, Any] = {}
        if schema is not None:
            connect_args["server_settings"] = {"search_path": schema}
        return create_async_engine(parsed, connect_args=connect_args, pool_pre_ping=True)
    raise LedgerUnavailable(display_url(parsed), f"unsupported database {backend!r}; use sqlite or postgresql")


def _sqlite_engine(url: URL) -> AsyncEngine:
    if url.get_driver_name() != "aiosqlite":
        raise LedgerUnavailable(display_url(url), "use the aiosqlite driver: sqlite+aiosqlite://")
    database = url.database or ""
    if database and database != ":memory:":
        try:
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerUnavailable(display_url(url), exc.strerror or str(exc)) from exc
    engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_SECONDS})

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # hand transaction control to the "begin" hook below instead of the sqlite3 module's own BEGIN
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_SECONDS * 1000}")
        enter_wal(cursor.execute, wait_seconds=SQLITE_BUSY_SECONDS)
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine

