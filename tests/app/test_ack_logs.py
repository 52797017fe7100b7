"""The log stream of ``serve`` and ``worker``: structlog's events are written straight to the standard library
handler's stream (no ``logging.LogRecord`` per event), whole lines only, in the one JSON format."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from app.logs import REDACTED, configure
from app.settings import Settings

SECRET = "a-webhook-secret-to-scrub"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, webhook_secret=SECRET, public_url="https://logomesh.test", home=tmp_path)


def _unconfigure() -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_logomesh", False):
            root.removeHandler(handler)
    structlog.reset_defaults()


@pytest.fixture
def stream(settings: Settings) -> Iterator[io.StringIO]:
    out = io.StringIO()
    configure(settings, stream=out)
    try:
        yield out
    finally:
        _unconfigure()


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_a_structlog_event_builds_no_log_record_and_keeps_its_context(stream: io.StringIO) -> None:
    made: list[str] = []
    factory = logging.getLogRecordFactory()

    def counting(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        made.append(record.name)
        return record

    logging.setLogRecordFactory(counting)
    try:
        log = structlog.get_logger("logomesh.web").bind(delivery_id="d-1", github_event="pull_request")
        log.info("queued", repo="octo/shop", pr=7, secret=SECRET)
        log.debug("below the level")
        logging.getLogger("some.library").warning("started process [%d]", 42, extra={"color_message": "x"})
    finally:
        logging.setLogRecordFactory(factory)
    assert "some.library" in made and "logomesh.web" not in made  # (the formatter copies a record: a nameless one)
    queued, started = _events(stream.getvalue())
    assert {k: v for k, v in queued.items() if k != "timestamp"} == {
        "delivery_id": "d-1", "github_event": "pull_request", "repo": "octo/shop", "pr": 7, "secret": REDACTED,
        "event": "queued", "logger": "logomesh.web", "level": "info"}
    assert {k: started[k] for k in ("event", "logger", "level")} == {
        "event": "started process [42]", "logger": "some.library", "level": "warning"}
    assert queued["timestamp"].endswith("Z") and started["timestamp"].endswith("Z")


def test_lines_of_both_sources_never_interleave_across_threads(stream: io.StringIO) -> None:
    def write(n: int) -> None:
        log = structlog.get_logger("logomesh.worker")
        library = logging.getLogger("arq.worker")
        for i in range(200):
            log.info("step", thread=n, i=i, padding="x" * 500)
            library.warning("job %d.%d %s", n, i, "y" * 500)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = _events(stream.getvalue())
    assert len(events) == 4 * 200 * 2
    assert sum(e["logger"] == "logomesh.worker" for e in events) == sum(e["logger"] == "arq.worker" for e in events)


def test_a_broken_stream_is_reported_not_raised_to_the_code_that_logs(settings: Settings,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError("the reader went away")

    configure(settings, stream=Broken())
    try:
        structlog.get_logger("logomesh.web").info("queued", delivery_id="d-2")  # must not raise
    finally:
        _unconfigure()
    assert "BrokenPipeError" in capsys.readouterr().err
