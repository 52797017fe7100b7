"""Measure the Red Agent on the fixture changes: probes, steps and wall time, static-only versus sandboxed.

Run: PYTHONPATH=. .venv/bin/python bench/red_agent.py
The sandbox here is the test suite's local probe runner (a subprocess in a throwaway copy), so the figures are a
floor: the Docker sandbox adds a container start per probe.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from app.review.red import BanditSource
from checks.red import MCTSRedTeam
from rubric import load_rubric
from tests.red.fixtures import VULNERABLE, make_case, write_repo
from tests.red.local_sandbox import LocalProbeSandbox


async def main() -> None:
    rubric = load_rubric()
    sources = [BanditSource()]
    cases = {name: {path: text} for name, (path, text) in VULNERABLE.items()}
    cases["all-six"] = dict(VULNERABLE.values())
    print(f"{'change':<10} {'probes':>6} {'steps':>5} {'stop':<10} {'static s':>8} {'sandboxed s':>11} "
          f"{'ratio':>6}  worst")
    for name, modules in cases.items():
        with tempfile.TemporaryDirectory() as scratch:
            sandbox = LocalProbeSandbox(write_repo(Path(scratch), modules))
            case = make_case(modules)
            started = time.perf_counter()
            await MCTSRedTeam(sources=sources).attack(case, rubric, None)
            static = time.perf_counter() - started
            agent = MCTSRedTeam(sources=sources)
            started = time.perf_counter()
            analysis = await agent.attack(case, rubric, sandbox)
            sandboxed = time.perf_counter() - started
            search = agent.last_search
            steps, stop = (search.steps, search.stop_reason) if search else (0, "-")
            print(f"{name:<10} {len(sandbox.probes):>6} {steps:>5} {stop:<10} {static:>8.3f} {sandboxed:>11.3f} "
                  f"{sandboxed / static:>6.1f}  {analysis.max_severity}")


if __name__ == "__main__":
    asyncio.run(main())
