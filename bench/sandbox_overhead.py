"""Benchmark: what one sandboxed test run costs on top of running the same tests bare.

Prints medians of N runs, the Docker figures measured interleaved:
  bare        pytest on the host (same tests, same Python major version where possible)
  floor       a plain ``docker run --rm`` of pytest in the sandbox image under the same limits (the tree
              bind-mounted read-only): what any container run costs at least
  lifecycle   volume + create + start + copy-in + a no-op probe + remove (``run_probe("pass")``)
  sandboxed   ``DockerSandbox.run_tests`` end to end (pytest at the limits' CPU share, one CPU by default)
and the overheads with the ratios sandboxed / bare, sandboxed / floor and lifecycle / floor.
Goal: lifecycle under 1.5 s here.

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
from sandbox.setup_phase import TOOLS_PYTHON  # noqa: E402

TESTS = "\n".join(f"def test_{i}():\n    assert sum(range({i})) == {sum(range(i))}\n" for i in range(20))


def floor(root: Path, image: str, limits: SandboxLimits) -> float:
    """A plain ``docker run`` of pytest on the same tree under the same limits: what a container costs at least.

    The tree is bind-mounted read-only here (the sandbox copies it in instead: nothing of the host is mounted)."""
    started = time.monotonic()
    subprocess.run(["docker", "run", "--rm", "--network", "none", "--read-only", "--user", "10001:10001",
                    "--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m",
                    "--cpus", str(limits.cpus), "--pids-limit", str(limits.pids), "--tmpfs", "/tmp",
                    "--mount", f"type=bind,src={root},dst=/src,readonly", "--workdir", "/src",
                    "--env", "PYTHONDONTWRITEBYTECODE=1", image, TOOLS_PYTHON, "-m", "pytest", "-q",
                    "-p", "no:cacheprovider", "."], check=True, capture_output=True)
    return time.monotonic() - started


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
        root.chmod(0o755)  # readable by the floor's container user, as the mounted tree
        limits = SandboxLimits(timeout_seconds=120)
        sandbox = DockerSandbox.for_tree(root, limits, args.image)
        await sandbox.run_probe("pass", 30)  # warm-up: first use of the image after a build is slower
        floor(root, args.image, limits)
        bare_times = [bare(root) for _ in range(args.n)]
        floors, lifecycle, sandboxed = [], [], []
        for _ in range(args.n):  # interleaved, so a noisy neighbour weighs on every figure alike
            floors.append(floor(root, args.image, limits))
            started = time.monotonic()
            probe = await sandbox.run_probe("pass", 30)
            lifecycle.append(time.monotonic() - started)
            assert probe.exit_code == 0, probe
            started = time.monotonic()
            result = await sandbox.run_tests(TestSpec())
            sandboxed.append(time.monotonic() - started)
            assert result.passed == 20, result
    b, fl, lc, sb = (statistics.median(x) for x in (bare_times, floors, lifecycle, sandboxed))
    print(f"runs per figure      {args.n}   (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"bare pytest          {b:.3f} s (median)")
    print(f"docker run floor     {fl:.3f} s (median; plain `docker run --rm` of pytest, same limits)")
    print(f"sandbox lifecycle    {lc:.3f} s (median; a no-op probe, start to removal)")
    print(f"sandboxed test run   {sb:.3f} s (median)")
    print(f"overhead             {sb - b:.3f} s   ratio sandboxed/bare {sb / b:.2f}x")
    print(f"over the floor       {sb - fl:.3f} s   ratio sandboxed/floor {sb / fl:.2f}x   "
          f"lifecycle/floor {lc / fl:.2f}x")
    print(f"lifecycle goal       < 1.5 s: {'met' if lc < 1.5 else 'NOT met'}")

if __name__ == "__main__":
    asyncio.run(main())
