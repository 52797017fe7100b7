"""R and the intent penalty on the calibration corpus: real merged PRs of 28 projects, fit half and held-out half.

Run from the repository root (the mirrors of ``bench/corpus/prs.json``'s projects must be present, see
``bench/corpus/build_corpus.py``)::

    PYTHONPATH=. HF_HUB_OFFLINE=1 python bench/rationale_corpus.py [--mirrors DIR] [--dump FILE] [--half fit]

Every corpus PR is prepared as the App prepares a review (``app.review.assembly.prepare`` on the mirror, base and
head pinned) and R is measured with the real embedding model and the default rubric, for its own title and body
(honest) and for ``SWAPS`` descriptions of PRs of *other* projects (swapped: a description of something else).
Printed per half and per project: honest PRs measured, honest PRs penalised, swapped descriptions measured,
swapped penalised (catch rate, of those R measured). ``--dump`` writes every measurement as JSON lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "bench" / "corpus" / "prs.json"
SWAPS = 2


def penalised(report: Any) -> bool:
    return any(e.kind == "intent-mismatch" for e in report.evidence)


def swaps_for(prs: Sequence[dict[str, Any]], k: int) -> list[int]:
    """Deterministic: the PRs a third and two thirds of the corpus away, moved on until the project differs."""
    chosen: list[int] = []
    n = len(prs)
    for step in range(1, SWAPS + 1):
        j = (k + step * n // (SWAPS + 1)) % n
        while prs[j]["project"] == prs[k]["project"] or j in chosen:
            j = (j + 1) % n
        chosen.append(j)
    return chosen


def record(pr: dict[str, Any], desc: dict[str, Any], report: Any) -> dict[str, Any]:
    sem = report.semantic
    kinds = {e.id.split(".", 1)[-1]: e.facts for e in report.evidence}
    return {"id": pr["id"], "description": desc["id"], "honest": pr["id"] == desc["id"], "half": pr["half"],
            "project": pr["project"], "measured": bool(sem.measured), "reason": sem.reason,
            "score": sem.score, "raw": sem.raw_similarity, "threshold": sem.penalty_threshold,
            "anchors": list(sem.anchors), "found": list(sem.anchors_found), "penalised": penalised(report),
            "exempt": (kinds.get("intent-exempt") or {}).get("kind"),
            "code_only": (kinds.get("prose-lift") or {}).get("code_only")}


def table(rows: Sequence[dict[str, Any]], label: str) -> str:
    honest = [r for r in rows if r["honest"]]
    swapped = [r for r in rows if not r["honest"]]
    hm = [r for r in honest if r["measured"]]
    sm = [r for r in swapped if r["measured"]]
    hp = sum(r["penalised"] for r in honest)
    sp = sum(r["penalised"] for r in swapped)
    return (f"{label:24} {len(honest):>4} {len(hm):>5} {hp:>4} {hp / max(1, len(honest)):7.1%} "
            f"{len(swapped):>5} {len(sm):>5} {sp:>5} {sp / max(1, len(sm)):7.1%}")


HEADER = (f"{'':24} {'PRs':>4} {'meas':>5} {'pen':>4} {'rate':>7} {'swaps':>5} {'meas':>5} {'pen':>5} "
          f"{'catch':>7}\n{'':24} {'honest ------------------':26} {'swapped (other project) -----':30}")


def report(rows: Sequence[dict[str, Any]]) -> None:
    for half in ("fit", "held-out"):
        part = [r for r in rows if r["half"] == half]
        if not part:
            continue
        print(f"\n{half} half ({len({r['project'] for r in part})} projects)")
        print(HEADER)
        for project in sorted({r["project"] for r in part}):
            print(table([r for r in part if r["project"] == project], f"  {project}"))
        print(table(part, f"{half} (all)"))
    print()
    print(table(rows, "corpus (all)"))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mirrors", default="/work/.mirror")
    parser.add_argument("--dump", default=None)
    parser.add_argument("--half", choices=("fit", "held-out"), default=None)
    args = parser.parse_args()

    from app.review.assembly import prepare
    from app.review.embeddings import SentenceEmbedder, load_model
    from app.review.gitrepo import GitRepo
    from app.settings import load_settings
    from checks.rationale import measure_rationale
    from rubric import load_rubric

    prs = json.loads(CORPUS.read_text(encoding="utf-8"))
    rubric = load_rubric()
    embedder = SentenceEmbedder(load_model())
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(sandbox="off", embedding="off", red_team="off", home=Path(tmp) / ".lm")
        for k, pr in enumerate(prs):
            if args.half and pr["half"] != args.half:
                continue
            repo = GitRepo.open(Path(args.mirrors) / pr["repo"].replace("/", "+") / "repo")
            case = prepare(repo, pr["base"], pr["head"], settings=settings, title=pr["title"],
                           body=pr["body"]).case
            for desc in [pr, *(prs[j] for j in swaps_for(prs, k))]:
                text = case if desc is pr else case.model_copy(update={"title": desc["title"], "body": desc["body"]})
                rows.append(record(pr, desc, await measure_rationale(text, rubric, embedder)))
    seconds = time.perf_counter() - started
    intent = rubric.intent
    print(f"rubric {rubric.name} v{rubric.version}; {len(prs)} PRs, {len(rows)} measurements in {seconds:.0f} s")
    print(f"intent thresholds: plain {intent.threshold:.2f}, anchored {intent.anchored_threshold:.2f}")
    report(rows)
    if args.dump:
        Path(args.dump).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
