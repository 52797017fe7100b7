"""A test-only :class:`checks.protocols.Sandbox` that runs probes with this Python in a throwaway copy of a
fixture repository, in a subprocess with a timeout.

It exists so the planner and its oracles can be tested against real executions of real probes; the fixture
code it runs is this test suite's own. The real, locked-down Docker sandbox is exercised by
``test_docker_sandbox.py`` when ``sandbox.docker`` is importable.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from checks.models import ProbeResult, TestRunResult, TestSpec


class LocalProbeSandbox:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.probes: list[str] = []

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        return TestRunResult(status="not_measured", reason="the local probe sandbox does not run tests")

    async def run_probe(self, code: str, timeout_seconds: float) -> ProbeResult:
        self.probes.append(code)
        with tempfile.TemporaryDirectory(prefix="lm-red-test-") as scratch:
            work = Path(scratch) / "repo"
            shutil.copytree(self.repo, work)
            tmp = Path(scratch) / "tmp"
            tmp.mkdir()
            probe = Path(scratch) / "probe.py"
            probe.write_text(code, encoding="utf-8")
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(tmp), "PYTHONDONTWRITEBYTECODE": "1",
                   "HOME": str(tmp)}
            started = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", str(probe), cwd=work, env=env,
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
