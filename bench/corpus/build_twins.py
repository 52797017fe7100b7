"""Reverted-fix twins of corpus PRs: the base plus only the PR's test-file changes, its product change left out.

Run from the repository root::

    PYTHONPATH=. HF_HUB_OFFLINE=1 python bench/corpus/build_twins.py [--mirrors DIR] [--work DIR] [--half held-out]

The rule is deterministic: per project, the first ``PER_PROJECT`` PRs of ``prs.json`` (in its order) are twinned.
A twin's commit is the PR's base tree with every changed test file (``build_corpus.is_test``) taken from the PR's
head, written by ``git commit-tree`` with a fixed author, committer and date, so its id is the same wherever it is
built: ``twins.json`` pins it. The commits go into a private bare clone per project under ``--work`` (sharing the
mirror's objects), never into the mirror.

Each twin is then *verified*: its tests run in the Docker sandbox at the twin's head (zero configuration, as a
review runs them), and at its base; the twin is kept only when a test fails at its head that does not fail at the
base (a failing test or a collection error; a pre-existing failure proves nothing): a twin
whose tests all pass does not revert a fix that its tests can see, and is recorded as dropped with the reason.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from build_corpus import is_test  # noqa: E402

CORPUS = HERE / "prs.json"
OUT = HERE / "twins.json"
PER_PROJECT = 2
STAMP = "1767225600 +0000"  # 2026-01-01T00:00:00Z: a twin's commit id depends only on its tree and parent
IDENTITY = {"GIT_AUTHOR_NAME": "LogoMesh bench", "GIT_AUTHOR_EMAIL": "bench@logomesh.invalid",
            "GIT_COMMITTER_NAME": "LogoMesh bench", "GIT_COMMITTER_EMAIL": "bench@logomesh.invalid",
            "GIT_AUTHOR_DATE": STAMP, "GIT_COMMITTER_DATE": STAMP}


def git(git_dir: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True, text=True,
                          encoding="utf-8", errors="replace", env={**os.environ, **(env or {})}).stdout


def work_repo(mirrors: Path, work: Path, repo: str) -> Path:
    """A bare clone of ``repo``'s mirror under ``work`` that shares the mirror's objects (made once)."""
    slug = repo.replace("/", "+")
    target = work / f"{slug}.git"
    if not target.exists():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--bare", "--shared", str(mirrors / slug / "repo"), str(target)],
                       check=True, capture_output=True)
    return target


def test_changes(git_dir: Path, base: str, head: str) -> list[str]:
    """The paths the PR changes (added, modified or deleted) that are test files, sorted."""
    names = git(git_dir, "diff", "--name-only", "--no-renames", base, head).splitlines()
    return sorted(p for p in names if is_test(p))


def make_twin(git_dir: Path, base: str, head: str) -> tuple[str, list[str]]:
    """``(twin commit id, test paths)``: the base's tree with the PR's test-file changes, committed deterministically
    on top of the base."""
    paths = test_changes(git_dir, base, head)
    head_tree = {}
    for row in git(git_dir, "ls-tree", "-r", "--full-tree", head, "--", *paths).splitlines():
        meta, path = row.split("\t", 1)
        mode, _kind, oid = meta.split()
        head_tree[path] = (mode, oid)
    index = git_dir / f"twin-index-{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git(git_dir, "read-tree", base, env=env)
        # one --index-info line per path: the head's entry, or mode 0 to remove it (a bare clone has no work tree)
        lines = "".join(f"{head_tree[p][0]} {head_tree[p][1]}\t{p}\n" if p in head_tree else f"0 {'0' * 40}\t{p}\n"
                        for p in paths)
        subprocess.run(["git", "--git-dir", str(git_dir), "update-index", "--index-info"], input=lines, check=True,
                       capture_output=True, text=True, env={**os.environ, **env})
        tree = git(git_dir, "write-tree", env=env).strip()
    finally:
        index.unlink(missing_ok=True)
    message = f"Reverted-fix twin of {head[:12]}: its test changes on {base[:12]}, without its product change\n"
    sha = subprocess.run(["git", "--git-dir", str(git_dir), "commit-tree", tree, "-p", base], input=message,
                         check=True, capture_output=True, text=True, env={**os.environ, **IDENTITY}).stdout.strip()
    return sha, paths


def chosen(prs: Sequence[dict[str, Any]], per_project: int = PER_PROJECT) -> list[dict[str, Any]]:
    """The PRs twinned: per project, the first ``per_project`` in corpus order."""
    kept: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for pr in prs:
        if kept.get(pr["project"], 0) < per_project:
            kept[pr["project"]] = kept.get(pr["project"], 0) + 1
            out.append(pr)
    return out


def failing_at_head(result: Any) -> list[str]:
    """The tests that fail (or error, or do not collect) in a :class:`~checks.models.TestRunResult`."""
    names = [t.name for t in result.tests if t.outcome in ("failed", "error")]
    return sorted({*names, *(c.name for c in result.collection_errors)})


def new_failures(head: Any, base: Any) -> list[str]:
    """The tests failing at the twin's head that do not fail at the base: a failure the base shares (a
    pre-existing one) proves nothing about the reverted fix."""
    at_base = set(failing_at_head(base)) if base.status == "ran" else set()
    return [name for name in failing_at_head(head) if name not in at_base]


async def verify(git_dir: Path, twin: str, base: str, settings: Any) -> dict[str, Any]:
    """Run the twin's tests at its head in the sandbox, as a review would (zero configuration)."""
    from app.review.assembly import prepare
    from app.review.gitrepo import GitRepo
    from checks.constraints import own_packages
    from checks.dependency_drift import drift
    from sandbox.docker_sandbox import DockerSandbox, SetupOptions, docker_client
    from sandbox.limits import SandboxLimits

    repo = GitRepo.open(git_dir)
    prepared = prepare(repo, base, twin, settings=settings)
    limits = SandboxLimits.from_rubric(prepared.rubric, settings.sandbox_timeout_seconds)
    setup = SetupOptions(allow=settings.sandbox_allow_setup, timeout_seconds=settings.sandbox_setup_timeout_seconds,
                         index_url=settings.sandbox_index_url, extra_hosts=settings.sandbox_index_hosts,
                         ca_bundle=settings.sandbox_ca_bundle, cache_mb=settings.sandbox_env_cache_mb,
                         scope=str(git_dir))
    client = await asyncio.to_thread(docker_client)
    try:
        sandbox = await asyncio.to_thread(DockerSandbox.for_git, repo.git_bytes, twin, limits,
                                          settings.sandbox_image, client, base_sha=base, setup=setup)
        spec = prepared.case.test_spec
        result = await sandbox.run_tests(spec)
        base_result = await sandbox.run_tests(spec.model_copy(update={"tree": "base"}))
        case = prepared.case
        if case.base_committed_at and drift(base_result, own_packages(case.head_paths)):
            # today's releases break the base: both run with the releases of the base commit's day, as a review would
            spec = spec.model_copy(update={"dependencies_as_of": case.base_committed_at})
            result = await sandbox.run_tests(spec)
            base_result = await sandbox.run_tests(spec.model_copy(update={"tree": "base"}))
    finally:
        client.close()
    failing = new_failures(result, base_result)
    # a base that does not run proves nothing: every failure at the twin's head could be the environment's
    verified = result.status == "ran" and base_result.status == "ran" and bool(failing)
    why = None
    if result.status != "ran":
        why = f"tests not run at the twin's head: {result.status} ({(result.reason or '')[:200]})"
    elif base_result.status != "ran":
        why = f"the base's tests do not run: {base_result.status} ({(base_result.reason or '')[:200]})"
    elif not failing:
        why = f"no test fails at the twin's head that passes at the base ({result.passed} passed)"
    return {"verified": verified, "failing": failing[:20], "dropped": why}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/logomesh-bench/repos"))
    parser.add_argument("--half", choices=("fit", "held-out"), default=None)
    parser.add_argument("--no-verify", action="store_true", help="build the commits only")
    parser.add_argument("--only", action="append", default=[], help="these PR ids only (e.g. jinja#1621)")
    args = parser.parse_args()
    from app.settings import load_settings

    prs = json.loads(CORPUS.read_text(encoding="utf-8"))
    previous = {t["id"]: t for t in json.loads(OUT.read_text(encoding="utf-8"))} if OUT.exists() else {}
    settings = load_settings(home=args.work.parent / "home")
    for pr in chosen(prs):
        if (args.half and pr["half"] != args.half) or (args.only and pr["id"] not in args.only):
            continue
        git_dir = work_repo(args.mirrors, args.work, pr["repo"])
        sha, paths = make_twin(git_dir, pr["base"], pr["head"])
        twin: dict[str, Any] = {"id": pr["id"], "project": pr["project"], "repo": pr["repo"], "half": pr["half"],
                                "base": pr["base"], "pr_head": pr["head"], "head": sha, "test_files": paths}
        if not args.no_verify:
            twin.update(await verify(git_dir, sha, pr["base"], settings))
            print(f"{pr['id']:32} {sha[:12]} {'kept' if twin['verified'] else 'dropped: ' + twin['dropped']}",
                  flush=True)
        else:
            twin.update({k: previous.get(pr["id"], {}).get(k) for k in ("verified", "failing", "dropped")})
        # merged into the file as it is now: another build may have recorded other twins meanwhile
        twins = {t["id"]: t for t in json.loads(OUT.read_text(encoding="utf-8"))} if OUT.exists() else {}
        twins[pr["id"]] = twin
        OUT.write_text(json.dumps(sorted(twins.values(), key=lambda t: t["id"]), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
