"""Fixtures for the hardening suite: the App's real end-to-end harness (uvicorn, Redis, arq, git, fake GitHub)
plus a tally of what each test tried, read by ``scripts/security_report.py``.

Every test is marked ``@pytest.mark.hardening("fault" | "input" | "attack")`` and records each case it tries
with the ``tally`` fixture; the cases land in the junit XML as ``<property name="case" …>`` so the report counts
them. A case of a failing test counts as not survived / not rejected cleanly / not contained.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.settings import Settings

# the App's end-to-end fixtures, reused as they are (one fake GitHub for the whole project)
from tests.app.conftest import PR, REDIS_URL, REPO, SECRET, ServerThread, ShopRepo, app_key, harness, repo  # noqa: F401
from tests.app.fakegithub import FakeGitHub
from tests.hardening.injector import Injector

# githubkit caches App JWTs per app id for the whole process: when tests/app runs in the same process with
# its own key, the same id would make one suite present the other's JWT
APP_ID = 9123

CATEGORIES = ("fault", "input", "attack")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hardening(category): fault | input | attack (read by security_report.py)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("hardening")
        if marker is not None and (not marker.args or marker.args[0] not in CATEGORIES):
            raise pytest.UsageError(f"{item.nodeid}: hardening marker needs one of {CATEGORIES}")


@pytest.fixture
def github(repo: ShopRepo, app_key: tuple[str, str]) -> Iterator[FakeGitHub]:  # noqa: F811
    """tests/app's fake GitHub, served behind an :class:`Injector` (``github.inject``) for fault tests."""
    fake = FakeGitHub(app_id=APP_ID, public_key_pem=app_key[1], repos_root=repo.bare.parent.parent)
    fake.add_pull(REPO, PR, head=repo.head, base=repo.base, title="Add percentage discount codes to the cart",
                  body="Customers can enter a discount code worth a percentage of the cart total.")
    fake.inject = Injector(fake.app())  # type: ignore[attr-defined]
    with ServerThread(fake.inject) as url:  # type: ignore[attr-defined]
        fake.url = url  # type: ignore[attr-defined]
        yield fake
    assert fake.errors == [], f"requests that broke GitHub's schemas: {fake.errors}"


@pytest.fixture
def settings(github: FakeGitHub, app_key: tuple[str, str], tmp_path: Path) -> Settings:  # noqa: F811
    """tests/app's settings, under this suite's own App id."""
    prefix = f"logomesh-hard:{uuid.uuid4().hex[:12]}:"
    return Settings(
        _env_file=None,
        app_id=APP_ID, private_key=app_key[0], webhook_secret=SECRET,
        github_api_url=github.url, github_web_url=github.url,  # type: ignore[attr-defined]
        public_url="https://logomesh.test", redis_url=REDIS_URL, redis_prefix=prefix, queue_name=prefix + "queue",
        database_url=f"sqlite+aiosqlite:///{tmp_path}/ready.db", home=tmp_path / "home",
        sandbox="off", embedding="off", red_team="off", llm_provider="offline",
        max_tries=3, job_timeout_seconds=120, concurrency=1, max_body_bytes=256 * 1024,
    )


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
