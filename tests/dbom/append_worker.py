"""One OS process appending DBOMs to a shared ledger, started by the concurrency test.

Usage: python -m tests.dbom.append_worker HOME URL SCHEMA|- START COUNT
Prints ``ready`` once its ledger is open and its evaluations are built, waits for a line on stdin, appends,
then prints one ``<leaf_index> <id>`` line per record.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from app.ledger import open_ledger
from app.settings import load_settings
from tests.dbom.factory import entanglement, evaluation


async def main(home: str, url: str, schema: str, start: int, count: int) -> None:
    settings = load_settings(home=Path(home), database_url=url)
    evaluations = [evaluation(n) for n in range(start, start + count)]
    ledger = await open_ledger(settings, schema_name=None if schema == "-" else schema)
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        for ev in evaluations:
            record = await ledger.append(ev, installation_id=99, entanglement=entanglement(ev))
            print(record.leaf_index, record.id, flush=True)
    finally:
        await ledger.close()


if __name__ == "__main__":
    home_arg, url_arg, schema_arg, start_arg, count_arg = sys.argv[1:6]
    asyncio.run(main(home_arg, url_arg, schema_arg, int(start_arg), int(count_arg)))
