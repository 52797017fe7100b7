"""Fixtures for the hardening suite: the App's real end-to-end harness (uvicorn, Redis, arq, git, fake GitHub)
plus a tally of what each test tried, read by ``scripts/security_report.py``.

Every test is marked ``@pytest.mark.hardening("fault" | "input" | "attack")`` and records each case it tries
with the ``tally`` fixture; the cases land in the junit XML as ``<property name="case" …>`` so the report counts
them. A case of a failing test counts as not survived / not rejected cleanly / not contained.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

# the App's end-to-end fixtures, reused as they are (one fake GitHub for the whole project)
from tests.app.conftest import app_key, github, harness, repo, settings  # noqa: F401

CATEGORIES = ("fault", "input", "attack")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hardening(category): fault | input | attack (read by security_report.py)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("hardening")
        if marker is not None and (not marker.args or marker.args[0] not in CATEGORIES):
            raise pytest.UsageError(f"{item.nodeid}: hardening marker needs one of {CATEGORIES}")


Tally = Callable[[str], None]


@pytest.fixture
def tally(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> Tally:
    """``tally("10 MB body")``: one case tried by this test, in the test's category."""
    marker = request.node.get_closest_marker("hardening")
    if marker is None:
        raise pytest.UsageError(f"{request.node.nodeid} uses tally without @pytest.mark.hardening")
    category = marker.args[0]

    def add(name: str) -> None:
        record_property("case", json.dumps({"category": category, "name": name}))

    return add
