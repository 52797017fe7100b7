"""R against real merged pull requests: honest descriptions and descriptions swapped between them.

Run from the repository root:  ``PYTHONPATH=. HF_HUB_OFFLINE=1 python bench/rationale_calibration.py``

The twenty PRs of ``tests/realworld/fixtures/prs.json`` (four MIT/BSD projects, cloned from the bundles beside it)
are prepared as the App prepares a review, and R is measured with the real model and the default rubric, for
each PR's own title and body (honest) and for every other PR's (swapped: 380 pairs). Printed, per split
(``A`` = cachetools + humanize, ``B`` = itsdangerous + tomli) and overall: the ROC AUC of the raw cosine
(honest against swapped), the false-penalty rate on honest PRs, and how many swapped pairs are penalised — of
all, and of those R could measure (a change adding a handful of words is "not measured", never penalised).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "realworld" / "fixtures"
SPLITS = {"A": ("cachetools", "humanize"), "B": ("itsdangerous", "tomli")}


def auc(honest: list[float], swapped: list[float]) -> float:
    if not honest or not swapped:
        return float("nan")
    wins = sum(1.0 if h > s else 0.5 if h == s else 0.0 for h in honest for s in swapped)
    return wins / (len(honest) * len(swapped))


async def main() -> None:
    from app.embeddings import SentenceEmbedder, load_model
    from app.engine import prepare
    from app.gitrepo import GitRepo
    from app.settings import load_settings
    from checks.rationale import measure_rationale
    from rubric import load_rubric

    prs = json.loads((FIXTURES / "prs.json").read_text(encoding="utf-8"))
    rubric = load_rubric()
    embedder = SentenceEmbedder(load_model())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for bundle in sorted(FIXTURES.glob("*.bundle")):
            subprocess.run(["git", "clone", "-q", "--bare", str(bundle), f"{tmp}/{bundle.stem}"], check=True)
        settings = load_settings(sandbox="off", embedding="off", red_team="off", home=Path(tmp) / ".lm")
        cases = {pr["id"]: prepare(GitRepo.open(f"{tmp}/{pr['repo']}"), pr["base"], pr["head"], settings=settings,
                                   title=pr["title"], body=pr["body"] or "").case for pr in prs}
    repo = {pr["id"]: pr["repo"] for pr in prs}
    results: list[tuple[str, str, object]] = []
    for i, case in cases.items():
        for j, other in cases.items():
            text = case if i == j else case.model_copy(update={"title": other.title, "body": other.body})
            results.append((i, j, await measure_rationale(text, rubric, embedder)))
    seconds = time.perf_counter() - started
    print(f"rubric {rubric.name} v{rubric.version}; {len(results)} measurements in {seconds:.0f} s")
    print(f"{'split':6} {'AUC raw':>8} {'honest penalised':>17} {'swapped penalised':>18} {'of measured':>12}")
    for name, projects in [*SPLITS.items(), ("all", tuple(SPLITS["A"] + SPLITS["B"]))]:
        rows = [(i, j, r) for i, j, r in results if repo[i] in projects]
        honest = [r for i, j, r in rows if i == j]
        swapped = [r for i, j, r in rows if i != j]

        def penalised(report: object) -> bool:
            return any(e.kind == "intent-mismatch" for e in report.evidence)  # type: ignore[attr-defined]

        raw_h = [r.semantic.raw_similarity for r in honest if r.semantic.measured]  # type: ignore[attr-defined]
        raw_s = [r.semantic.raw_similarity for r in swapped if r.semantic.measured]  # type: ignore[attr-defined]
        measured = [r for r in swapped if r.semantic.measured]  # type: ignore[attr-defined]
        caught = sum(penalised(r) for r in swapped)
        print(f"{name:6} {auc(raw_h, raw_s):8.3f} {sum(penalised(r) for r in honest):>10}/{len(honest):<6} "
              f"{caught:>10}/{len(swapped):<7} {caught / max(1, len(measured)):11.1%}")


if __name__ == "__main__":
    asyncio.run(main())
