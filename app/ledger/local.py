"""What ``logomesh review`` and ``logomesh audit`` need from the ledger: the entanglement of a local run, and
one append to the ``local`` log. A ledger failure is a notice, never a failed review or audit."""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from app.ledger.errors import LedgerError
from app.ledger.ledger import Ledger, open_ledger
from app.settings import Settings
from checks.audit import AuditResult
from checks.audit.render import markdown_sha256
from checks.dbom import AuditEntanglement, DbomRecord, Entanglement
from checks.models import Evaluation

TOOLS = ("logomesh", "rfc8785", "cryptography", "sentence-transformers")


def tool_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def local_entanglement(evaluation: Evaluation, settings: Settings, **known: Any) -> Entanglement:
    models = {"judges": settings.llm_provider}
    models.update(known.pop("model_ids", {}))
    return Entanglement.from_evaluation(evaluation, model_ids=models, tool_versions=tool_versions(), **known)


async def _append(settings: Settings, write: Callable[[Ledger], Awaitable[DbomRecord]]) -> DbomRecord:
    ledger = await open_ledger(settings)
    try:
        return await write(ledger)
    finally:
        await ledger.close()


def _recorded(settings: Settings, write: Callable[[Ledger], Awaitable[DbomRecord]],
              warn: Callable[[str], None]) -> DbomRecord | None:
    try:
        return asyncio.run(_append(settings, write))
    except LedgerError as exc:
        warn(f"notice: DBOM not recorded: {exc}")
        return None


def record_dbom(evaluation: Evaluation, settings: Settings, warn: Callable[[str], None]) -> str | None:
    """Write the local review's DBOM; a ledger failure is a notice, never a failed review."""
    entanglement = local_entanglement(evaluation, settings)
    record = _recorded(settings, lambda ledger: ledger.append(evaluation, installation_id=None,
                                                              entanglement=entanglement), warn)
    return None if record is None else record.id


def audit_entanglement(tree_sha256: str, markdown: str, model_ids: dict[str, str]) -> AuditEntanglement:
    return AuditEntanglement(tree_sha256=tree_sha256, markdown_sha256=markdown_sha256(markdown), model_ids=model_ids,
                             tool_versions=tool_versions())


def record_audit_dbom(result: AuditResult, entanglement: AuditEntanglement, settings: Settings,
                      warn: Callable[[str], None]) -> DbomRecord | None:
    """Write the audit's DBOM to the local log; a ledger failure is a notice, never a failed audit."""
    return _recorded(settings, lambda ledger: ledger.append_audit(result, installation_id=None,
                                                                  entanglement=entanglement), warn)
