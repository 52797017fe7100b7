"""Benchmark R's embedding model: load time, and embedding time for 10 / 100 / 1,000 code chunks.

Run from the repository root:  ``PYTHONPATH=. python bench/rationale.py [--runs 3] [--sizes 10,100,1000]``

Model load is timed in fresh processes (it happens once per process; the in-process cache is timed too).
Chunks are real chunk texts built by ``checks.rationale`` from the labelled changes, cycled with a counter so
no two texts are equal, each about ``window_words`` words long. Prints medians and per-chunk ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LOAD_SCRIPT = """
import time
start = time.perf_counter()
from app.review.embeddings import load_model
load_model()
print(time.perf_counter() - start)
"""


def time_cold_load() -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", LOAD_SCRIPT], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def chunk_texts(count: int) -> list[str]:
    from checks.rationale import build_code_chunks
    from rubric import load_rubric
    from tests.rationale.cases import case_from_files
    from tests.rationale.labelled_changes import CHANGES

    rubric = load_rubric()
    words: list[str] = []
    for change in CHANGES:
        for chunk in build_code_chunks(case_from_files(change["files"]), rubric, "").chunks:
            words.extend(chunk.text.split())
    size = rubric.rationale.window_words
    texts = []
    for i in range(count):
        start = (i * 37) % max(1, len(words) - size)
        texts.append(f"chunk {i} " + " ".join(words[start:start + size - 2]))
    return texts


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="10,100,1000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    from app.review.embeddings import BATCH_SIZE, TORCH_THREADS, SentenceEmbedder, load_model

    loads = [time_cold_load() for _ in range(args.runs)]
    print(f"model load (fresh process, incl. torch import): median {statistics.median(loads):.2f} s "
          f"over {args.runs} runs {[round(x, 2) for x in loads]}")
    start = time.perf_counter()
    load_model()
    first = time.perf_counter() - start
    start = time.perf_counter()
    embedder = SentenceEmbedder.load()
    cached = time.perf_counter() - start
    print(f"in-process: first load {first:.2f} s, cached load {cached * 1000:.3f} ms "
          f"(ratio {first / max(cached, 1e-9):.0f}x)")
    print(f"torch threads {TORCH_THREADS}, batch size {BATCH_SIZE}")

    await embedder.embed(["warm up"])
    baseline: float | None = None
    for size in sizes:
        texts = chunk_texts(size)
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            await embedder.embed(texts)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        per_chunk = median / size * 1000
        baseline = baseline or per_chunk
        print(f"embed {size:>5} chunks: median {median:.3f} s over {args.runs} runs, {per_chunk:.2f} ms/chunk "
              f"({per_chunk / baseline:.2f}x the per-chunk time at {sizes[0]})")


if __name__ == "__main__":
    asyncio.run(main())
