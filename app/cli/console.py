"""What every ``logomesh`` command prints on stderr: one console, the error printer and the progress printer.

stdout carries the report and nothing else. stderr carries, for a person:

- progress lines, ``logomesh: [  3.2s] sandbox: running tests…`` (seconds since the command started), which
  ``--quiet`` silences;
- notices, ``logomesh: notice: …``, about a private key left somewhere or a record that could not be written,
  which ``--quiet`` never silences;
- errors, ``error: …``, never silenced.

Text is printed as is, never read as Rich markup: a git ref, a path or an exception may contain ``[brackets]``.
This module imports only Rich and Typer, so that ``logomesh --help`` and the first progress line come at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.text import Text

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C

# soft_wrap: a long path or message stays one line, whatever the terminal's width (and greppable in a log)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def print_error(message: str, label: str = "error") -> None:
    """``error: message`` (``label`` for e.g. ``sandbox not ready``)."""
    stderr.print(Text.assemble((f"{label}:", "bold red"), " ", message))


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print ``message`` as an error and return the exit to raise: ``raise fail("…") from exc``."""
    print_error(message)
    return typer.Exit(code)


@contextmanager
def exit_130_on_ctrl_c() -> Iterator[None]:
    """Ctrl-C: ``error: interrupted`` and exit 130, not click's ``Aborted!`` with exit 1, which reads as a failing
    verdict. (The review's async parts are cancelled and closed by ``asyncio.run`` before this runs.)"""
    try:
        yield
    except KeyboardInterrupt as exc:
        print_error("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from exc


def notice(message: str) -> None:
    """``logomesh: message``, printed even under ``--quiet``."""
    stderr.print(Text(f"logomesh: {message}"))


def result_line(message: str, *, quiet: bool) -> None:
    """A line scripts read (``logomesh: dbom ID``): no elapsed time, silenced by ``--quiet``."""
    if not quiet:
        stderr.print(Text(f"logomesh: {message}"))


class Progress:
    """The progress printer: call it with a message; it prefixes the seconds since it was made.

    ``quiet``: prints nothing. ``clock`` is injectable for tests.
    """

    def __init__(self, *, quiet: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self._clock = clock
        self.started = clock()

    def elapsed(self) -> float:
        return self._clock() - self.started

    def line(self, message: str) -> Text:
        return Text.assemble(("logomesh:", "dim"), f" [{self.elapsed():5.1f}s] ", message)

    def __call__(self, message: str) -> None:
        if not self.quiet:
            stderr.print(self.line(message))
