"""Whether a package registry the sandbox's setup phase uses answers from this machine."""

from __future__ import annotations

import urllib.request


def unreachable(url: str) -> str | None:
    """None when ``url`` answers 200 from this machine, else why not (a test that needs it is skipped, named)."""
    try:
        with urllib.request.urlopen(url, timeout=15) as answer:
            return None if answer.status == 200 else f"{url} answered {answer.status}"
    except OSError as exc:
        return f"{url} cannot be reached from here: {exc}"
