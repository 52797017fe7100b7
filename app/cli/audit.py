"""``logomesh audit REPO [--report report.pdf] [--rubric rubric/NAME.json] [--out audit.md]``.

Audits a whole repository (a local path or a git URL, cloned into a temp dir) and optionally its PDF report
against a rubric (``rubric/auditor.json`` by default) and writes the Markdown audit report to ``--out`` or
stdout. The audit's DBOM goes to the ledger's ``local`` log; the Markdown report ends with a footer naming it
(``logomesh dbom verify ID --document FILE`` checks the file against the record). Exit codes: 0 pass or
neutral, 1 fail, 2 usage or input error (unreadable repository, PDF or rubric).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.console import EXIT_FAIL, EXIT_OK, Progress, exit_130_on_ctrl_c, fail, notice, result_line

if TYPE_CHECKING:
    from app.audit.run import AuditOutcome
    from app.settings import Settings

# app.audit.run (the engine, the rubric, the court) is imported inside the command: `logomesh --help` starts faster


class AuditFormat(StrEnum):
    markdown = "markdown"
    json = "json"


def audit(
    repo: Annotated[str, typer.Argument(metavar="REPO", help="A local repository path or a git URL.")],
    report: Annotated[Path | None, typer.Option("--report", metavar="PDF",
                                                help="The PDF report that describes the work.")] = None,
    rubric: Annotated[Path | None, typer.Option("--rubric", metavar="FILE",
                                                help="The rubric (default: the bundled auditor.json).")] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="FILE",
                                             help="Write the report to FILE instead of stdout.")] = None,
    output: Annotated[AuditFormat, typer.Option("--format", metavar="FORMAT", help="markdown or json.")]
    = AuditFormat.markdown,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> None:
    """Audit a whole repository (and its PDF report) against a rubric: a Markdown courtroom report.

    The audit's DBOM goes to the local ledger; the Markdown report ends with a footer naming it.
    """
    say = Progress(quiet=quiet)
    with exit_130_on_ctrl_c():
        say(f"audit {repo}…")  # at once: the engine is not loaded yet
        _audit(repo, report=report, rubric=rubric, out=out, output=output, say=say)


def _audit(repo: str, *, report: Path | None, rubric: Path | None, out: Path | None, output: AuditFormat,
           say: Progress) -> None:
    import asyncio

    from app.audit.run import AuditInputError, audit_repository
    from app.cli.home import legacy_home_notice
    from app.review.gitrepo import GitError
    from app.settings import SettingsError, load_settings
    from checks.audit.render import with_dbom_footer
    from rubric import RubricError

    try:
        settings = load_settings()
        if (legacy := legacy_home_notice(settings)) is not None:
            notice(legacy)
        outcome = asyncio.run(audit_repository(repo, settings=settings, report_path=report, rubric_path=rubric))
    except (SettingsError, AuditInputError, GitError, RubricError) as exc:
        raise fail(str(exc)) from exc
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
            raise fail(f"cannot write {out}: {exc.strerror}") from exc
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    say(f"audit {result.verdict}, {result.score:.2f}/5 over {len(result.rulings)} criteria")
    if dbom_id is not None:
        # printed under --quiet too: with --format json or --out it is the only place the id is named
        result_line(f"dbom {dbom_id}", quiet=False)
    raise typer.Exit(EXIT_FAIL if result.verdict == "fail" else EXIT_OK)


def _record(outcome: AuditOutcome, settings: Settings) -> str | None:
    """Sign and append the audit's DBOM; a ledger that cannot be reached is a notice, never a lost report."""
    from app.ledger.local import audit_entanglement, record_audit_dbom  # the ledger stack is heavy to load

    entanglement = audit_entanglement(outcome.tree_sha256, outcome.markdown, outcome.model_ids)
    record = record_audit_dbom(outcome.result, entanglement, settings, notice)
    return None if record is None else record.id

