"""Ledger fixtures: every ledger test runs on SQLite (a file in tmp_path) and on PostgreSQL (a schema of its own).

PostgreSQL comes from ``LOGOMESH_TEST_DATABASE_URL``; each test gets a fresh, uniquely named schema that is
dropped afterwards, so parallel runs on a shared server never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from app.ledger import Ledger, open_ledger
from app.settings import Settings, load_settings

PG_URL = os.environ.get("LOGOMESH_TEST_DATABASE_URL",
                        "postgresql+asyncpg://logomesh:logomesh@127.0.0.1:5432/logomesh")


@dataclass
class Backend:
    name: str
    home: Path
    url: str
    schema: str | None

    def settings(self) -> Settings:
        return load_settings(home=self.home, database_url=self.url)


def _raw_pg_url() -> str:
    return PG_URL.replace("postgresql+asyncpg://", "postgresql://", 1)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    home = tmp_path / "home"
    if request.param == "sqlite":
        yield Backend("sqlite", home, f"sqlite+aiosqlite:///{home / 'battles.db'}", None)
        return
    schema = f"dbom_test_{uuid.uuid4().hex[:16]}"
    conn = await asyncpg.connect(_raw_pg_url())
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        yield Backend("postgres", home, PG_URL, schema)
    finally:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await conn.close()


@pytest.fixture
async def ledger(backend: Backend) -> AsyncIterator[Ledger]:
    opened = await open_ledger(backend.settings(), schema_name=backend.schema)
    try:
        yield opened
    finally:
        await opened.close()
