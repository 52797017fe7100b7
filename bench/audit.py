"""How long a repository audit takes, and what its DBOM adds, measured side by side in one run.

For each input — the fixture repository with its two-page PDF (tests/audit/fixtures.py) and this repository
itself, read at HEAD — it times, interleaved over N rounds (median):

1. reading the inputs (git object store, pypdf),
2. the audit court and the Markdown render,
3. appending the audit's signed DBOM to a SQLite ledger (and, for comparison, a review's DBOM),

and prints the DBOM's cost as a ratio of the audit's. Offline judges; no network.

Usage: PYTHONPATH=. python bench/audit.py [N]   (default N=7)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.audit.run import load_audit_rubric, open_snapshot, read_report  # noqa: E402
from app.ledger import open_ledger  # noqa: E402
from app.ledger.local import audit_entanglement  # noqa: E402
from app.settings import load_settings  # noqa: E402
from checks.audit import AuditParts, render_audit, run_audit  # noqa: E402
from tests.audit.fixtures import build_repo, build_report  # noqa: E402
from tests.dbom.factory import entanglement, evaluation  # noqa: E402


async def rounds(name: str, repo: Path, pdf: Path | None, n: int) -> dict[str, float]:
    rubric = load_audit_rubric(None)
    home = Path(tempfile.mkdtemp(prefix="audit-bench-"))
    ledger = await open_ledger(load_settings(home=home))
    times: dict[str, list[float]] = {"read": [], "court": [], "audit dbom": [], "review dbom": []}
    try:
        for i in range(n):
            start = time.perf_counter()
            report = read_report(pdf) if pdf is not None else None
            with open_snapshot(str(repo), rubric.forensics.max_commits) as snapshot:
                tree = snapshot.content_sha256()
                times["read"].append(time.perf_counter() - start)
                start = time.perf_counter()
                result = await run_audit(snapshot, report, rubric, AuditParts())
                markdown = render_audit(result, rubric)
                times["court"].append(time.perf_counter() - start)
            # each round a new record (a new model id entangled), so every append is a real one
            ent = audit_entanglement(tree, markdown, {"judges": "offline", "round": str(i)})
            start = time.perf_counter()
            await ledger.append_audit(result, installation_id=None, entanglement=ent)
            times["audit dbom"].append(time.perf_counter() - start)
            ev = evaluation(i)
            start = time.perf_counter()
            await ledger.append(ev, installation_id=None, entanglement=entanglement(ev))
            times["review dbom"].append(time.perf_counter() - start)
        assert (await ledger.verify()).ok
    finally:
        await ledger.close()
    median = {k: statistics.median(v) for k, v in times.items()}
    audit = median["read"] + median["court"]
    print(f"{name}: {len(snapshot.sources)} Python file(s), {len(result.evidence)} fact(s), "
          f"{len(result.claims)} claim(s)")
    for key, value in median.items():
        print(f"  {key:12} {value * 1000:8.1f} ms")
    print(f"  DBOM / audit: {median['audit dbom'] / audit:.3f}   "
          f"audit DBOM / review DBOM: {median['audit dbom'] / median['review dbom']:.2f}")
    return median


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    work = Path(tempfile.mkdtemp(prefix="audit-bench-inputs-"))
    fixture = build_repo(work / "courtroom")
    pdf = build_report(work / "report.pdf")
    print(f"audit benchmark, {n} rounds each (median)")
    asyncio.run(rounds("fixture repository + PDF", fixture, pdf, n))
    asyncio.run(rounds("this repository (HEAD)", ROOT, None, n))


if __name__ == "__main__":
    main()
