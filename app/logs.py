"""Logging: structlog JSON lines on stdout for ``serve`` and ``worker``, with the secrets scrubbed.

Context (``delivery_id``, ``installation_id``, ``repo``, ``pr``, ``head_sha``, ``job_id``) is bound where it
becomes known, by ``log.bind`` in the receiver and the worker. The standard library's records (uvicorn, arq)
go through the same renderer, so one stream holds one format. structlog's own events are rendered by structlog and
written straight to that stream, under the same lock as the standard library's (:class:`LineWriter`): a line
costs no ``logging.LogRecord``, which the receiver would otherwise build twice per delivery.

Every string value of every event passes :class:`Redactor`, which replaces the known secrets — the webhook
secret, the App's private key, the LLM API key, and each installation token as it is minted — with
``[redacted]``. Logging a secret is a bug elsewhere; the redactor is the second line.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterable, MutableMapping
from typing import Any, TextIO

import structlog

REDACTED = "[redacted]"
MIN_SECRET = 8  # shorter strings would redact ordinary words


class Redactor:
    """A structlog processor replacing known secret strings anywhere in an event's string values."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *secrets: str | None) -> None:
        with self._lock:
            for secret in secrets:
                if not secret or len(secret) < MIN_SECRET:
                    continue
                self._secrets.add(secret)
                # a PEM key is logged line by line as often as whole: each long line is a secret too
                self._secrets.update(line for line in secret.splitlines()
                                     if len(line) >= 40 and "-----" not in line)

    def scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            for secret in self._secrets:
                if secret in value:
                    value = value.replace(secret, REDACTED)
            return value
        if isinstance(value, dict):
            return {k: self.scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.scrub(v) for v in value)
        return value

    def __call__(self, logger: Any, name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if not self._secrets:
            return event
        for key, value in list(event.items()):
            event[key] = self.scrub(value)
        return event


REDACTOR = Redactor()


def secrets_of(settings: Any) -> Iterable[str]:
    """The static secrets a process holds (settings), for :meth:`Redactor.add`."""
    for name in ("webhook_secret", "private_key", "llm_api_key", "signing_key", "llm_nonce_key"):
        value = getattr(settings, name, None)
        if value is not None:
            yield value.get_secret_value()
    pem: str | None = None
    with contextlib.suppress(Exception):  # no key configured is not this function's business
        pem = settings.private_key_pem()
    if pem:
        yield pem


class LineWriter:
    """structlog's final logger: each rendered event as one line on the standard library handler's stream, under
    that handler's lock, so that lines of both sources never interleave. ``name`` is the logger's name, for
    ``add_logger_name``."""

    def __init__(self, handler: logging.StreamHandler[TextIO], name: str) -> None:
        self.name = name
        self._handler = handler

    def msg(self, message: str) -> None:
        handler = self._handler
        handler.acquire()
        try:
            handler.stream.write(message + "\n")
            handler.stream.flush()
        except Exception:  # as in logging.StreamHandler.emit: a broken stream is reported, never raised to the caller
            handler.handleError(logging.makeLogRecord({"name": self.name, "msg": message}))
        finally:
            handler.release()

    debug = info = warning = warn = error = err = critical = exception = fatal = failure = log = msg


def _drop_color(logger: Any, name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event.pop("color_message", None)  # uvicorn's ANSI-coloured duplicate of the message
    return event


def configure(settings: Any = None, *, stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """JSON lines to ``stream`` (stdout) for structlog and the standard library, secrets scrubbed."""
    if settings is not None:
        REDACTOR.add(*secrets_of(settings))
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        REDACTOR,
    ]
    handler = logging.StreamHandler(stream or sys.stdout)
    structlog.configure(
        processors=[*shared, structlog.processors.JSONRenderer()],
        logger_factory=lambda name="", *_: LineWriter(handler, name),
        wrapper_class=structlog.make_filtering_bound_logger(level),
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.ExtraAdder(), *shared[:-1], REDACTOR],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, _drop_color,
                    structlog.processors.JSONRenderer()],
    )
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_logomesh", False):
            root.removeHandler(old)
    handler._logomesh = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "arq"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    # one line per HTTP call or migration plugin is noise: GitHub calls are counted in the metrics instead
    for name in ("httpx", "httpcore", "alembic"):
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
