"""``logomesh serve`` (the webhook receiver) and ``logomesh worker`` (the arq worker).

Both check their settings at start-up and exit 2 with the name of the missing or malformed variable.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from app.settings import Settings, SettingsError, load_settings, require_app_settings

app_cli = typer.Typer(add_completion=False, no_args_is_help=True, help="Run the GitHub App.")
stderr = Console(stderr=True, highlight=False)


def _settings(*, worker: bool) -> Settings:
    try:
        settings = load_settings()
        require_app_settings(settings, worker=worker)
    except SettingsError as exc:
        stderr.print(f"[bold red]error:[/] {exc}", markup=True, soft_wrap=True)
        raise typer.Exit(2) from exc
    return settings


@app_cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default LOGOMESH_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default LOGOMESH_PORT).")] = None,
) -> None:
    """Receive GitHub webhooks: verify, dedupe, enqueue."""
    settings = _settings(worker=False)
    import uvicorn

    from app.web import create_app

    uvicorn.run(create_app(settings), host=host or settings.host, port=port or settings.port,
                proxy_headers=True, access_log=False)


@app_cli.command()
def worker(burst: Annotated[bool, typer.Option(help="Stop when the queue is empty.")] = False) -> None:
    """Review queued pull requests."""
    settings = _settings(worker=True)
    import asyncio

    from arq.worker import Worker

    from app.worker import worker_options

    asyncio.run(Worker(**worker_options(settings), burst=burst).async_run())
