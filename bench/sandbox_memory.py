"""Benchmark: the memory a large real-sized suite needs in the sandbox, against the memory limit.

Generates a suite of N tests (default 20,000: half plain functions spread over modules, half parametrised cases,
a few fixtures and classes, as real suites are) and runs it with ``DockerSandbox.run_tests`` end to end (the
runner, its collector and coverage included) at each memory limit given. Prints per limit: the run's status,
passed count, wall time, and the container's peak memory (cgroup v1 ``memory.max_usage_in_bytes`` or v2
``memory.peak``, polled while it runs; what the limit counts, tmpfs pages included).

Usage: python bench/sandbox_memory.py [--tests 20000] [--limits 512,768,1024] [--heavy]
                                     [--image logomesh-sandbox:latest]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

# this file is named like the package it measures: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from checks.models import TestSpec  # noqa: E402
from sandbox.docker_sandbox import LABEL_OWNER, DockerSandbox  # noqa: E402
from sandbox.limits import SandboxLimits  # noqa: E402

PER_MODULE = 200


HEAVY_IMPORTS = ("asyncio", "decimal", "email.message", "http.client", "json", "sqlite3", "xml.etree.ElementTree",
                 "unittest.mock", "logging.handlers", "concurrent.futures", "urllib.request", "dataclasses")


def write_suite(root: Path, tests: int, heavy: bool = False) -> None:
    """``tests`` tests: half functions, half parametrised cases, in modules of ``PER_MODULE``. ``heavy``: a product
    package of 100 modules whose 40 branches each test runs (coverage arcs), the stdlib a web project imports,
    long parametrised ids and a line of output per test."""
    (root / "pkg").mkdir(parents=True)
    product = "def add(a, b):\n    return a + b\n"
    if heavy:
        product = "\n".join(f"import {m}" for m in HEAVY_IMPORTS) + "\n" + product
        for k in range(100):
            body = "".join(f"    if n % {j + 2} == {j % 2}:\n        total += {j}\n" for j in range(40))
            (root / f"pkg/mod{k:03d}.py").write_text(f"def work(n):\n    total = 0\n{body}    return total\n",
                                                      encoding="utf-8")
    (root / "pkg/__init__.py").write_text(product, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests/conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef base():\n    return 10\n", encoding="utf-8")
    plain, cases = tests // 2, tests - tests // 2
    module = 0
    while plain > 0 or cases > 0:
        lines = ["import pytest", "from pkg import add", f"from pkg.mod{module % 100:03d} import work", ""]
        count = min(PER_MODULE // 2, plain)
        for i in range(count):
            extra = f"    print('checking {i}', work({i}))\n    assert work({i}) >= 0\n" if heavy else ""
            lines.append(f"def test_plain_{i}(base):\n    \"\"\"Adding {i} to the base.\"\"\"\n"
                         f"    assert add(base, {i}) == {10 + i}\n{extra}")
        plain -= count
        count = min(PER_MODULE // 2, cases)
        if count:
            ids = f", ids=[f'case-{{n:05d}}-' + 'x' * 60 for n in range({count})]" if heavy else ""
            lines.append(f"@pytest.mark.parametrize('n', range({count}){ids})\n"
                         f"def test_case(n):\n    assert add(n, n) == 2 * n\n"
                         + ("    assert work(n) >= 0\n" if heavy else ""))
            cases -= count
        lines.append("class TestGroup:\n    def test_method(self):\n        assert add(1, 1) == 2\n")
        (root / f"tests/test_m{module:04d}.py").write_text("\n".join(lines), encoding="utf-8")
        module += 1


def _peak(container_id: str) -> int | None:
    for path in (Path(f"/sys/fs/cgroup/memory/docker/{container_id}/memory.max_usage_in_bytes"),
                 Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/memory.peak"),
                 Path(f"/sys/fs/cgroup/docker/{container_id}/memory.peak")):
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            continue
    return None


def watch(sandbox: DockerSandbox, stop: threading.Event, peaks: dict[str, int]) -> None:
    while not stop.is_set():
        for info in sandbox.client.api.containers(filters={"label": f"{LABEL_OWNER}={sandbox.owner}"}):
            peak = _peak(info["Id"])
            if peak is not None:
                peaks[info["Id"]] = max(peaks.get(info["Id"], 0), peak)
        stop.wait(0.3)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=20_000)
    parser.add_argument("--limits", default="512,768,1024")
    parser.add_argument("--image", default="logomesh-sandbox:latest")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--cpus", type=float, default=1.0)
    parser.add_argument("--heavy", action="store_true", help="product code under coverage, imports, output")
    parser.add_argument("--tree", type=Path, help="run this project's own suite instead of a generated one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "suite"
        if args.tree is not None:
            root = args.tree
            print(f"suite: the tests of {root} ({len(list(root.rglob('test_*.py')))} test modules)")
        else:
            write_suite(root, args.tests, args.heavy)
            modules = len(list((root / "tests").glob("test_*.py")))
            kind = "suite (heavy)" if args.heavy else "suite"
            print(f"{kind}: {args.tests} tests (+{modules} class methods) in {modules} modules")
        print(f"{'limit MB':>8}  {'status':<8} {'passed':>7}  {'wall s':>7}  {'peak MB':>8}  reason")
        for limit in (int(v) for v in args.limits.split(",")):
            limits = SandboxLimits(memory_mb=limit, cpus=args.cpus, timeout_seconds=args.timeout)
            sandbox = DockerSandbox.for_tree(root, limits, args.image)
            peaks: dict[str, int] = {}
            stop = threading.Event()
            watcher = threading.Thread(target=watch, args=(sandbox, stop, peaks), daemon=True)
            watcher.start()
            started = time.monotonic()
            result = await sandbox.run_tests(TestSpec(timeout_seconds=args.timeout))
            wall = time.monotonic() - started
            stop.set()
            watcher.join()
            peak = max(peaks.values(), default=0) / 2**20
            print(f"{limit:>8}  {result.status:<8} {result.passed:>7}  {wall:>7.1f}  {peak:>8.0f}  "
                  f"{(result.reason or '')[:90]}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
