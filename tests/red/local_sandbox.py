"""A test-only :class:`checks.protocols.Sandbox` that runs probes with this Python in a throwaway copy of a
fixture repository, in a subprocess with a timeout.

It exists so the planner and its oracles can be tested against real executions of real probes; the fixture
code it runs is this test suite's own. The real, locked-down Docker sandbox is exercised by
``test_docker_sandbox.py`` when ``sandbox.docker`` is importable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from checks.models import ProbeResult, TestRunResult, TestSpec
from checks.red.probe_source import IMPORTS


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """The probe's scratch directory, at the same path for every probe of this process, as ``/tmp`` is in every
    Docker sandbox: the probe derives its canary and secret paths from ``TMPDIR``, and payloads embed them, so a
    random directory name would make the same review's payload bytes (and the search) differ from run to run."""
    scratch = Path(tempfile.gettempdir()) / f"lm-red-test-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(mode=0o700)
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class LocalProbeSandbox:
    def __init__(self, repo: Path, python: str = sys.executable, node: str | None = None) -> None:
        self.repo = repo
        self.python = python  # the interpreter of the repository's environment (its dependencies installed)
        self.node = node or shutil.which("node") or "node"  # runs the probes of JavaScript/TypeScript sinks
        self.probes: list[str] = []  # attack probes
        self.imports: list[str] = []  # import probes

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        return TestRunResult(status="not_measured", reason="the local probe sandbox does not run tests")

    async def run_probe(self, code: str, timeout_seconds: float, runtime: str = "python",
                        beside: str | None = None) -> ProbeResult:
        (self.imports if IMPORTS in code else self.probes).append(code)
        if runtime == "go":  # a Go probe builds in its package with a Go toolchain: the Docker sandbox's
            return ProbeResult(exit_code=None, stderr="the local probe sandbox runs no Go probe")
        with _scratch() as scratch:
            work = Path(scratch) / "repo"
            shutil.copytree(self.repo, work)
            tmp = Path(scratch) / "tmp"
            tmp.mkdir()
            probe = Path(scratch) / ("probe.cjs" if runtime == "node" else "probe.py")
            probe.write_text(code, encoding="utf-8")
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(tmp), "PYTHONDONTWRITEBYTECODE": "1",
                   "HOME": str(tmp)}
            started = time.monotonic()
            argv = [self.node, str(probe)] if runtime == "node" else [self.python, "-I", str(probe)]
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=work, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            try:
                out, err = await asyncio.wait_for(proc.communicate(), timeout_seconds)
                timed_out = False
            except TimeoutError:
                proc.kill()
                out, err = await proc.communicate()
                timed_out = True
            return ProbeResult(exit_code=proc.returncode, stdout=out.decode("utf-8", "replace")[-200_000:],
                               stderr=err.decode("utf-8", "replace")[-20_000:], timed_out=timed_out,
                               duration=time.monotonic() - started)
