"""How fast the DBOM ledger appends, proves and verifies, on SQLite and PostgreSQL.

Usage: PYTHONPATH=. python bench/dbom_ledger.py [N]   (default N=200; PostgreSQL from LOGOMESH_TEST_DATABASE_URL)
Prints absolute rates for this machine and the ratios that do not depend on it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

from app.ledger import open_ledger
from app.settings import load_settings
from tests.dbom.factory import entanglement, evaluation

PG_URL = os.environ.get("LOGOMESH_TEST_DATABASE_URL",
                        "postgresql+asyncpg://logomesh:logomesh@127.0.0.1:5432/logomesh")


async def measure(name: str, url: str | None, schema: str | None, n: int) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="dbom-bench-"))
    settings = load_settings(home=home, database_url=url or f"sqlite+aiosqlite:///{home / 'battles.db'}")
    evaluations = [evaluation(i) for i in range(n)]
    ledger = await open_ledger(settings, schema_name=schema)
    try:
        start = time.perf_counter()
        records = [await ledger.append(ev, installation_id=1, entanglement=entanglement(ev)) for ev in evaluations]
        append = time.perf_counter() - start
        start = time.perf_counter()
        for r in records[:: max(1, n // 20)]:
            await ledger.proof(r.id)
        proof = (time.perf_counter() - start) / len(records[:: max(1, n // 20)])
        start = time.perf_counter()
        report = await ledger.verify()
        verify = time.perf_counter() - start
        assert report.ok, report.problems
    finally:
        await ledger.close()
    result = {"append_per_s": n / append, "proof_ms": proof * 1000, "verify_ms_per_record": verify * 1000 / n}
    print(f"{name:9} n={n}: {result['append_per_s']:.0f} appends/s, proof {result['proof_ms']:.1f} ms, "
          f"verify --all {result['verify_ms_per_record']:.2f} ms/record")
    return result


async def main(n: int) -> None:
    lite = await measure("sqlite", None, None, n)
    schema = f"dbom_bench_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(PG_URL.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        pg = await measure("postgres", PG_URL, schema, n)
    finally:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await conn.close()
    print(f"ratio postgres/sqlite append rate: {pg['append_per_s'] / lite['append_per_s']:.2f}")
    print(f"ratio verify-per-record / append-per-record (sqlite): "
          f"{lite['verify_ms_per_record'] / (1000 / lite['append_per_s']):.2f}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
