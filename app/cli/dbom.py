"""``logomesh dbom``: look at, verify and export the Decision Bills of Materials in the ledger.

Exit codes: 0 all good, 1 verification found a problem, 2 usage error (unknown id, unreachable database,
bad settings).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from app.cli.console import fail, notice

if TYPE_CHECKING:
    from app.ledger import Ledger
    from app.ledger.verify import VerifyReport

# The ledger (SQLAlchemy, Alembic, cryptography) is imported inside the commands: every other `logomesh`
# command starts faster without it.

EXIT_OK, EXIT_BROKEN, EXIT_USAGE = 0, 1, 2
T = TypeVar("T")

dbom_cli = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                       rich_markup_mode=None, help="Decision Bills of Materials: show, verify, export.",
                       epilog="\b\nExit codes:\n  0  all good\n  1  verify found a broken record\n"
                              "  2  usage error (unknown id, unreachable database, bad setting)")


class ShowFormat(StrEnum):
    json = "json"
    html = "html"


class ExportFormat(StrEnum):
    dsse = "dsse"
    json = "json"


def _usage(message: str) -> typer.Exit:
    return fail(message, EXIT_USAGE)


def _with_ledger(work: Callable[[Ledger], Awaitable[T]]) -> T:
    from app.cli.home import legacy_home_notice
    from app.ledger import LedgerError, open_ledger
    from app.settings import SettingsError, load_settings

    async def run() -> T:
        settings = load_settings()
        if (legacy := legacy_home_notice(settings)) is not None:  # "unknown id" would otherwise be all it says
            notice(legacy)
        ledger = await open_ledger(settings)
        try:
            return await work(ledger)
        finally:
            await ledger.close()

    try:
        return asyncio.run(run())
    except (SettingsError, LedgerError) as exc:
        raise _usage(str(exc)) from exc


def _write_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


@dbom_cli.command(short_help="Verify one DBOM or all: hashes, signatures, inclusion, consistency.")
def verify(
    record_id: Annotated[str | None, typer.Argument(metavar="ID", help="The DBOM to verify.")] = None,
    all_records: Annotated[bool, typer.Option("--all", help="Verify every record of every log.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    document: Annotated[Path | None, typer.Option(
        "--document", help="An audit report (Markdown) to check against the record, byte for byte.")] = None,
    recompute: Annotated[bool, typer.Option(
        "--recompute", help="Also recompute R from the intent and code vectors each evaluation records.")] = False,
) -> None:
    """Recompute hashes from raw_result, check signatures, inclusion and consistency; with --recompute, also R from
    the recorded vectors. Exit 1 if anything broke."""
    if (record_id is None) == (not all_records):
        raise _usage("give either a DBOM id or --all")
    if document is not None and record_id is None:
        raise _usage("--document needs the DBOM id of the audit it claims to be")
    text = None
    if document is not None:
        try:
            text = document.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _usage(f"cannot read {document}: {getattr(exc, 'strerror', None) or exc}") from exc

    async def work(ledger: Ledger) -> VerifyReport:
        from app.ledger.verify import check_document

        report = await ledger.verify(None if all_records else record_id, recompute=recompute)
        if text is not None and record_id is not None:
            record = await ledger.get(record_id)
            if record is not None:
                report.problems.extend(check_document(record, text))
        return report

    report = _with_ledger(work)
    if as_json:
        _write_json(report.to_json())
    else:
        for problem in report.problems:
            sys.stdout.write(f"BROKEN {problem}\n")
        status = "OK" if report.ok else "FAILED"
        sys.stdout.write(f"{status}: {report.records_checked} record(s) in {report.logs} log(s), "
                         f"{report.tree_heads_checked} signed tree head(s), {len(report.problems)} problem(s)\n")
    raise typer.Exit(EXIT_OK if report.ok else EXIT_BROKEN)


async def _record_and_proof(ledger: Ledger, record_id: str) -> tuple[Any, dict[str, Any]]:
    from app.ledger import RecordNotFound

    record = await ledger.get(record_id)
    if record is None:
        raise RecordNotFound(record_id)
    return record, await ledger.proof(record_id)


@dbom_cli.command(short_help="Print a DBOM with its inclusion proof and signed tree head.")
def show(
    record_id: Annotated[str, typer.Argument(metavar="ID", help="The DBOM to show.")],
    output: Annotated[ShowFormat, typer.Option("--format", help="json or html.")] = ShowFormat.json,
) -> None:
    """Print a DBOM with its inclusion proof and signed tree head."""
    from app.ledger import render_dbom_html, render_dbom_json

    record, proof = _with_ledger(lambda ledger: _record_and_proof(ledger, record_id))
    if output is ShowFormat.html:
        sys.stdout.write(render_dbom_html(record, proof) + "\n")
    else:
        _write_json(render_dbom_json(record, proof))


@dbom_cli.command(short_help="Export a DBOM as a signed in-toto Statement (DSSE) or JSON.")
def export(
    record_id: Annotated[str, typer.Argument(metavar="ID", help="The DBOM to export.")],
    output: Annotated[ExportFormat, typer.Option("--format", help="dsse (in-toto Statement v1) or json.")]
    = ExportFormat.dsse,
) -> None:
    """Export a DBOM as an in-toto Statement v1 in a DSSE envelope signed with the ledger's key."""
    from app.ledger import render_dbom_json
    from app.ledger.export import dsse_envelope

    async def work(ledger: Ledger) -> dict[str, Any]:
        record, proof = await _record_and_proof(ledger, record_id)
        if output is ExportFormat.json:
            return render_dbom_json(record, proof)
        return dsse_envelope(record, ledger.keyring.active)

    _write_json(_with_ledger(work))


@dbom_cli.command(short_help="List the public keys that may have signed a DBOM.")
def keys() -> None:
    """List the public keys that may have signed a DBOM (what the App serves at /.well-known/logomesh/keys)."""

    async def work(ledger: Ledger) -> list[dict[str, str]]:
        return ledger.public_keys()

    _write_json({"keys": _with_ledger(work)})


@dbom_cli.command("rotate-key", short_help="Make a fresh signing key the active one.")
def rotate_key() -> None:
    """Make a fresh signing key the active one; old public keys stay listed so old records still verify."""
    key_id = _with_ledger(lambda ledger: ledger.rotate_key())
    sys.stdout.write(key_id + "\n")
