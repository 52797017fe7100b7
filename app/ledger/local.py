"""What ``logomesh review`` needs from the ledger: the entanglement of a local review, and one append."""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from app.ledger.errors import LedgerError
from app.ledger.ledger import open_ledger
from app.settings import Settings
from checks.dbom import DbomRecord, Entanglement
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


async def record_review(evaluation: Evaluation, settings: Settings, **known: Any) -> DbomRecord:
    """Append the review's DBOM to the ledger configured in ``settings`` (local log)."""
    ledger = await open_ledger(settings)
    try:
        return await ledger.append(evaluation, installation_id=None,
                                   entanglement=local_entanglement(evaluation, settings, **known))
    finally:
        await ledger.close()


def record_dbom(evaluation: Evaluation, settings: Settings, warn: Callable[[str], None]) -> str | None:
    """Write the local review's DBOM; a ledger failure is a notice, never a failed review."""
    try:
        return asyncio.run(record_review(evaluation, settings)).id
    except LedgerError as exc:
        warn(f"notice: DBOM not recorded: {exc}")
        return None
