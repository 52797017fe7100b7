"""Trim and redact test output before it becomes evidence: PR code may print anything, including secrets
(redacted by the same rules as prompts and reports, ``checks/redaction.py``).

Test output is also made *stable* (:func:`stable_text`): what differs between two runs of the same tests —
pytest's and unittest's timings (``5 passed in 0.12s``, ``--durations`` lines) and CPython's memory addresses
(``<Foo object at 0x7f…>``) — is taken out, so the same review gives the same bytes.
"""

from __future__ import annotations

import re

from checks.redaction import redact_secrets


def redact(text: str) -> str:
    """LogoMesh's one set of redaction rules (:func:`checks.redaction.redact_secrets`)."""
    return redact_secrets(text)


# the timing that closes pytest's summary ("3 failed, 2 passed in 0.25s", "… in 65.12s (0:01:05)") or unittest's
# "Ran 5 tests in 0.012s", at the end of a line
_TIMING = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?$")
_CENTRED = re.compile(r"(=+) (.+) (=+)")  # pytest's summary line when not quiet, centred in "="
_DURATIONS_HEADER = re.compile(r"=+ slowest (?:\d+ )?durations =+")
_DURATION = re.compile(r"\d+(?:\.\d+)?s (?:setup|call|teardown) +\S.*")
_HIDDEN = re.compile(r"\(\d+ durations < [\d.]+s hidden\..*\)")  # after a blank line, when some are too short
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+")
DURATIONS_OMITTED = "(durations omitted: they differ from run to run)"


def _centre(title: str, width: int) -> str:
    """``title`` centred in "=" across ``width`` columns, as pytest's terminal writer draws it."""
    fill = "=" * max((width - len(title) - 2) // 2, 1)
    line = f"{fill} {title} {fill}"
    return line + "=" if len(line) + 1 <= width else line


def _stable_line(line: str) -> str:
    centred = _CENTRED.fullmatch(line)
    if centred is None:
        return _TIMING.sub("", line)
    title = _TIMING.sub("", centred.group(2))
    if title == centred.group(2):
        return line
    # pytest draws the line across the terminal; a title too long for it gets a single "=" on each side
    return _centre(title, len(line)) if len(centred.group(1)) > 1 else f"= {title} ="


def stable_text(text: str) -> str:
    """``text`` without the timings and memory addresses that make two runs of the same tests differ."""
    lines: list[str] = []
    for line in _ADDRESS.sub("at 0x…", text).split("\n"):
        if _DURATION.fullmatch(line):
            continue
        if _HIDDEN.fullmatch(line):
            if lines and lines[-1] == "" and lines[-2:-1] == [DURATIONS_OMITTED]:
                lines.pop()
            continue
        lines.append(_stable_line(line))
        if _DURATIONS_HEADER.fullmatch(line):
            lines.append(DURATIONS_OMITTED)
    return "\n".join(lines)


def trim(text: str, limit: int) -> str:
    """Keep the head and the tail (where test summaries are) of output longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def clean_output(raw: bytes, limit: int) -> str:
    return trim(redact(raw.decode("utf-8", "replace")), limit)


def clean_test_output(raw: bytes, limit: int) -> str:
    """The output of a test run (or a setup) as a review stores it: redacted, stable, trimmed."""
    return trim(stable_text(redact(raw.decode("utf-8", "replace"))), limit)
