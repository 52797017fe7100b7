"""A whole review of the bundled example against the floor: ``docker run`` of its tests under the sandbox's limits.

Run from the repository root:  ``PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python bench/cli_review.py [--runs 5]``

Three measurements, interleaved run by run so that all see the same machine load:

* **floor** — ``docker run --rm`` of pytest on the example's head tree in the sandbox image, with the limits a
  review uses (no network, memory, CPUs and PIDs from the default rubric): what running the tests alone costs;
* **CLI** — ``logomesh review`` of the example in a fresh process, as the README's first command runs it
  (sandbox with the differential runs and mutants, the embedding model, the red agent, offline judges, the DBOM):
  interpreter start to exit;
* **warm worker** — the same review through :func:`app.review.assembly.review_repository` in one long-lived process
  whose model is loaded and whose first review is not counted, as a worker reviews.

Printed: the median of each, and CLI / floor and warm / floor, and the warm worker's peak resident memory (the
bench's own process: the model, the court and the reviews). Goals: CLI ≤ 4×, warm worker ≤ 1.3×, ≤ 400 MiB.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TITLE = "Add percentage discount codes to the cart"
BODY = ROOT / "examples" / "shop" / "PR.md"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def floor(tree: Path, image: str) -> float:
    from rubric import load_rubric
    from sandbox.limits import SandboxLimits

    limits = SandboxLimits.from_rubric(load_rubric())
    started = time.perf_counter()
    subprocess.run(["docker", "run", "--rm", "--network", "none", "--memory", f"{limits.memory_mb}m",
                    "--cpus", str(limits.cpus), "--pids-limit", str(limits.pids), "--read-only",
                    "--tmpfs", "/tmp", "-v", f"{tree}:/w:ro", "-w", "/w", "-e", "PYTHONDONTWRITEBYTECODE=1",
                    image, "/opt/logomesh/tools/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                   check=True, capture_output=True)
    return time.perf_counter() - started


def cli(repo: Path, home: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run([str(ROOT / ".venv" / "bin" / "logomesh"), "review", str(repo), "--base", "main",
                             "--head", "feature/discounts", "--title", TITLE, "--body-file", str(BODY),
                             "--format", "json", "-q"], env={**ENV, "LOGOMESH_HOME": str(home)},
                            capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"logomesh review failed ({result.returncode}): {result.stderr[-2000:]}")
    return seconds


async def warm(repo: Path, home: Path, runs: int) -> list[float]:
    from app.review.assembly import review_repository
    from app.review.embeddings import SentenceEmbedder
    from app.settings import load_settings

    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    settings = load_settings(home=home)
    await asyncio.to_thread(SentenceEmbedder.load, settings.embedding_model_path)  # as the worker does at start-up
    body = BODY.read_text(encoding="utf-8")
    times: list[float] = []
    for _ in range(runs + 1):  # the first review warms imports and caches: not counted
        started = time.perf_counter()
        await review_repository(repo, "main", "feature/discounts", settings=settings, title=TITLE, body=body)
        times.append(time.perf_counter() - started)
    return times[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--image", default=os.environ.get("LOGOMESH_SANDBOX_IMAGE", "logomesh-sandbox:latest"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "shop"
        subprocess.run([sys.executable, str(ROOT / "examples" / "make_example.py"), str(repo)], check=True,
                       capture_output=True)
        tree = Path(tmp) / "head"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(repo), "archive", "feature/discounts"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        floors, clis = [], []
        floor(tree, args.image)  # the image's layers in the page cache, as for every later run
        for k in range(args.runs):
            floors.append(floor(tree, args.image))
            clis.append(cli(repo, Path(tmp) / f"home-{k}"))
        warms = asyncio.run(warm(repo, Path(tmp) / "home-warm", args.runs))
    med = {name: statistics.median(values) for name, values in
           (("floor", floors), ("CLI", clis), ("warm worker", warms))}
    print(f"bundled example, median of {args.runs} (CLI and floor interleaved; warm worker after, one process)")
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
    print(f"{'measure':14} {'median s':>9} {'min s':>7} {'max s':>7} {'/ floor':>8} {'goal':>6}")
    for name, values, goal in (("floor", floors, ""), ("CLI", clis, "≤ 4×"), ("warm worker", warms, "≤ 1.3×")):
        ratio = med[name] / med["floor"]
        print(f"{name:14} {med[name]:9.2f} {min(values):7.2f} {max(values):7.2f} {ratio:7.2f}× {goal:>6}")
    print(f"warm worker peak RSS (model loaded, {args.runs + 1} reviews): {peak:.0f} MiB (goal ≤ 400 MiB)")


if __name__ == "__main__":
    main()
