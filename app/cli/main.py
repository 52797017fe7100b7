"""The ``logomesh`` command line.

Exit codes of ``review``: 0 pass or neutral, 1 fail, 2 usage or input error (unknown ref, not a git repo,
invalid ``.logomesh.yml``, setting or rubric), 130 interrupted (Ctrl-C).

Only Typer and Rich are imported here: the engine (git, the court, the rubric), the embedding model (torch), the
sandbox (docker) and the ledger (SQLAlchemy, cryptography) are imported by the command that needs them, so that
``logomesh --help`` and ``--version`` answer at once and ``review`` prints its first line before loading them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.audit import audit as audit_command
from app.cli.console import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    Progress,
    exit_130_on_ctrl_c,
    fail,
    notice,
    result_line,
)
from app.cli.dbom import dbom_cli
from app.cli.deploy import deploy_cli
from app.cli.sandbox import sandbox_cli

if TYPE_CHECKING:
    from app.settings import Settings
    from checks.models import Evaluation

__all__ = ["EXIT_FAIL", "EXIT_OK", "EXIT_USAGE", "cli", "main", "package_version"]

# (variable, what it does): the environment a user of the command line sets most; each is a field of
# app.settings.Settings (tests/core/test_cli_polish.py checks the names)
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("LOGOMESH_HOME", "ledger and signing key (~/.local/share/logomesh)"),
    ("LOGOMESH_SANDBOX", "auto|docker|off: run the PR's tests in Docker"),
    ("LOGOMESH_SANDBOX_IMAGE", "its image (logomesh sandbox build-image)"),
    ("LOGOMESH_EMBEDDING", "auto|on|off: the model that measures R"),
    ("LOGOMESH_RED_TEAM", "auto|on|off: the Red Agent"),
    ("LOGOMESH_LLM_PROVIDER", "offline|anthropic|openai: who judges (offline)"),
    ("LOGOMESH_LLM_API_KEY", "the provider's API key"),
    ("LOGOMESH_LLM_MODEL", "the provider's model"),
    ("LOGOMESH_RUBRIC_PATH", "a rubric JSON instead of the bundled one"),
    ("LOGOMESH_DATABASE_URL", "the ledger's database (SQLite in LOGOMESH_HOME)"),
)


def _block(title: str, rows: Sequence[tuple[str, str]]) -> str:
    # "\b": click prints the paragraph as written instead of re-wrapping it
    width = max(len(name) for name, _ in rows)
    return "\b\n" + title + "\n" + "\n".join(f"  {name:<{width}}  {text}" for name, text in rows)


EXIT_CODES = _block("Exit codes:", [
    ("0", "pass or neutral (or nothing to review)"),
    ("1", "fail, or what --fail-on names"),
    ("2", "usage or input error (bad option, unknown ref, not a git repository,"),
    ("", "invalid .logomesh.yml, setting or rubric)"),
    ("130", "interrupted (Ctrl-C)"),
])
AUDIT_EXIT_CODES = _block("Exit codes:", [
    ("0", "pass or neutral (or nothing to review)"),
    ("1", "fail, or what --fail-on names"),
    ("2", "usage or input error (unreadable repository, PDF or rubric, bad setting)"),
    ("130", "interrupted (Ctrl-C)"),
])
ENVIRONMENT_HELP = _block("Environment (also read from ./.env):", ENVIRONMENT)
REVIEW_EXAMPLES = """\b
Examples:
  logomesh review . --base main --head HEAD --title 'Add discounts' --body-file PR.md
  logomesh review ~/src/shop --head feature/discounts --format json -q > review.json"""
MAIN_EXAMPLES = """\b
Examples:
  logomesh review . --base main --head feature/discounts --title 'Add discounts'
  logomesh review --help
  logomesh dbom verify --all"""

cli = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    # plain click help: flags render as flags (Typer's Rich panels print "<bool>" after every flag), and the
    # blocks of the epilog keep their layout
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="\n\n".join((EXIT_CODES, ENVIRONMENT_HELP, MAIN_EXAMPLES)),
)


def package_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("logomesh")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"logomesh {package_version()}\n")
        raise typer.Exit(EXIT_OK)


@cli.callback()
def logomesh(
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print 'logomesh VERSION' and exit.")] = False,
) -> None:
    """LogoMesh reviews pull requests for contextual integrity: does the change do what its author says, inside
    the repository's constraints, with tests that truly pass, and does it survive an attacker?

    The report goes to stdout, progress and errors to stderr.
    """


class FailOn(StrEnum):
    """What makes ``logomesh review`` exit 1 (CI fails closed on it)."""

    fail = "fail"
    not_measured = "not-measured"
    neutral = "neutral"


def fails(evaluation: Evaluation, fail_on: FailOn) -> bool:
    """Whether the review exits 1: a ``fail`` always; ``not-measured`` also when the tests were not measured
    (no engine, no image, the sandbox off) or failed only because of the sandbox; ``neutral`` on any neutral."""
    from checks.deciding import deciding_rules

    if evaluation.verdict == "fail":
        return True
    if fail_on is FailOn.neutral:
        return evaluation.verdict == "neutral"
    if fail_on is FailOn.not_measured:
        unmeasured = {"Rule of the Environment", "Tests were not measured"}
        return not evaluation.measured.get("testing") or any(
            r.prefix in unmeasured for r in deciding_rules(evaluation))
    return False


class OutputFormat(StrEnum):
    json = "json"
    markdown = "markdown"
    text = "text"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"cannot read {path}: not UTF-8 text") from exc
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}") from exc


def _preparing(settings: Settings) -> str:
    """What the engine sets up before the first engine message, by settings (the slow part: the model)."""
    parts = [name for name, on in (("the sandbox", settings.sandbox != "off"),
                                   ("the embedding model", settings.embedding != "off"),
                                   ("the red agent", settings.red_team != "off")) if on]
    parts.append(f"the {settings.llm_provider} judges")
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"preparing {listed}…"


@cli.command(short_help="Review BASE...HEAD of a local git repository like a pull request.",
             epilog="\n\n".join((EXIT_CODES, ENVIRONMENT_HELP, REVIEW_EXAMPLES)))
def review(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="A local git repository (default: .).",
                                         show_default=False)] = Path("."),
    base: Annotated[str, typer.Option("--base", metavar="REF", help="The base ref (the branch the PR targets).")]
    = "main",
    head: Annotated[str, typer.Option("--head", metavar="REF", help="The head ref (the PR's last commit).")]
    = "HEAD",
    title: Annotated[str, typer.Option("--title", metavar="TEXT", help="The PR title.")] = "",
    body: Annotated[str | None, typer.Option("--body", metavar="TEXT", help="The PR body.")] = None,
    body_file: Annotated[Path | None, typer.Option("--body-file", metavar="FILE",
                                                   help="Read the PR body from FILE.")] = None,
    output: Annotated[OutputFormat, typer.Option("--format", metavar="FORMAT", help="text, markdown or json.")]
    = OutputFormat.text,
    config: Annotated[Path | None, typer.Option("--config", metavar="FILE",
                                                help="Use FILE instead of the base's .logomesh.yml.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the report and errors: no progress, no "
                                        "DBOM id (the DBOM is still recorded).")] = False,
    sarif: Annotated[Path | None, typer.Option("--sarif", metavar="FILE",
                                               help="Also write the red-team findings to FILE as SARIF 2.1.0.")]
    = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", metavar="WHAT", help=(
        "Exit 1 on: fail (default); not-measured (also when the tests did not run, e.g. no Docker engine); "
        "neutral (on anything but pass)."))] = FailOn.fail,
) -> None:
    """Review BASE...HEAD of a local repository exactly as the App reviews a pull request.

    Prints the report on stdout and records a signed DBOM of the decision in the local ledger
    (see 'logomesh dbom').
    """
    say = Progress(quiet=quiet)
    if body is not None and body_file is not None:
        raise fail("use either --body or --body-file, not both")
    with exit_130_on_ctrl_c():
        say(f"review {base}...{head} of {path.absolute()}")  # at once: nothing heavy is loaded yet
        _review(path, base, head, title=title, body=body, body_file=body_file, output=output, config=config,
                quiet=quiet, sarif=sarif, say=say, fail_on=fail_on)


def _nothing_to_review(path: Path, base: str, head: str, output: OutputFormat) -> bool:
    """An empty range (HEAD is BASE, or adds nothing to it) is answered at once, before anything is loaded."""
    from app.review.gitrepo import GitError, GitRepo

    try:
        repo = GitRepo.open(path)
        base_sha, head_sha = repo.resolve(base), repo.resolve(head)
        start = repo.merge_base(base_sha, head_sha)
        same = start == head_sha or repo.git("rev-parse", f"{start}^{{tree}}") == repo.git(
            "rev-parse", f"{head_sha}^{{tree}}")
    except GitError as exc:
        raise fail(str(exc)) from exc
    if not same:
        return False
    why = f"{head} adds no change to {base}"
    if output is OutputFormat.json:
        from checks.report import nothing_to_review

        sys.stdout.write(nothing_to_review(why).pretty_json() + "\n")
    elif output is OutputFormat.markdown:
        sys.stdout.write(f"### LogoMesh: nothing to review\n\n{why}: no test ran and no DBOM was recorded.\n")
    else:
        sys.stdout.write(f"LogoMesh: nothing to review ({why})\n")
    return True


def _review(path: Path, base: str, head: str, *, title: str, body: str | None, body_file: Path | None,
            output: OutputFormat, config: Path | None, quiet: bool, sarif: Path | None, say: Progress,
            fail_on: FailOn) -> None:

    from app.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(str(exc)) from exc
    if _nothing_to_review(path, base, head, output):
        say("nothing to review")
        raise typer.Exit(EXIT_OK)
    body_text = _read_text(body_file) if body_file is not None else body or ""
    config_text = _read_text(config) if config is not None else None
    from app.cli.home import legacy_home_notice

    if (legacy := legacy_home_notice(settings)) is not None:  # even with --quiet: it is about a private key
        notice(legacy)
    say(_preparing(settings))

    evaluation = _run_review(path, base, head, settings, title=title, body=body_text, config_text=config_text,
                             config_source=str(config) if config is not None else ".logomesh.yml", say=say)

    if sarif is not None:
        from app.review.red import write_sarif

        try:
            write_sarif(sarif, evaluation)
        except OSError as exc:
            raise fail(f"cannot write {sarif}: {exc.strerror}") from exc
    say(f"verdict {evaluation.verdict}, CIS {evaluation.cis_score:.4f}")
    say("recording the DBOM…")
    from app.ledger.local import record_dbom  # the ledger's database stack is heavy to load

    dbom_id = record_dbom(evaluation, settings, warn=notice)  # a record that is lost is said even with --quiet
    # the report names the DBOM it was recorded as: a reader of the report alone can look it up
    if output is OutputFormat.json:
        from checks.report import review_report

        sys.stdout.write(review_report(evaluation, dbom_id).pretty_json() + "\n")
    else:
        from checks.render import render_markdown, render_text

        sys.stdout.write(render_markdown(evaluation, place="cli", dbom_id=dbom_id)
                         if output is OutputFormat.markdown else render_text(evaluation, dbom_id=dbom_id))
    sys.stdout.flush()
    if dbom_id is not None:
        result_line(f"dbom {dbom_id}", quiet=quiet)
    raise typer.Exit(EXIT_FAIL if fails(evaluation, fail_on) else EXIT_OK)


def _run_review(path: Path, base: str, head: str, settings: Settings, *, title: str, body: str,
                config_text: str | None, config_source: str, say: Progress) -> Evaluation:
    """The engine's review; input errors exit 2."""
    import asyncio

    from app.review.assembly import review_repository
    from app.review.embeddings import EmbeddingError
    from app.review.gitrepo import GitError
    from checks.diff import DiffError
    from checks.errors import ConfigError
    from rubric import RubricError
    from sandbox.errors import SandboxError

    try:
        evaluation, _prepared = asyncio.run(review_repository(
            path, base, head, settings=settings, title=title, body=body, config_text=config_text,
            config_source=config_source, progress=say,
        ))
    except (GitError, ConfigError, RubricError, DiffError) as exc:
        raise fail(str(exc)) from exc
    except (SandboxError, EmbeddingError) as exc:  # a component the settings require is not there
        raise fail(str(exc)) from exc
    return evaluation


cli.command("audit", short_help="Audit a whole repository (and its PDF report) against a rubric.",
            epilog=AUDIT_EXIT_CODES)(audit_command)


@cli.command(short_help="Print the version number.")
def version() -> None:
    """Print the version (the number alone; 'logomesh --version' prints 'logomesh VERSION')."""
    sys.stdout.write(package_version() + "\n")


cli.add_typer(dbom_cli, name="dbom")
from app.cli.services import serve, worker  # noqa: E402 - the App's commands live in their own module

cli.command()(serve)
cli.command()(worker)
cli.add_typer(sandbox_cli, name="sandbox")
cli.add_typer(deploy_cli, name="deploy")


# Commands whose work is durable when they return (output written, DBOM committed): the process may end at once
# instead of tearing down the interpreter, which with PyTorch loaded takes seconds and does nothing useful.
FAST_EXIT_COMMANDS = frozenset({"review"})


def main() -> None:
    fast = len(sys.argv) > 1 and sys.argv[1] in FAST_EXIT_COMMANDS
    try:
        cli(prog_name="logomesh")
    except SystemExit as exc:
        if not fast:
            raise
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write(f"{exc.code}\n")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    main()
