"""A real arq worker in its own process (so a test can SIGKILL it): settings from LOGOMESH_* variables, the
DBOM in the tests' SQLite store at ``argv[1]``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from arq.worker import Worker

from app.settings import Settings
from app.worker.jobs import worker_options
from tests.app.sqlite_dbom import SqliteDbom


async def main(dbom_path: Path) -> None:
    settings = Settings(_env_file=None)

    async def factory(_settings: Settings) -> SqliteDbom:
        return await SqliteDbom.open(dbom_path)

    await Worker(**worker_options(settings, dbom_factory=factory), burst=False, poll_delay=0.1).async_run()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
