"""Build a bundled example: a small repository with a PR-shaped history.

``shop`` (``main`` and ``feature/discounts``): discount codes for a cart. ``ratelimit`` (``main``,
``feature/rate-limit`` and ``feature/rate-limit-locked``): a per-client rate limiter whose single-threaded tests
pass, without and with the lock that the request threads sharing it need.

Commit dates, authors and messages are fixed, so the commit ids — and the review of the change — are the same on
every machine. Usage: ``python examples/make_example.py DEST [shop|ratelimit]`` (DEST must not exist yet).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
ENV = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@dataclass(frozen=True)
class Example:
    # (branch, message, date, stages: directories of examples/<name>/ copied over the tree in this order)
    history: tuple[tuple[str, str, str, tuple[str, ...]], ...]
    title: str  # the PR's title; its body is examples/<name>/PR.md


SHOP = Example(history=(
    ("main", "Create the shop package with cart totals", "2026-01-05T10:00:00+00:00", ("base",)),
    ("feature/discounts", "Add percentage discount codes to the cart\n\nCodes are validated against the catalogue "
     "and applied before tax.", "2026-01-06T09:30:00+00:00", ("feature-1",)),
    ("feature/discounts", "Test discount codes, including unknown codes", "2026-01-06T11:15:00+00:00", ("feature-2",)),
), title="Add percentage discount codes to the cart")
RATELIMIT_MESSAGE = "Limit each client to 5 requests per minute\n\nOne RateLimiter is shared by the request threads."
RATELIMIT = Example(history=(
    ("main", "Create the request handler", "2026-02-02T10:00:00+00:00", ("base",)),
    ("feature/rate-limit", RATELIMIT_MESSAGE, "2026-02-03T09:30:00+00:00", ("feature",)),
    ("feature/rate-limit-locked", RATELIMIT_MESSAGE, "2026-02-03T09:30:00+00:00", ("feature", "locked")),
), title="Limit each client to 5 requests per minute")
BY_NAME = {"shop": SHOP, "ratelimit": RATELIMIT}
# the shop example, as scripts/demo.sh and older callers know it
HERE = EXAMPLES / "shop"
HISTORY = SHOP.history
PR_TITLE = SHOP.title
PR_BODY = (HERE / "PR.md").read_text(encoding="utf-8")


def pr_body(name: str) -> str:
    return (EXAMPLES / name / "PR.md").read_text(encoding="utf-8")


def git(repo: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, **ENV}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def build(dest: Path, name: str = "shop") -> Path:
    """Build example ``name`` in ``dest``; a branch seen for the first time starts at ``main``."""
    if dest.exists():
        raise SystemExit(f"{dest} exists already")
    example = BY_NAME[name]
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    made = {"main"}
    for branch, message, date, stages in example.history:
        if branch not in made:
            git(dest, "checkout", "-q", "-b", branch, "main")
            made.add(branch)
        for stage in stages:
            shutil.copytree(EXAMPLES / name / stage, dest, dirs_exist_ok=True)
        git(dest, "add", "-A")
        git(dest, "commit", "-q", "-m", message, date=date)
    return dest


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in BY_NAME):
        raise SystemExit(f"usage: make_example.py DEST [{'|'.join(BY_NAME)}]")
    print(build(Path(sys.argv[1]), *sys.argv[2:]))
