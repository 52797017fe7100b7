"""R against real merged pull requests: honest descriptions and descriptions swapped between them.

Run from the repository root:  ``PYTHONPATH=. HF_HUB_OFFLINE=1 python bench/rationale_calibration.py [--misses]``

The twenty PRs of ``tests/realworld/fixtures/prs.json`` (four MIT/BSD projects, cloned from the bundles beside it)
are prepared as the App prepares a review, and R is measured with the real model and the default rubric, for
each PR's own title and body (honest) and for every other PR's (swapped: 380 pairs). Printed, per split
(``A`` = cachetools + humanize, ``B`` = itsdangerous + tomli) and overall: the ROC AUC of the raw cosine
(honest against swapped), the false-penalty rate on honest PRs, and how many swapped pairs are penalised — of
all, and of those R could measure (a change adding a handful of words is "not measured", never penalised).

Then a **held-out** check of the two penalty thresholds (``intent.threshold``, ``intent.anchored_threshold``):
they are fitted on one split alone (the most swaps penalised with no honest PR penalised there, the lowest
thresholds on a tie; the fit reads the R values already measured) and measured again, for real, with the fitted
rubric on the *other* split, which the fit never saw. ``--misses`` lists the measured swaps not penalised.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "realworld" / "fixtures"
SPLITS = {"A": ("cachetools", "humanize"), "B": ("itsdangerous", "tomli")}
GRID = [round(0.05 * k, 2) for k in range(1, 20)]

Result = tuple[str, str, Any]  # (the change's PR, the description's PR, the DetectiveReport)


def auc(honest: list[float], swapped: list[float]) -> float:
    if not honest or not swapped:
        return float("nan")
    wins = sum(1.0 if h > s else 0.5 if h == s else 0.0 for h in honest for s in swapped)
    return wins / (len(honest) * len(swapped))


def penalised(report: Any) -> bool:
    return any(e.kind == "intent-mismatch" for e in report.evidence)


def row(name: str, rows: Sequence[Result]) -> str:
    honest = [r for i, j, r in rows if i == j]
    swapped = [r for i, j, r in rows if i != j]
    raw_h = [r.semantic.raw_similarity for r in honest if r.semantic.measured]
    raw_s = [r.semantic.raw_similarity for r in swapped if r.semantic.measured]
    measured = [r for r in swapped if r.semantic.measured]
    caught = sum(penalised(r) for r in swapped)
    return (f"{name:6} {auc(raw_h, raw_s):8.3f} {sum(penalised(r) for r in honest):>10}/{len(honest):<6} "
            f"{caught:>10}/{len(swapped):<7} {caught / max(1, len(measured)):11.1%}")


def would_penalise(report: Any, plain: float, anchored: float, defaults: tuple[float, float]) -> bool:
    """Whether ``report`` would carry the penalty under other thresholds, from the R values it holds: the rule
    that applied (none, plain, anchored) does not depend on them; R with comments and docstrings is the stored
    one unless the code-alone check replaced it (``semantic.prose-lift`` holds both)."""
    from checks.rationale import names_file, specific

    sem = report.semantic
    if not sem.measured or sem.penalty_threshold is None:
        return False
    # which rule applied: named code or a file the change does not touch (anchored), else the plain one
    untouched = [a for a in sem.anchors if a not in sem.anchors_found and (specific(a) or names_file(a))]
    threshold = anchored if untouched else plain
    lift = next((e.facts for e in report.evidence if e.id.endswith("prose-lift")), None)
    if lift is not None:
        return float(lift["with_prose"]) < threshold or float(lift["code_only"]) < threshold
    return float(sem.score) < threshold


def fit(rows: Sequence[Result], defaults: tuple[float, float]) -> tuple[float, float]:
    best: tuple[int, float, float] | None = None
    for plain in GRID:
        for anchored in (a for a in GRID if a >= plain):
            if any(would_penalise(r, plain, anchored, defaults) for i, j, r in rows if i == j):
                continue
            caught = sum(would_penalise(r, plain, anchored, defaults) for i, j, r in rows if i != j)
            if best is None or caught > best[0]:
                best = (caught, plain, anchored)
    assert best is not None  # the lowest thresholds penalise nothing
    return best[1], best[2]


async def measure(cases: dict[str, Any], ids: Sequence[str], rubric: Any, embedder: Any) -> list[Result]:
    from checks.rationale import measure_rationale

    results: list[Result] = []
    for i in ids:
        for j, other in cases.items():
            text = cases[i] if i == j else cases[i].model_copy(update={"title": other.title, "body": other.body})
            results.append((i, j, await measure_rationale(text, rubric, embedder)))
    return results


async def main() -> None:
    from app.review.assembly import prepare
    from app.review.embeddings import SentenceEmbedder, load_model
    from app.review.gitrepo import GitRepo
    from app.settings import load_settings
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
    results = await measure(cases, list(cases), rubric, embedder)
    seconds = time.perf_counter() - started
    header = f"{'split':6} {'AUC raw':>8} {'honest penalised':>17} {'swapped penalised':>18} {'of measured':>12}"
    print(f"rubric {rubric.name} v{rubric.version}; {len(results)} measurements in {seconds:.0f} s")
    intent = rubric.intent
    print(f"thresholds as shipped: plain {intent.threshold:.2f}, anchored {intent.anchored_threshold:.2f}")
    print(header)
    for name, projects in [*SPLITS.items(), ("all", SPLITS["A"] + SPLITS["B"])]:
        print(row(name, [(i, j, r) for i, j, r in results if repo[i] in projects]))

    defaults = (rubric.intent.threshold, rubric.intent.anchored_threshold)
    print("\nheld out: thresholds fitted on one split, measured again on the other")
    print(f"{'fit on':6} {'plain':>6} {'anchored':>9}   then measured on the other split:")
    for fitted_on, held_out in (("A", "B"), ("B", "A")):
        plain, anchored = fit([(i, j, r) for i, j, r in results if repo[i] in SPLITS[fitted_on]], defaults)
        refit = rubric.model_copy(update={"intent": rubric.intent.model_copy(
            update={"threshold": plain, "anchored_threshold": anchored})})
        other = await measure(cases, [i for i in cases if repo[i] in SPLITS[held_out]], refit, embedder)
        print(f"{fitted_on:6} {plain:6.2f} {anchored:9.2f}   {header}")
        print(f"{'':25}{row(held_out, other)}")

    if "--misses" in sys.argv:
        print("\nmeasured swaps not penalised (change <- description: R, threshold, anchors found):")
        for i, j, r in results:
            sem = r.semantic
            if i != j and sem.measured and not penalised(r):
                print(f"  {i} <- {j}: R {sem.score:.2f}, threshold {sem.penalty_threshold}, "
                      f"found {list(sem.anchors_found)} of {list(sem.anchors)[:6]}")


if __name__ == "__main__":
    asyncio.run(main())
