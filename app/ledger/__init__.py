"""The DBOM ledger: signed, input-entangled Decision Bills of Materials in verifiable Merkle logs.

Public API (used by the CLI and the App's worker and web routes)::

    ledger = await open_ledger(settings)       # migrates, loads or creates the signing key
    record = await ledger.append(evaluation, installation_id=..., entanglement=...)
    await ledger.get(id); await ledger.proof(id); await ledger.verify(id | None)
    ledger.public_keys(); await ledger.ping(); await ledger.close()
    render_dbom_json(record, proof); render_dbom_html(record, proof)

Errors: see :mod:`app.ledger.errors`.
"""

from __future__ import annotations

from app.ledger.errors import LedgerError, LedgerUnavailable, RecordNotFound, SigningKeyError
from app.ledger.ledger import Ledger, log_id_for, open_ledger
from app.ledger.render import render_dbom_html, render_dbom_json
from app.ledger.verify import Problem, VerifyReport
from checks.dbom import DbomRecord, Entanglement

__all__ = [
    "DbomRecord",
    "Entanglement",
    "Ledger",
    "LedgerError",
    "LedgerUnavailable",
    "Problem",
    "RecordNotFound",
    "SigningKeyError",
    "VerifyReport",
    "log_id_for",
    "open_ledger",
    "render_dbom_html",
    "render_dbom_json",
]
