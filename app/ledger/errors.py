"""Errors of the ledger.

Exception tree::

    LedgerError
    ├── LedgerUnavailable   the database cannot be reached or migrated; ``url`` names it (without password)
    ├── SigningKeyError     the signing key cannot be loaded or created; ``path`` names the file
    └── RecordNotFound      no DBOM has this id; ``record_id`` names it
"""

from __future__ import annotations

from pathlib import Path


class LedgerError(Exception):
    """Base of every error the ledger raises on purpose."""


class LedgerUnavailable(LedgerError):
    def __init__(self, url: str, message: str) -> None:
        self.url = url
        self.message = message
        super().__init__(f"ledger database {url} unavailable: {message}")


class SigningKeyError(LedgerError):
    def __init__(self, path: Path | None, message: str) -> None:
        self.path = path
        self.message = message
        where = str(path) if path is not None else "LOGOMESH_SIGNING_KEY"
        super().__init__(f"signing key {where}: {message}")


class RecordNotFound(LedgerError):
    def __init__(self, record_id: str) -> None:
        self.record_id = record_id
        super().__init__(f"no DBOM with id {record_id!r}")
