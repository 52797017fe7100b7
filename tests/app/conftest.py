"""Fixtures for the App's end-to-end tests: real Redis, real uvicorn, real git, a fake GitHub on loopback."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import uvicorn
from arq.worker import Worker
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.receiver.asgi import create_app
from app.settings import Settings
from app.worker.jobs import worker_options
from tests.app.fakegithub import FIXTURES, FakeGitHub
from tests.app.sqlite_dbom import SqliteDbom

REDIS_URL = os.environ.get("LOGOMESH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
SECRET = "s3cret-for-tests"
INSTALLATION = 4242
REPO = "octo/shop"
PR = 7
WEBHOOKS = FIXTURES / "webhooks"


class ServerThread:
    """A real uvicorn server on a free loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@dataclass
class ShopRepo:
    work: Path
    bare: Path
    base: str
    head: str
    head2: str
    failing: str  # a change whose own test fails


BASE_FILES = {
    "shop/__init__.py": "",
    "shop/cart.py": "def total(prices):\n    return sum(prices)\n",
    "tests/test_cart.py": "from shop.cart import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
    ".logomesh.yml": "version: 1\nthresholds: {pass: 0.5, fail: 0.2}\n",
}
WEAK_CONFIG = "version: 1\nthresholds: {pass: 0.01, fail: 0.0}\n"
HEAD_FILES = {
    "shop/discount.py": ("def apply_discount(total, percent):\n"
                         "    \"\"\"Apply a percentage discount code to the cart total.\"\"\"\n"
                         "    rate = eval(str(percent)) / 100\n"
                         "    return round(total * (1 - rate), 2)\n"),
    "tests/test_discount.py": ("from shop.discount import apply_discount\n\n\n"
                               "def test_discount():\n    assert apply_discount(100, 10) == 90\n"),
}


def make_repo(root: Path) -> ShopRepo:
    work = root / "work"
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    for path, text in BASE_FILES.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Cart totals")
    base = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", "feature")
    for path, text in HEAD_FILES.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Add percentage discount codes")
    head = git(work, "rev-parse", "HEAD")
    (work / "shop/discount.py").write_text(HEAD_FILES["shop/discount.py"].replace("eval(str(percent))",
                                                                                  "float(percent)"))
    # the PR also tries to weaken its own review: the config must come from the base
    (work / ".logomesh.yml").write_text(WEAK_CONFIG)
    git(work, "commit", "-q", "-am", "Parse the percentage safely")
    head2 = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", "failing", base)
    (work / "shop/discount.py").write_text("def apply_discount(total, percent):\n"
                                           "    return round(total * (1 + percent / 100), 2)\n")
    (work / "tests/test_discount.py").write_text(HEAD_FILES["tests/test_discount.py"])
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Add percentage discounts")
    failing = git(work, "rev-parse", "HEAD")
    bare = root / "repos" / "octo" / "shop.git"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(bare, "config", "http.receivepack", "false")
    return ShopRepo(work=work, bare=bare, base=base, head=head, head2=head2, failing=failing)


def generate_app_key() -> tuple[str, str]:
    """A fresh GitHub App key pair: (private PKCS#8 PEM, public SubjectPublicKeyInfo PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@pytest.fixture(scope="session")
def app_key() -> tuple[str, str]:
    return generate_app_key()


@pytest.fixture(scope="session")
def repo(tmp_path_factory: pytest.TempPathFactory) -> ShopRepo:
    return make_repo(tmp_path_factory.mktemp("gitrepos"))


@pytest.fixture
def github(repo: ShopRepo, app_key: tuple[str, str]) -> Iterator[FakeGitHub]:
    fake = FakeGitHub(app_id=123, public_key_pem=app_key[1], repos_root=repo.bare.parent.parent)
    fake.add_pull(REPO, PR, head=repo.head, base=repo.base, title="Add percentage discount codes to the cart",
                  body="Customers can enter a discount code worth a percentage of the cart total.")
    with ServerThread(fake.app()) as url:
        fake.url = url  # type: ignore[attr-defined]
        yield fake
    assert fake.errors == [], f"requests that broke GitHub's schemas: {fake.errors}"


@pytest.fixture
def settings(github: FakeGitHub, app_key: tuple[str, str], tmp_path: Path) -> Settings:
    prefix = f"logomesh-test:{uuid.uuid4().hex[:12]}:"
    return Settings(
        _env_file=None,
        app_id=123, private_key=app_key[0], webhook_secret=SECRET,
        github_api_url=github.url, github_web_url=github.url,  # type: ignore[attr-defined]
        public_url="https://logomesh.test", redis_url=REDIS_URL, redis_prefix=prefix, queue_name=prefix + "queue",
        database_url=f"sqlite+aiosqlite:///{tmp_path}/ready.db", home=tmp_path / "home",
        sandbox="off", embedding="off", red_team="off", llm_provider="offline",
        max_tries=3, job_timeout_seconds=120, concurrency=1, max_body_bytes=256 * 1024,
    )


@dataclass
class Harness:
    settings: Settings
    url: str
    github: FakeGitHub
    repo: ShopRepo
    dbom: SqliteDbom
    redis: aioredis.Redis
    job_ids: list[str] = field(default_factory=list)

    def comments(self) -> list[dict[str, Any]]:
        """The comments on the test PR, in the fake GitHub."""
        return [c for c in self.github.comments.values() if c["repo"] == REPO and c["issue_number"] == PR]

    def sign(self, body: bytes, secret: str = SECRET) -> str:
        return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()

    async def post(self, event: str, payload: dict[str, Any] | bytes, *, delivery: str | None = None,
                   signature: str | None = None, headers: dict[str, str] | None = None) -> httpx.Response:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        delivery = delivery or str(uuid.uuid4())
        self.job_ids.append(delivery)
        sent = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
                "X-Hub-Signature-256": signature if signature is not None else self.sign(body), **(headers or {})}
        async with httpx.AsyncClient(base_url=self.url, timeout=10) as client:
            return await client.post("/webhook", content=body, headers=sent)

    async def run_worker(self, dbom: Any = None) -> Worker:
        """Drain the queue with an in-process burst worker writing to ``dbom`` (default: the harness's store)."""
        store = self.dbom if dbom is None else dbom

        async def factory(_settings: Settings) -> Any:
            return store

        options = worker_options(self.settings, dbom_factory=factory)
        options["on_shutdown"] = None  # the harness owns the DBOM store
        worker = Worker(**options, burst=True, handle_signals=False, poll_delay=0.05)
        try:
            await worker.main()
        finally:
            await worker.close()
        return worker


def fixture_payload(event: str, name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((WEBHOOKS / event / name).read_text())
    return payload


def pr_payload(name: str, *, head: str, base: str, number: int = PR, **pr_fields: Any) -> dict[str, Any]:
    """A COPY of a real fixture pointed at the test repo."""
    payload = fixture_payload("pull_request", name)
    payload["installation"] = {"id": INSTALLATION, "node_id": "x"}
    payload["repository"]["full_name"] = REPO
    payload["repository"]["name"] = "shop"
    payload["repository"]["owner"]["login"] = "octo"
    payload["number"] = number
    pr = payload["pull_request"]
    pr["number"] = number
    pr["head"]["sha"] = head
    pr["base"]["sha"] = base
    pr.update(pr_fields)
    return payload


@pytest.fixture
async def harness(settings: Settings, github: FakeGitHub, repo: ShopRepo, tmp_path: Path
                  ) -> AsyncIterator[Harness]:
    dbom = await SqliteDbom.open(tmp_path / "dbom.db")
    redis = aioredis.from_url(REDIS_URL)  # type: ignore[no-untyped-call]
    try:
        with ServerThread(create_app(settings, env_path=tmp_path / ".env")) as url:
            h = Harness(settings, url, github, repo, dbom, redis)
            yield h
    finally:
        keys = [k async for k in redis.scan_iter(match=settings.redis_prefix + "*")]
        for job_id in h.job_ids:
            keys += [f"arq:job:{job_id}", f"arq:result:{job_id}", f"arq:retry:{job_id}",
                     f"arq:in-progress:{job_id}"]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        await dbom.close()


def verdict_title(title: str) -> bool:
    """A check run's title once it carries a verdict: ``Pass · CIS 0.88`` or the rule that decided it, ``Fail · a
    test of this change fails`` (then what to fix)."""
    return title.startswith(("Pass · ", "Neutral · ", "Fail · "))


def score_cells(report: str) -> dict[str, str]:
    """The report's one row of scores, by column: ``{"T tests": "0.80", "CIS": "**0.62** neutral", …}``."""
    lines = report.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| R intent |"))
    header = [c.strip() for c in lines[at].strip("|").split("|")]
    row = [c.strip() for c in lines[at + 2].strip("|").split("|")]
    return dict(zip(header, row, strict=True))
