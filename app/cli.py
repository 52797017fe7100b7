"""The ``logomesh`` command line.

Exit codes of ``review``: 0 pass or neutral, 1 fail, 2 usage or input error (unknown ref, not a git repo,
invalid ``.logomesh.yml`` or rubric).
"""

from __future__ import annotations

import asyncio
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from app.cli_audit import audit as audit_command
from app.cli_dbom import dbom_cli
from app.cli_home import legacy_home_notice
from app.cli_sandbox import sandbox_cli
from app.embeddings import EmbeddingError
from app.engine import read_config_file, review_repository
from app.gitrepo import GitError
from app.red import write_sarif
from app.settings import SettingsError, load_settings
from checks.diff import DiffError
from checks.errors import ConfigError
from checks.render import render_markdown, render_text
from rubric import RubricError
from sandbox.errors import SandboxError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

cli = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="LogoMesh: pull-request integrity reviews.")
stderr = Console(stderr=True, highlight=False)


class OutputFormat(StrEnum):
    json = "json"
    markdown = "markdown"
    text = "text"


def _fail_usage(message: str) -> typer.Exit:
    stderr.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=True)
    return typer.Exit(EXIT_USAGE)


@cli.command()
def review(
    path: Annotated[Path, typer.Argument(help="A local git repository.")] = Path("."),
    base: Annotated[str, typer.Option("--base", help="The base ref (the branch the PR targets).")] = "main",
    head: Annotated[str, typer.Option("--head", help="The head ref (the PR's last commit).")] = "HEAD",
    title: Annotated[str, typer.Option("--title", help="The PR title.")] = "",
    body: Annotated[str | None, typer.Option("--body", help="The PR body.")] = None,
    body_file: Annotated[Path | None, typer.Option("--body-file", help="Read the PR body from a file.")] = None,
    output: Annotated[OutputFormat, typer.Option("--format", help="json, markdown or text.")] = OutputFormat.text,
    config: Annotated[Path | None, typer.Option("--config", help="Use this .logomesh.yml instead of the base's.")]
    = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
    sarif: Annotated[Path | None, typer.Option("--sarif", help="Also write the red-team findings as SARIF 2.1.0.")]
    = None,
) -> None:
    """Review BASE...HEAD of a local repository exactly as the App reviews a pull request."""
    if body is not None and body_file is not None:
        raise _fail_usage("use either --body or --body-file, not both")
    try:
        settings = load_settings()
        body_text = body or ""
        if body_file is not None:
            body_text = body_file.read_text(encoding="utf-8")
        config_text = read_config_file(config) if config is not None else None
    except SettingsError as exc:
        raise _fail_usage(str(exc)) from exc
    except OSError as exc:
        raise _fail_usage(f"cannot read {exc.filename}: {exc.strerror}") from exc
    if (notice := legacy_home_notice(settings)) is not None:  # even with --quiet: it is about a private key
        stderr.print(f"logomesh: {notice}", markup=False, soft_wrap=True)

    def progress(message: str) -> None:
        if not quiet:
            stderr.print(f"[dim]logomesh:[/] {message}", markup=True, soft_wrap=True)

    try:
        evaluation, _prepared = asyncio.run(review_repository(
            path, base, head, settings=settings, title=title, body=body_text, config_text=config_text,
            progress=progress,
        ))
    except (GitError, ConfigError, RubricError, DiffError) as exc:
        raise _fail_usage(str(exc)) from exc
    except (SandboxError, EmbeddingError) as exc:  # a component the settings require is not there
        raise _fail_usage(str(exc)) from exc

    if sarif is not None:
        try:
            write_sarif(sarif, evaluation)
        except OSError as exc:
            raise _fail_usage(f"cannot write {sarif}: {exc.strerror}") from exc
    if output is OutputFormat.json:
        sys.stdout.write(evaluation.pretty_json() + "\n")
    elif output is OutputFormat.markdown:
        sys.stdout.write(render_markdown(evaluation))
    else:
        sys.stdout.write(render_text(evaluation))
    progress(f"verdict {evaluation.verdict}, CIS {evaluation.cis_score:.4f}")
    from app.ledger.local import record_dbom  # imported late: the ledger's database stack is heavy to load

    dbom_id = record_dbom(evaluation, settings, warn=progress)
    if dbom_id is not None:
        stderr.print(f"logomesh: dbom {dbom_id}", markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_FAIL if evaluation.verdict == "fail" else EXIT_OK)


cli.command("audit")(audit_command)


@cli.command()
def version() -> None:
    """Print the version."""
    from importlib.metadata import version as dist_version

    sys.stdout.write(dist_version("logomesh") + "\n")


cli.add_typer(dbom_cli, name="dbom")
from app.cli_app import serve, worker  # noqa: E402 - the App's commands live in their own module

cli.command()(serve)
cli.command()(worker)
cli.add_typer(sandbox_cli, name="sandbox")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
