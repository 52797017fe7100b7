"""A throw-away clone of a pull request's head (and base) commit, fetched without trusting its content.

``git init`` + ``git fetch --depth=N origin <head> <base>``: no checkout (the court reads git's object store,
so no PR file ever lands on disk, symlinks included), hooks off, no submodules, no LFS smudge, the token
passed as an ``http.extraheader`` through ``GIT_CONFIG_*`` environment variables, never in the URL or argv
(both show up in process lists and logs). Size and file-count caps are checked after the fetch.

Exceptions::

    WorkspaceError          the clone failed (after retries of transient failures) or broke a cap; ``reason``
                            is safe to show on the PR
    └── CloneTooLarge       above ``clone_max_bytes`` or ``clone_max_files``
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import structlog

from app.review.gitrepo import GitError, GitRepo, network_git_env
from app.settings import Settings

FETCH_TIMEOUT = 300.0
FETCH_BACKOFF = (1.0, 2.0, 4.0)
# what git prints for a failure that may pass: HTTP 5xx/429, dropped or timed-out connections
TRANSIENT_GIT = re.compile(r"returned error: (5\d\d|429)|RPC failed|early EOF|hung up unexpectedly|timed out|"
                           r"Connection (reset|refused|timed out)|Could not resolve host|Empty reply from server",
                           re.IGNORECASE)
log = structlog.get_logger("logomesh.workspace")


class WorkspaceError(RuntimeError):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class CloneTooLarge(WorkspaceError):
    pass


@dataclass(frozen=True)
class CloneSpec:
    url: str
    head_sha: str
    base_sha: str
    token: str


def _git_env(token: str) -> dict[str, str]:
    return network_git_env(token=token)


async def _git(cwd: str, env: dict[str, str], *args: str, timeout: float = FETCH_TIMEOUT) -> str:
    # its own process group: a fetch runs git-remote-http as a grandchild that holds our pipes, and killing git
    # alone would leave the job waiting on it (a SIGTERMed worker could then not re-queue the job)
    proc = await asyncio.create_subprocess_exec("git", "-C", cwd, *args, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                start_new_session=True)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError as exc:
        raise WorkspaceError(f"git {args[0]} timed out after {timeout:.0f}s") from exc
    finally:
        # also on cancellation (the job's deadline): never leave git writing into a directory being removed
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await asyncio.shield(proc.wait())
    if proc.returncode != 0:
        detail = err.decode("utf-8", "replace").strip().splitlines()
        raise WorkspaceError(f"git {args[0]} failed: {detail[-1] if detail else 'no detail'}")
    return out.decode("utf-8", "replace")


def transient(error: WorkspaceError) -> bool:
    """A git failure worth another try: a server error, a rate limit, a dropped or timed-out connection — not
    a missing repository or refused credentials."""
    return TRANSIENT_GIT.search(error.reason) is not None


async def fetch_with_retry(root: str, env: dict[str, str], *args: str) -> None:
    """``git fetch``, retried like an API call when the failure is transient (backoff 1 s, 2 s, 4 s)."""
    for attempt in range(len(FETCH_BACKOFF) + 1):
        try:
            await _git(root, env, "fetch", *args)
            return
        except WorkspaceError as exc:
            if attempt == len(FETCH_BACKOFF) or not transient(exc):
                raise
            log.warning("git fetch failed; retrying", reason=exc.reason, attempt=attempt + 1)
            await asyncio.sleep(FETCH_BACKOFF[attempt])


@asynccontextmanager
async def checkout(spec: CloneSpec, settings: Settings) -> AsyncIterator[GitRepo]:
    """Fetch ``spec.head_sha`` and ``spec.base_sha`` into a temp dir; removed on exit whatever happens."""
    if "@" in spec.url.split("//", 1)[-1].split("/", 1)[0]:
        raise WorkspaceError("credentials must not be part of the clone URL")
    root = tempfile.mkdtemp(prefix="logomesh-")
    env = _git_env(spec.token)
    try:
        await _git(root, env, "init", "--quiet")
        await _git(root, env, "remote", "add", "origin", spec.url)
        await fetch_with_retry(root, env, "--quiet", "--no-tags", "--no-recurse-submodules",
                               f"--depth={settings.clone_depth}", "origin", spec.head_sha, spec.base_sha)
        counts = await _git(root, env, "count-objects", "-v")
        size_kib = sum(int(line.split(":")[1]) for line in counts.splitlines()
                       if line.startswith(("size:", "size-pack:")))
        if size_kib * 1024 > settings.clone_max_bytes:
            raise CloneTooLarge(f"the repository is larger than {settings.clone_max_bytes} bytes")
        listing = await _git(root, env, "ls-tree", "-r", "-z", "--name-only", spec.head_sha)
        if listing.count("\0") > settings.clone_max_files:
            raise CloneTooLarge(f"the head commit has more than {settings.clone_max_files} files")
        try:
            yield GitRepo.open(root)
        except GitError as exc:
            raise WorkspaceError(str(exc)) from exc
    finally:
        await asyncio.to_thread(shutil.rmtree, root, True)
