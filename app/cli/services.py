"""``logomesh serve`` (the webhook receiver) and ``logomesh worker`` (the arq worker).

Both check their settings at start-up and exit 2 with the name of the missing or malformed variable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.console import EXIT_USAGE, fail, print_error, stderr

if TYPE_CHECKING:
    from app.settings import Settings

EXIT_STARTUP = 3


def _settings(*, worker: bool) -> Settings:
    from app.settings import SettingsError, load_settings, require_app_settings

    try:
        settings = load_settings()
        require_app_settings(settings, worker=worker)
    except SettingsError as exc:
        raise fail(str(exc), EXIT_USAGE) from exc
    return settings


def serve(
    host: Annotated[str | None, typer.Option(metavar="ADDRESS", help="Bind address (default LOGOMESH_HOST).")]
    = None,
    port: Annotated[int | None, typer.Option(metavar="PORT", help="Port (default LOGOMESH_PORT).")] = None,
) -> None:
    """Receive GitHub webhooks: verify, dedupe, enqueue."""
    settings = _settings(worker=False)
    import uvicorn

    from app.logs import configure

    configure(settings)
    from app.receiver.asgi import create_app

    uvicorn.run(create_app(settings), host=host or settings.host, port=port or settings.port,
                proxy_headers=True, access_log=False, log_config=None)


def worker(
    burst: Annotated[bool, typer.Option(help="Stop when the queue is empty.")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Exit 0 if a worker refreshed its health key recently, 1 otherwise (liveness probe).")] = False,
) -> None:
    """Review queued pull requests."""
    import asyncio

    if check:
        # a probe needs only Redis: not the App's key, so a misconfigured secret does not mask a dead worker
        from app.settings import SettingsError, load_settings

        try:
            settings = load_settings()
        except SettingsError as exc:
            raise fail(str(exc), EXIT_USAGE) from exc
        from arq.worker import async_check_health
        from redis.exceptions import RedisError

        from app.queue import Keys, redis_settings

        probe = redis_settings(settings)
        probe.conn_retries = 0  # a probe answers now; the orchestrator retries
        try:
            code = asyncio.run(async_check_health(probe, Keys(settings.redis_prefix).health(), settings.queue_name))
        except (OSError, RedisError) as exc:
            stderr.print(f"unhealthy: Redis does not answer ({type(exc).__name__})", markup=False)
            code = 1
        raise typer.Exit(code)
    settings = _settings(worker=True)
    from arq.worker import Worker

    from app.logs import configure

    configure(settings)

    import contextlib

    import structlog

    from app.worker.jobs import worker_options
    from app.worker.startup import StartupError

    log = structlog.get_logger("logomesh.worker")

    async def run() -> None:
        from redis.exceptions import RedisError

        pause = 1.0
        while True:
            # arq binds the worker to the loop current at construction: build it inside the running loop
            worker = Worker(**worker_options(settings), burst=burst)
            try:
                await worker.async_run()
                return
            except asyncio.CancelledError:
                return  # SIGTERM/SIGINT: arq has re-queued what it had to cancel
            except (RedisError, OSError) as exc:
                # Redis was away longer than the commands ride out: the process stays, and reconnects
                log.warning("lost Redis; starting the worker again", error=type(exc).__name__, retry_in=pause)
            finally:
                with contextlib.suppress(Exception):
                    await worker.close()
            await asyncio.sleep(pause)
            pause = min(pause * 2, 30.0)

    try:
        asyncio.run(run())
    except StartupError as exc:
        print_error(str(exc))
        raise typer.Exit(EXIT_STARTUP) from exc
