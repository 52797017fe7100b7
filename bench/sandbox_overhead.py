"""Benchmark: what one sandboxed test run costs on top of running the same tests bare.

Prints medians of N runs:
  bare        pytest on the host (same tests, same Python major version where possible)
  lifecycle   volume + create + start + copy-in + a no-op exec + remove (``run_probe("pass")``)
  sandboxed   ``DockerSandbox.run_tests`` end to end (includes pytest at 50 % of one CPU)
and the overhead (sandboxed - bare) with the ratio sandboxed / bare. Goal: lifecycle under 1.5 s here.

Usage: python bench/sandbox_overhead.py [-n 5] [--image logomesh-sandbox:latest]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# this file is named like the package it measures: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from checks.models import TestSpec  # noqa: E402
from sandbox.docker_sandbox import DockerSandbox  # noqa: E402
from sandbox.limits import SandboxLimits  # noqa: E402

TESTS = "\n".join(f"def test_{i}():\n    assert sum(range({i})) == {sum(range(i))}\n" for i in range(20))


def bare(root: Path) -> float:
    """pytest on the host with no plugins autoloaded, as the sandbox image runs it."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root)], cwd=root,
                   check=True, capture_output=True, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    return time.monotonic() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--image", default="logomesh-sandbox:latest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        (root / "tests" / "test_bench.py").write_text(TESTS)
        sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=120), args.image)
        await sandbox.run_probe("pass", 30)  # warm-up: first use of the image after a build is slower
        bare_times = [bare(root) for _ in range(args.n)]
        lifecycle, sandboxed = [], []
        for _ in range(args.n):
            started = time.monotonic()
            probe = await sandbox.run_probe("pass", 30)
            lifecycle.append(time.monotonic() - started)
            assert probe.exit_code == 0, probe
            started = time.monotonic()
            result = await sandbox.run_tests(TestSpec())
            sandboxed.append(time.monotonic() - started)
            assert result.passed == 20, result
    b, lc, sb = (statistics.median(x) for x in (bare_times, lifecycle, sandboxed))
    print(f"runs per figure      {args.n}   (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"bare pytest          {b:.3f} s (median)")
    print(f"sandbox lifecycle    {lc:.3f} s (median; create+start+copy+no-op exec+remove)")
    print(f"sandboxed test run   {sb:.3f} s (median)")
    print(f"overhead             {sb - b:.3f} s   ratio sandboxed/bare {sb / b:.2f}x")
    print(f"lifecycle goal       < 1.5 s: {'met' if lc < 1.5 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main())
