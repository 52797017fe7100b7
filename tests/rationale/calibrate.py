"""Measure the labelled set with the real model and print the numbers behind ``rationale.calibration``.

Run: ``PYTHONPATH=. python -m tests.rationale.calibrate`` (prints raw cosines, separation, the threshold that
separates best, and the calibrated false-positive / detection rates at the rubric's intent threshold).
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
from dataclasses import dataclass

from checks.protocols import Embedder
from checks.rationale import measure_rationale
from rubric import Rubric, load_rubric
from tests.rationale.cases import hard_mismatches, matching, mismatched
from tests.rationale.labelled_changes import CHANGES, HARD_MISMATCHES


@dataclass(frozen=True)
class LabelledScores:
    matching_raw: list[float]
    mismatched_raw: list[float]
    matching_score: list[float]
    mismatched_score: list[float]

    def auc(self) -> float:
        """Probability that a matching pair outranks a mismatched one (ties count half)."""
        wins = sum(1.0 if m > n else 0.5 if m == n else 0.0 for m in self.matching_raw for n in self.mismatched_raw)
        return wins / (len(self.matching_raw) * len(self.mismatched_raw))

    def best_raw_threshold(self) -> tuple[float, int]:
        """The raw cut that misclassifies fewest pairs (midpoint between neighbours), and how many it misses."""
        values = sorted(set(self.matching_raw + self.mismatched_raw))
        best = (values[0], len(self.matching_raw) + len(self.mismatched_raw))
        for low, high in itertools.pairwise(values):
            cut = (low + high) / 2
            errors = sum(1 for v in self.matching_raw if v < cut) + sum(1 for v in self.mismatched_raw if v >= cut)
            if errors < best[1]:
                best = (cut, errors)
        return best


async def score_labelled_set(embedder: Embedder, rubric: Rubric) -> LabelledScores:
    raw: dict[str, list[float]] = {"match": [], "mismatch": []}
    score: dict[str, list[float]] = {"match": [], "mismatch": []}
    pairs = [("match", matching(change)) for change in CHANGES]
    pairs += [("mismatch", mismatched(index)) for index in range(len(CHANGES))]
    pairs += [("mismatch", case) for case in hard_mismatches()]
    for label, case in pairs:
        report = await measure_rationale(case, rubric, embedder)
        assert report.semantic is not None and report.semantic.measured
        raw[label].append(report.semantic.raw_similarity or 0.0)
        score[label].append(report.semantic.score or 0.0)
    return LabelledScores(raw["match"], raw["mismatch"], score["match"], score["mismatch"])


def summary(scores: LabelledScores, rubric: Rubric) -> str:
    cut, errors = scores.best_raw_threshold()
    threshold = rubric.intent.threshold
    fp = sum(1 for s in scores.matching_score if s < threshold)
    caught = sum(1 for s in scores.mismatched_score if s < threshold)
    m, n = scores.matching_raw, scores.mismatched_raw
    lines = [
        f"pairs: {len(m)} matching, {len(n)} mismatched",
        f"raw matching:   mean {statistics.mean(m):.4f}  min {min(m):.4f}  max {max(m):.4f}",
        f"raw mismatched: mean {statistics.mean(n):.4f}  min {min(n):.4f}  max {max(n):.4f}",
        f"separation (mean gap) {statistics.mean(m) - statistics.mean(n):.4f}; AUC {scores.auc():.4f}",
        f"best raw cut {cut:.4f} ({errors} misclassified)",
        f"calibration raw_low {rubric.rationale.calibration.raw_low} raw_high {rubric.rationale.calibration.raw_high}",
        f"R matching:   mean {statistics.mean(scores.matching_score):.4f} min {min(scores.matching_score):.4f}",
        f"R mismatched: mean {statistics.mean(scores.mismatched_score):.4f} max {max(scores.mismatched_score):.4f}",
        f"at intent threshold {threshold}: false positives {fp}/{len(m)} matching flagged; "
        f"mismatches caught {caught}/{len(n)}",
    ]
    return "\n".join(lines)


async def main() -> None:
    from app.review.embeddings import SentenceEmbedder

    rubric = load_rubric()
    scores = await score_labelled_set(SentenceEmbedder.load(), rubric)
    print(summary(scores, rubric))
    for change, raw_m, raw_n in zip(CHANGES, scores.matching_raw, scores.mismatched_raw, strict=False):
        print(f"  {change['id']:<26} match {raw_m:.4f}  mismatch {raw_n:.4f}")
    for (code, desc), raw_h in zip(HARD_MISMATCHES, scores.mismatched_raw[len(CHANGES):], strict=True):
        print(f"  hard: {code} under {desc}: {raw_h:.4f}")


if __name__ == "__main__":
    asyncio.run(main())
