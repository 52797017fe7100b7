"""Benchmark: what true test facts cost, side by side in one run, on the bundled example and a real project.

For each project it prints medians of N runs of:
  single          the head's tests once, as T used to be measured (no base, no mutants)
  differential    head + base + (guard when the change touches tests) side by side, as the TestRunner runs them,
                  the base run cached (same base, many PRs)
  differential*   the same with the base run cold (the first PR against a base)
  mutation        the head run with the default mutant budget (rubric testing.mutation)
and the ratios to ``single``. Goals: differential ≤ 1.6× single with the base cached; mutation ≤ 1.5× single.

Then, for the real project's environment (--env): a cold setup (the cached environment removed first), a cached
setup, and the run with no environment at all (the raw, uninstalled tree, LogoMesh's tools only).

Usage: python bench/differential.py [-n 3] [--project humanize] [--pr hu1] [--env]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from app.review.assembly import prepare  # noqa: E402
from app.review.gitrepo import GitRepo  # noqa: E402
from app.settings import load_settings  # noqa: E402
from checks.detectives.test_runner import TestRunner  # noqa: E402
from checks.mutation import mutants_for  # noqa: E402
from checks.testpaths import is_harness_path  # noqa: E402
from rubric import load_rubric  # noqa: E402
from sandbox import docker_sandbox  # noqa: E402
from sandbox.docker_sandbox import DockerSandbox, SetupOptions  # noqa: E402
from sandbox.limits import SandboxLimits  # noqa: E402
from sandbox.setup_phase import env_tag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REALWORLD = ROOT / "tests" / "realworld" / "fixtures"


async def timed(make: Callable[[], Awaitable[object]], n: int) -> float:
    times = []
    for _ in range(n):
        started = time.monotonic()
        await make()
        times.append(time.monotonic() - started)
    return statistics.median(times)


def example(work: Path) -> tuple[Path, str, str]:
    subprocess.run([sys.executable, str(ROOT / "examples" / "make_example.py"), str(work)], check=True,
                   capture_output=True)
    return work, "main", "feature/discounts"


def realworld(work: Path, project: str, pr_id: str) -> tuple[Path, str, str]:
    subprocess.run(["git", "clone", "-q", "--bare", str(REALWORLD / f"{project}.bundle"), str(work)], check=True)
    pr = next(p for p in json.loads((REALWORLD / "prs.json").read_text()) if p["id"] == pr_id)
    return work, pr["base"], pr["head"]


async def measure(name: str, root: Path, base: str, head: str, n: int, setup: SetupOptions) -> None:
    settings = load_settings(home=root.parent / ".lm")
    repo = GitRepo.open(root)
    prepared = prepare(repo, base, head, settings=settings)
    case, rubric = prepared.case, load_rubric()
    merge_base = repo.merge_base(case.base_sha, case.head_sha)
    limits = SandboxLimits.from_rubric(rubric, 300)
    sandbox = DockerSandbox.for_git(repo.git_bytes, case.head_sha, limits, settings.sandbox_image,
                                    base_sha=merge_base, setup=setup)
    spec = case.test_spec
    await sandbox.run_tests(spec)  # warm: builds the environment once, outside the figures
    single = await timed(lambda: sandbox.run_tests(spec), n)

    async def differential(cold: bool) -> None:
        if cold:
            docker_sandbox.BASE_RESULTS.clear()
        runs = [sandbox.run_tests(spec), sandbox.run_tests(spec.model_copy(update={"tree": "base"}))]
        if any(is_harness_path(f.path) for f in case.files):
            runs.append(sandbox.run_tests(spec.model_copy(update={"tree": "guard"})))
        await asyncio.gather(*runs)  # as the TestRunner runs them: side by side

    await differential(cold=True)
    warm = await timed(lambda: differential(cold=False), n)
    cold = await timed(lambda: differential(cold=True), n)
    mutants = mutants_for(case, rubric.testing.mutation.max_mutants)
    mutation = await timed(lambda: sandbox.run_tests(spec.model_copy(update={
        "mutants": mutants, "mutation_seconds": rubric.testing.mutation.seconds})), n)
    whole = await timed(lambda: TestRunner(sandbox).investigate(case, rubric), 1)
    print(f"{name}: {len(case.files)} files changed, {len(mutants)} mutants, guard run: "
          f"{any(is_harness_path(f.path) for f in case.files)}")
    print(f"  single head run            {single:6.2f} s   1.00x")
    print(f"  differential (base cached) {warm:6.2f} s   {warm / single:.2f}x   goal ≤ 1.6x: "
          f"{'met' if warm / single <= 1.6 else 'NOT met'}")
    print(f"  differential (base cold)   {cold:6.2f} s   {cold / single:.2f}x")
    print(f"  head run with mutation     {mutation:6.2f} s   {mutation / single:.2f}x   goal ≤ 1.5x: "
          f"{'met' if mutation / single <= 1.5 else 'NOT met'}")
    print(f"  the TestRunner detective   {whole:6.2f} s   {whole / single:.2f}x   (all of it, base cached)")


async def environment(root: Path, base: str, head: str, n: int, setup: SetupOptions) -> None:
    settings = load_settings(home=root.parent / ".lm")
    repo = GitRepo.open(root)
    case = prepare(repo, base, head, settings=settings).case
    limits = SandboxLimits.from_rubric(load_rubric(), 300)
    sandbox = DockerSandbox.for_git(repo.git_bytes, case.head_sha, limits, settings.sandbox_image, setup=setup)
    plan = sandbox._plan(sandbox.head, case.test_spec)

    async def cold() -> None:
        tag = env_tag(sandbox, plan, case.test_spec, sandbox.head)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)
        result = await sandbox.run_tests(case.test_spec)
        assert result.setup is not None and result.setup.status == "installed", result.setup

    bare = DockerSandbox.for_git(repo.git_bytes, case.head_sha, limits, settings.sandbox_image,
                                 setup=SetupOptions(allow=False))
    built = await timed(cold, n)
    cached = await timed(lambda: sandbox.run_tests(case.test_spec), n)
    raw = await timed(lambda: bare.run_tests(case.test_spec), n)
    outcome = await bare.run_tests(case.test_spec)
    good = await sandbox.run_tests(case.test_spec)
    print(f"environment ({', '.join(plan.sources) or 'nothing to install'}):")
    print(f"  cold setup + run           {built:6.2f} s   {built / cached:.2f}x cached")
    print(f"  cached setup + run         {cached:6.2f} s   1.00x   ({good.passed} passed, {good.failed} failed, "
          f"{good.errored} errors)")
    print(f"  uninstalled run            {raw:6.2f} s   {raw / cached:.2f}x cached   ({outcome.passed} passed, "
          f"{outcome.failed} failed, {outcome.errored} errors: {outcome.status})")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=3)
    parser.add_argument("--project", default="humanize")
    parser.add_argument("--pr", default="hu1")
    parser.add_argument("--env", action="store_true", help="also measure cold/cached/uninstalled environments")
    args = parser.parse_args()
    settings = load_settings()
    setup = SetupOptions(index_url=settings.sandbox_index_url, ca_bundle=settings.sandbox_ca_bundle)
    print(f"runs per figure {args.n}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        await measure("bundled example (examples/shop)", *example(Path(tmp) / "shop"), args.n, setup)
        project = realworld(Path(tmp) / args.project, args.project, args.pr)
        await measure(f"{args.project} {args.pr}", *project, args.n, setup)
        if args.env:
            await environment(*project, args.n, setup)


if __name__ == "__main__":
    asyncio.run(main())
