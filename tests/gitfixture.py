"""Build small, deterministic git repositories for tests: fixed authors and dates, so commit ids are stable."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


class RepoBuilder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = 1_767_225_600  # 2026-01-01T00:00:00Z
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        self.clock += 60
        stamp = f"@{self.clock} +0000"
        env = {**os.environ, **ENV, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, env=env, capture_output=True,
                              text=True).stdout

    def write(self, files: Mapping[str, str | None]) -> None:
        for name, text in files.items():
            target = self.path / name
            if text is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def commit(self, message: str, files: Mapping[str, str | None], author: str | None = None) -> str:
        self.write(files)
        self.git("add", "-A")
        args = ["commit", "-q", "--allow-empty", "-m", message]
        if author:
            args.append(f"--author={author}")
        self.git(*args)
        return self.git("rev-parse", "HEAD").strip()

    def branch(self, name: str) -> None:
        self.git("checkout", "-q", "-B", name)

    def branches(self, cases: Mapping[str, Mapping[str, str | None]], base: str = "main") -> dict[str, str]:
        """One branch off ``base`` per case, committing that case's files; each branch's head commit by name."""
        heads: dict[str, str] = {}
        for name, files in cases.items():
            self.branch(name)
            heads[name] = self.commit(f"Change: {name}", files)
            self.git("checkout", "-q", base)
        return heads
