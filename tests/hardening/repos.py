"""Build a repository for one hardening case and publish it on the fake GitHub (bare repo + open PR)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.app.conftest import PR, Harness, git, pr_payload

DEFAULT_BASE = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def add(a, b):\n    return a + b\n",
    "tests/test_core.py": "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}


def publish_repo(h: Harness, tmp: Path, name: str, head_files: Mapping[str, str | bytes], *,
                 base_files: Mapping[str, str | bytes] | None = None,
                 tweak_head: Callable[[Path], None] | None = None,
                 title: str = "Add a helper", body: str | None = "Adds a helper to the package.") -> dict[str, Any]:
    """``octo/<name>`` with a base commit and a head commit; answers the signed-ready ``opened`` payload."""
    work = tmp / name
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    for path, content in (base_files if base_files is not None else DEFAULT_BASE).items():
        _write(work / path, content)
    git(work, "add", "-A")
    git(work, "commit", "-q", "--allow-empty", "-m", "base")
    base = git(work, "rev-parse", "HEAD")
    for path, content in head_files.items():
        _write(work / path, content)
    git(work, "add", "-A")
    if tweak_head is not None:  # after staging, so it can stage what the work tree cannot hold (gitlinks)
        tweak_head(work)
    git(work, "commit", "-q", "--allow-empty", "-m", "head")
    head = git(work, "rev-parse", "HEAD")
    bare = h.repo.bare.parent / f"{name}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    repo = f"octo/{name}"
    h.github.add_pull(repo, PR, head=head, base=base, title=title, body=body)
    payload = pr_payload("opened.payload.json", head=head, base=base, title=title, body=body)
    payload["repository"]["full_name"] = repo
    payload["repository"]["name"] = name
    return payload


def _write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
