"""How review time grows with the size of a change: per stage, per doubling, with a verdict.

Run from the repository root:  ``PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python bench/scaling.py``
(``--quick`` for smaller sizes, ``--no-model`` to review without the embedding model, ``--repeats N``).

Two series of generated Python changes (every line added, valid code: classes, methods, functions, a shell
sink every seventh function, docstrings): 1, 10, 50 and 200 files of 250 lines each, and one file of 100,
1,000, 5,000, 20,000 and 50,000 lines. For each, the court alone — no git, no Docker, offline judges, the
embedding model loaded beforehand, the Red Agent without a sandbox (static passes, with bandit when installed,
as a review runs it) — is timed stage by stage:

* **chunking** — ``checks.rationale.build_code_chunks`` (R's code text, windows, the cap);
* **red static scan** — ``MCTSRedTeam.attack`` without a sandbox, as a review runs it;
* **red taint pass, size cap lifted** — the agent's own taint pass on every file, even those over
  ``MAX_SOURCE_CHARS`` that a review skips (so the pass's own growth shows where the review's is flat);
* **constraint checks** — ``checks.constraints.check_source`` on every file (the RepoInvestigator's part);
* **total** — ``checks.court.review`` from case to evaluation.

Each time is the best of ``--repeats`` runs (one run for the largest sizes), as wall seconds and as the
process's CPU seconds (every thread). The growth is computed on CPU seconds, which other work on a shared
machine inflates far less than wall time. Growth per doubling between two sizes s1 < s2 with times t1, t2 is
(t2 / t1) ** (1 / log2(s2 / s1)); the verdict uses the upper half of each series (from its middle size to its
largest), where fixed costs no longer hide the slope: "linear" when it is at most 2.2× per doubling.
Absolute seconds depend on the machine; the growth is the point.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LINEAR = 2.2
FILE_LINES = 250
TITLE = "Compute discounted order totals and run shell jobs per handler"
BODY = ("Adds handlers that compute the discounted total of an order with its shipping cost, and shell jobs that "
        "run a command per level. Each handler reads the output file of its job.")


def module(lines: int, seed: int = 0) -> str:
    """Valid Python of exactly ``lines`` lines: whole blocks, then comment lines to make up the count."""
    out = ['"""Generated module for scaling measurements."""', "", "import os", "import subprocess",
           "import threading", "from pathlib import Path", "", "CACHE = {}", "LIMIT = 10", ""]
    i = 0
    while True:
        k = seed * 100_000 + i
        if i % 5 == 0:
            block = [f"class Handler{k}:", f'    """Handle request kind {k}."""', "",
                     f"    def run_{k}(self, path, count):", f'        """Run job {k} on path."""',
                     f"        total = count * {k % 7 + 1}", f"        name = Path(path) / 'out_{k}.txt'",
                     "        for step in range(total):", "            total += step",
                     "        return name.read_text() + str(total)", ""]
        elif i % 7 == 0:
            block = [f"def shell_{k}(cmd, options):", f'    """Run shell command {k}."""',
                     f"    line = cmd + ' --level {k}'", "    subprocess.run(line, shell=True)",
                     "    CACHE[cmd] = options", "    return line", ""]
        else:
            block = [f"def compute_total_{k}(items, discount_rate):", f'    """Compute the discounted total {k}."""',
                     "    subtotal = sum(item.price * item.quantity for item in items)",
                     f"    if subtotal > {k % 100 + 10}:",
                     "        subtotal -= subtotal * discount_rate", "    shipping_cost = max(0, 5 - len(items))",
                     "    return round(subtotal + shipping_cost, 2)", ""]
        if len(out) + len(block) > lines:
            break
        out += block
        i += 1
    out += [f"# line {j}" for j in range(lines - len(out))]
    return "\n".join(out) + "\n"


def make_case(files: dict[str, str]) -> Any:
    from tests.rationale.cases import case_from_files

    return case_from_files(files, TITLE, BODY)


def growth(s1: float, t1: float, s2: float, t2: float) -> float:
    return float((max(t2, 1e-6) / max(t1, 1e-6)) ** (1 / math.log2(s2 / s1)))


async def best_of(repeats: int, run: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process, every thread), each the best of ``repeats`` runs."""
    wall = cpu = math.inf
    for _ in range(repeats):
        gc.collect()  # no run pays for the garbage of the one before
        started, started_cpu = time.perf_counter(), time.process_time()
        await run()
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
    return wall, cpu


async def measure(case: Any, rubric: Any, embedder: Any, sources: list[Any], repeats: int
                  ) -> dict[str, tuple[float, float]]:
    import checks.red.agent as red_agent
    from checks.constraints import check_source
    from checks.court import CourtParts, review
    from checks.rationale import build_code_chunks, build_intent, code_words
    from checks.red import MCTSRedTeam
    from checks.red.taint import TaintPass

    intent = build_intent(case, [], rubric.rationale.echo_ngram)
    assert code_words(intent.text)

    async def chunking() -> None:
        build_code_chunks(case, rubric, intent.text)

    async def red() -> None:
        await MCTSRedTeam(sources=sources).attack(case, rubric, None)

    async def taint() -> None:
        for changed in case.files:
            TaintPass(changed.path, changed.content, None, ()).run()

    async def constraints() -> None:
        for changed in case.files:
            check_source(changed.path, changed.content, rubric)

    async def total() -> None:
        parts = CourtParts(embedder=embedder, red_team=MCTSRedTeam(sources=sources))
        if embedder is None:
            parts.embedder_missing = "benchmark run without the model"
        await review(case, rubric, parts)

    skipped = sum(1 for f in case.files if len(f.content) > red_agent.MAX_SOURCE_CHARS)
    times = {
        "chunking": await best_of(repeats, chunking),
        "red static scan": await best_of(repeats, red),
        "red taint pass, size cap lifted": await best_of(repeats, taint),
        "constraint checks": await best_of(repeats, constraints),
        "total": await best_of(repeats, total),
    }
    times["_red_skipped"] = (skipped, skipped)
    return times


def report(title: str, unit: str, sizes: list[int], rows: list[dict[str, tuple[float, float]]]) -> None:
    print(f"\n## {title}\n")
    stages = [k for k in rows[0] if not k.startswith("_")]
    for label, which in (("wall seconds", 0), ("CPU seconds (all threads; the growth below is computed on these)", 1)):
        print(f"{label}:")
        print(f"  {'stage':<34}" + "".join(f"{f'{s:,} {unit}':>14}" for s in sizes))
        for stage in stages:
            print(f"  {stage:<34}" + "".join(f"{row[stage][which]:>13.3f}s" for row in rows))
    skipped = [int(row["_red_skipped"][0]) for row in rows]
    print(f"  {'red: files over its size cap':<34}" + "".join(f"{n:>14}" for n in skipped))
    print("\ngrowth per doubling between neighbouring sizes, and the verdict on the upper half:")
    middle = len(sizes) // 2
    for stage in stages:
        cpu = [row[stage][1] for row in rows]
        steps = [growth(sizes[i], cpu[i], sizes[i + 1], cpu[i + 1]) for i in range(len(sizes) - 1)]
        upper = growth(sizes[middle], cpu[middle], sizes[-1], cpu[-1])
        verdict = f"linear (≤ {LINEAR}× per doubling)" if upper <= LINEAR else f"NOT linear (> {LINEAR}× per doubling)"
        if stage == "red static scan" and skipped[-1]:
            verdict = ("not comparable: the review skips files over the red agent's size cap "
                       "(checks.red.agent.MAX_SOURCE_CHARS), see the row below")
        print(f"  {stage:<34}" + " ".join(f"{g:5.2f}×" for g in steps)
              + f"   {sizes[middle]:,}→{sizes[-1]:,}: {upper:.2f}×  {verdict}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--no-model", action="store_true", help="review without the embedding model")
    args = parser.parse_args()

    from app.review.red import scanner_sources
    from rubric import load_rubric

    rubric = load_rubric()
    sources, notice = scanner_sources(required=False)
    embedder = None
    if not args.no_model:
        from app.review.embeddings import SentenceEmbedder

        embedder = SentenceEmbedder.load()
        await embedder.embed(["warm up"])
    print(f"embedding model: {'none' if embedder is None else type(embedder.model).__name__}; "
          f"red scanners: {[s.name for s in sources] or notice}; best of {args.repeats} "
          "(one run at the largest sizes)")

    file_counts = [1, 2, 5, 10] if args.quick else [1, 10, 50, 200]
    line_counts = [100, 500, 1_000, 2_000] if args.quick else [100, 1_000, 5_000, 20_000, 50_000]

    rows = []
    for count in file_counts:
        files = {f"shop/module_{i:03d}.py": module(FILE_LINES, seed=i) for i in range(count)}
        rows.append(await measure(make_case(files), rubric, embedder, sources,
                                  1 if count >= 200 else args.repeats))
    report(f"files of {FILE_LINES} lines each", "files", file_counts, rows)

    rows = []
    for lines in line_counts:
        rows.append(await measure(make_case({"shop/big.py": module(lines)}), rubric, embedder, sources,
                                  1 if lines >= 20_000 else args.repeats))
    report("one file", "lines", line_counts, rows)


if __name__ == "__main__":
    asyncio.run(main())
