"""Build the bundled example: a small repository with a PR-shaped history (``main`` and ``feature/discounts``).

Commit dates, authors and messages are fixed, so the commit ids — and the review of the change — are the same on
every machine. Usage: ``python examples/make_example.py DEST`` (DEST must not exist yet).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "shop"
ENV = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

# (message, date, files from examples/shop/<stage>/ copied over the tree)
HISTORY = [
    ("main", "Create the shop package with cart totals", "2026-01-05T10:00:00+00:00", "base"),
    ("feature/discounts", "Add percentage discount codes to the cart\n\nCodes are validated against the catalogue "
     "and applied before tax.", "2026-01-06T09:30:00+00:00", "feature-1"),
    ("feature/discounts", "Test discount codes, including unknown codes", "2026-01-06T11:15:00+00:00", "feature-2"),
]
PR_TITLE = "Add percentage discount codes to the cart"
PR_BODY = (HERE / "PR.md").read_text(encoding="utf-8")


def git(repo: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, **ENV}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def build(dest: Path) -> Path:
    if dest.exists():
        raise SystemExit(f"{dest} exists already")
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    for branch, message, date, stage in HISTORY:
        if branch != "main":
            git(dest, "checkout", "-q", "-B", branch)
        shutil.copytree(HERE / stage, dest, dirs_exist_ok=True)
        git(dest, "add", "-A")
        git(dest, "commit", "-q", "-m", message, date=date)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: make_example.py DEST")
    print(build(Path(sys.argv[1])))
