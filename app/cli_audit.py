"""``logomesh audit REPO [--report report.pdf] [--rubric rubric/NAME.json] [--out audit.md]``.

Audits a whole repository (a local path or a git URL, cloned into a temp dir) and optionally its PDF report
against a rubric (``rubric/auditor.json`` by default) and writes the Markdown audit report to ``--out`` or
stdout. The audit's DBOM goes to the ledger's ``local`` log; the Markdown report ends with a footer naming it
(``logomesh dbom verify ID --document FILE`` checks the file against the record). Exit codes: 0 pass or
neutral, 1 fail, 2 usage or input error (unreadable repository, PDF or rubric).
"""

from __future__ import annotations

import asyncio
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from app.audit import AuditInputError, AuditOutcome, audit_repository
from app.cli_home import legacy_home_notice
from app.gitrepo import GitError
from app.settings import Settings, SettingsError, load_settings
from checks.audit.render import with_dbom_footer
from rubric import RubricError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
stderr = Console(stderr=True, highlight=False)


class AuditFormat(StrEnum):
    markdown = "markdown"
    json = "json"


def audit(
    repo: Annotated[str, typer.Argument(help="A local repository path or a git URL.")],
    report: Annotated[Path | None, typer.Option("--report", help="The PDF report that describes the work.")] = None,
    rubric: Annotated[Path | None, typer.Option("--rubric", help="The rubric (default: the bundled auditor.json).")]
    = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report here instead of stdout.")] = None,
    output: Annotated[AuditFormat, typer.Option("--format", help="markdown or json.")] = AuditFormat.markdown,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> None:
    """Audit a whole repository (and its PDF report) against a rubric: a Markdown courtroom report."""
    try:
        settings = load_settings()
        if (notice := legacy_home_notice(settings)) is not None:
            stderr.print(f"logomesh: {notice}", markup=False, soft_wrap=True)
        outcome = asyncio.run(audit_repository(repo, settings=settings, report_path=report, rubric_path=rubric))
    except (SettingsError, AuditInputError, GitError, RubricError) as exc:
        stderr.print(f"[bold red]error:[/] {exc}", markup=True, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from exc
    result = outcome.result
    dbom_id = _record(outcome, settings)
    markdown = outcome.markdown
    if dbom_id is not None:
        url = f"{settings.public_url.rstrip('/')}/dbom/{dbom_id}.html" if settings.public_url else None
        markdown = with_dbom_footer(markdown, dbom_id, url)
    text = markdown if output is AuditFormat.markdown else result.model_dump_json(indent=2) + "\n"
    if out is not None:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            stderr.print(f"[bold red]error:[/] cannot write {out}: {exc.strerror}", markup=True, soft_wrap=True)
            raise typer.Exit(EXIT_USAGE) from exc
    else:
        sys.stdout.write(text)
    if not quiet:
        stderr.print(f"[dim]logomesh:[/] audit {result.verdict}, {result.score:.2f}/5 over "
                     f"{len(result.rulings)} criteria", markup=True, soft_wrap=True)
    if dbom_id is not None:
        stderr.print(f"logomesh: dbom {dbom_id}", markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_FAIL if result.verdict == "fail" else EXIT_OK)


def _record(outcome: AuditOutcome, settings: Settings) -> str | None:
    """Sign and append the audit's DBOM; a ledger that cannot be reached is a notice, never a lost report."""
    from app.ledger.local import audit_entanglement, record_audit_dbom  # the ledger stack is heavy to load

    def warn(message: str) -> None:
        stderr.print(f"logomesh: {message}", markup=False, soft_wrap=True)

    entanglement = audit_entanglement(outcome.tree_sha256, outcome.markdown, outcome.model_ids)
    record = record_audit_dbom(outcome.result, entanglement, settings, warn)
    return None if record is None else record.id
