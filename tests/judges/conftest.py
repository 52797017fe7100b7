"""Fixtures for the judges: the fake Anthropic server, small git repositories, and LLM judges wired to both."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.llm.anthropic_client import AnthropicClient, ReviewBudget
from app.llm.retry import RetryPolicy
from app.review.assembly import PreparedReview, prepare
from app.review.gitrepo import GitRepo
from app.settings import Settings, load_settings
from checks.court import CourtParts, review
from checks.judges import offline_judges
from checks.judges.llm import LLMJudge
from checks.models import Evaluation
from tests.judges.fake_anthropic import FakeAnthropicServer

MODEL = "claude-sonnet-4-6"
NONCE_KEY = b"k" * 32
GIT_ENV = {"GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.com",
           "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_DATE": "@1767225600 +0000", "GIT_COMMITTER_DATE": "@1767225600 +0000"}

BASE = {
    "calc/__init__.py": '"""A calculator."""\n',
    "calc/ops.py": '"""Arithmetic."""\n\n\ndef add(a, b):\n    return a + b\n',
    "tests/test_ops.py": "from calc.ops import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}
CHANGE = {
    "calc/ops.py": BASE["calc/ops.py"] + "\n\ndef sub(a, b):\n    return a - b\n",
    "tests/test_ops.py": BASE["tests/test_ops.py"] + "\n\ndef test_sub():\n    from calc.ops import sub\n"
                         "    assert sub(3, 2) == 1\n",
}
TITLE = "Add subtraction to calc.ops"
BODY = "Adds `sub` to calc/ops.py with tests in tests/test_ops.py."


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], check=True, env={**os.environ, **GIT_ENV},
                          capture_output=True, text=True).stdout


def make_repo(root: Path, change: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for files, message, branch in ((BASE, "Initial calculator", None), (change or CHANGE, "Add sub()", "pr")):
        if branch:
            git(root, "checkout", "-q", "-b", branch)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", message)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    return load_settings(home=tmp_path / ".logomesh", **overrides)


def prepared_for(repo: Path, tmp_path: Path, title: str = TITLE, body: str = BODY) -> PreparedReview:
    return prepare(GitRepo.open(repo), "main", "pr", settings=settings_for(tmp_path), title=title, body=body)


class Sleeps:
    """Records the waits the client asks for instead of sleeping them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(server: FakeAnthropicServer, *, budget: ReviewBudget | None = None, timeout: float = 10.0,
                max_retries: int = 3, sleep: Sleeps | None = None, api_key: str | None = None) -> AnthropicClient:
    return AnthropicClient(
        api_key=api_key or server.fake.api_key, model=MODEL, base_url=server.base_url,
        budget=budget or ReviewBudget(max_tokens=500_000, max_usd=10.0, input_usd_per_mtok=3.0,
                                      output_usd_per_mtok=15.0),
        timeout_seconds=timeout,
        retry=RetryPolicy(max_retries=max_retries, sleep=sleep or Sleeps(), jitter=lambda: 0.5))


def llm_judges(client: AnthropicClient, prepared: PreparedReview, *, fallback: bool = True) -> list[LLMJudge]:
    offline = {j.persona: j for j in offline_judges()}
    return [LLMJudge(p, client, nonce_key=NONCE_KEY, fallback=offline[p] if fallback else None,
                     known_secrets=(client_key(client),))
            for p in prepared.rubric.judges]


def client_key(client: AnthropicClient) -> str:
    return str(client._sdk.api_key)


async def run_review(prepared: PreparedReview, judges: list[LLMJudge] | None = None) -> Evaluation:
    parts = CourtParts(judges=judges) if judges is not None else CourtParts()
    return await review(prepared.case, prepared.rubric, parts)
