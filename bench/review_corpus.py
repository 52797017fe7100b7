"""Whole reviews of the calibration corpus's real merged PRs, with zero configuration, and of their reverted-fix twins.

Run from the repository root (the mirrors of ``bench/corpus/prs.json``'s projects must be present)::

    PYTHONPATH=. HF_HUB_OFFLINE=1 python bench/review_corpus.py --half held-out [--project NAME ...] \\
        [--limit N] [--jobs J] [--twins/--no-twins] [--first ID|PROJECT ...] [--dump FILE] [--work DIR]

Every PR is reviewed as ``logomesh review`` reviews it: :func:`app.review.assembly.review_repository` on a bare
clone of the mirror (``--work``), base and head pinned, default settings (the Docker sandbox, the embedding
model, the red agent: all on, as by default; offline judges), its title and body as merged, no ``.logomesh.yml``
but the project's own. The reverted-fix twins of ``bench/corpus/twins.json`` (``build_twins.py``: base + the
PR's test changes only, verified to have a failing test) are reviewed the same way; a twin that ``pass``es is a
miss. ``--limit`` takes the first N PRs per project in corpus order.

Printed: one table per project and the total — honest PRs reviewed, ``fail``, intent-penalised, tests measured
(the head ran and was compared with a base that ran, no environmental failure), ``neutral`` by reason class,
twins reviewed and twins that ``pass`` — against the targets (fail ≤ 2 %, penalised ≤ 2 %, measured ≥ 90 %,
twins pass 0). ``--dump`` writes one JSON line per review (verdict, deciding rules, CIS parts, T's status and
reason, failing tests); ``--tables FILE`` re-prints the tables of an earlier dump without reviewing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "corpus"))

from build_twins import failing_at_head, make_twin, work_repo  # noqa: E402

CORPUS = ROOT / "bench" / "corpus" / "prs.json"
TWINS = ROOT / "bench" / "corpus" / "twins.json"
TARGETS = {"fail": 0.02, "penalised": 0.02, "measured": 0.90}

# what made a verdict what it is, in the order a neutral is named by: the first that applies
RULE_CLASSES: tuple[tuple[str, str], ...] = (
    ("Tests were not measured", "tests not measured"),
    ("Rule of Completion", "run incomplete"),
    ("Rule of the Environment", "environment"),
    ("Rule of Reproduction", "flaky"),
    ("Rule of the Unmeasured Base", "base unmeasured"),
    ("Rule of the Oracle", "oracle"),
    ("Rule of the Declared Change", "declared change"),
    ("Rule of Regression", "regression"),
    ("Rule of New Failures", "new failures"),
    ("Rule of Untested Change", "mutants survived"),
    ("Rule of Measurement", "not analysed"),
    ("Rule of Security", "security cap"),
    ("KILL", "judge kill"),
    ("CIS", "CIS below pass"),
)
RULE_RE = re.compile(r"^(Rule of [A-Za-z ]+?):|^(Tests were not measured)|^(CIS) |(KILL) ")


def deciding_rules(reasons: Iterable[str]) -> list[str]:
    """The rule names in a verdict's reasons, in order, each once."""
    found: list[str] = []
    for reason in reasons:
        match = RULE_RE.search(reason)
        if match:
            name = next(g for g in match.groups() if g)
            if name not in found:
                found.append(name)
    return found


def neutral_class(rules: Sequence[str]) -> str:
    """The class a ``neutral`` is counted under: the first of :data:`RULE_CLASSES` among its deciding rules."""
    for name, label in RULE_CLASSES:
        if name in rules:
            return label
    return "other"


def record(kind: str, pr: dict[str, Any], evaluation: Any, seconds: float) -> dict[str, Any]:
    """One review as a JSON-able row (``kind``: ``honest`` or ``twin``)."""
    tests = evaluation.tests
    diff = evaluation.differential
    rules = deciding_rules(evaluation.verdict_reasons)
    environmental = [c.name for c in diff.environmental] if diff else []
    return {
        "kind": kind, "id": pr["id"], "project": pr["project"], "half": pr["half"], "head": pr["head"],
        "verdict": evaluation.verdict, "rules": rules, "reasons": list(evaluation.verdict_reasons),
        "neutral": neutral_class(rules) if evaluation.verdict == "neutral" else None,
        "cis": {"R": evaluation.rationale_score, "A": evaluation.architecture_score, "T": evaluation.testing_score,
                "L": evaluation.logic_score, "raw": evaluation.cis_raw, "score": evaluation.cis_score,
                "red_penalty": evaluation.red_penalty_applied, "intent_penalty": evaluation.intent_penalty},
        "measured_parts": dict(evaluation.measured),
        "penalised": any(e.kind == "intent-mismatch" for e in evaluation.evidence),
        "t_status": tests.status if tests else None, "t_reason": tests.reason if tests else None,
        "t_counts": {k: getattr(tests, k) for k in ("passed", "failed", "errored", "skipped")} if tests else None,
        "failing": failing_at_head(tests)[:30] if tests else [],
        "diff_status": diff.status if diff else None, "diff_reason": diff.reason if diff else None,
        "regressed": [c.name for c in diff.regressed] if diff else [],
        "new_failing": [c.name for c in diff.new_failing] if diff else [],
        "environmental": [f"{c.name}: {c.cause}" for c in diff.environmental] if diff else [],
        "flaky": [c.name for c in diff.flaky] if diff else [],
        # why the charged tests failed, for reading a miss without reviewing it again
        "messages": {c.name: (c.message or "")[:400] for c in [*diff.regressed, *diff.new_failing][:10]}
        if diff else {},
        # the head's tests ran, compared with the base's (a base that could not run compares nothing), and no
        # failure was the sandbox's
        "measured": bool(tests and tests.status == "ran" and not environmental and diff is not None
                         and diff.status == "measured"),
        # what the test detective established (the base's run, a fallback, the environment), to read a miss
        "test_evidence": [f"{e.kind}: {e.summary[:300]}" for e in evaluation.evidence if e.detective == "tests"][:12],
        "seconds": round(seconds, 1),
    }


def error_record(kind: str, pr: dict[str, Any], exc: BaseException, seconds: float) -> dict[str, Any]:
    """A review that raised: counted as reviewed, not measured, its verdict ``error``."""
    return {"kind": kind, "id": pr["id"], "project": pr["project"], "half": pr["half"], "head": pr["head"],
            "verdict": "error", "rules": [], "reasons": [f"{type(exc).__name__}: {exc}"[:500]], "neutral": None,
            "penalised": False, "measured": False, "t_status": None, "failing": [], "seconds": round(seconds, 1)}


def reclassify(row: dict[str, Any]) -> dict[str, Any]:
    """A dumped row with its rules and neutral class derived again from its reasons (the rules may have changed),
    and measured only when its differential was (rows dumped before that counted a head run on its own)."""
    rules = deciding_rules(row["reasons"])
    return {**row, "rules": rules, "neutral": neutral_class(rules) if row["verdict"] == "neutral" else None,
            "measured": bool(row["measured"]) and row.get("diff_status", "measured") == "measured"}


def load_dump(path: Path) -> list[dict[str, Any]]:
    """The rows of a dump, one per review (the last when one was reviewed twice)."""
    rows = [reclassify(json.loads(x)) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return list({(r["kind"], r["id"]): r for r in rows}.values())


def tally(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one table row: honest reviews, fails, penalties, measured, neutrals by class, twins."""
    honest = [r for r in rows if r["kind"] == "honest"]
    twins = [r for r in rows if r["kind"] == "twin"]
    n = len(honest)
    fail = sum(r["verdict"] == "fail" for r in honest)
    pen = sum(r["penalised"] for r in honest)
    measured = sum(r["measured"] for r in honest)
    return {"prs": n, "fail": fail, "penalised": pen, "measured": measured, "pass": sum(r["verdict"] == "pass"
            for r in honest), "errors": sum(r["verdict"] == "error" for r in honest),
            "neutral": Counter(r["neutral"] for r in honest if r["verdict"] == "neutral"),
            "fail_rate": fail / n if n else 0.0, "penalised_rate": pen / n if n else 0.0,
            "measured_rate": measured / n if n else 0.0,
            "twins": len(twins), "twins_pass": sum(r["verdict"] == "pass" for r in twins)}


HEADER = (f"{'':26} {'PRs':>4} {'pass':>4} {'fail':>4} {'%':>6} {'pen':>4} {'%':>6} {'meas':>5} {'%':>6} "
          f"{'twins':>5} {'t.pass':>6}  neutral by reason")


def line(label: str, t: dict[str, Any]) -> str:
    neutral = ", ".join(f"{k} {v}" for k, v in sorted(t["neutral"].items())) or "-"
    errors = f"; {t['errors']} raised" if t["errors"] else ""
    return (f"{label:26} {t['prs']:>4} {t['pass']:>4} {t['fail']:>4} {t['fail_rate']:6.1%} {t['penalised']:>4} "
            f"{t['penalised_rate']:6.1%} {t['measured']:>5} {t['measured_rate']:6.1%} {t['twins']:>5} "
            f"{t['twins_pass']:>6}  {neutral}{errors}")


def tables(rows: Sequence[dict[str, Any]]) -> str:
    """One table per project (its honest PRs one by one, then its row) and the total against the targets."""
    out: list[str] = []
    for project in sorted({r["project"] for r in rows}):
        part = [r for r in rows if r["project"] == project]
        out.append(f"\n{project}")
        for r in part:
            cls = f" ({r['neutral']})" if r["neutral"] else ""
            out.append(f"  {r['kind']:6} {r['id']:30} {r['verdict']:7}{cls:22} T {r['t_status']}"
                       f"{' PENALISED' if r['penalised'] else ''}  {r['seconds']:.0f} s")
        out.append(HEADER)
        out.append(line(f"  {project}", tally(part)))
    total = tally(rows)
    out += ["", HEADER, line("total", total),
            f"targets: fail ≤ {TARGETS['fail']:.0%} ({'met' if total['fail_rate'] <= TARGETS['fail'] else 'MISSED'}), "
            f"penalised ≤ {TARGETS['penalised']:.0%} "
            f"({'met' if total['penalised_rate'] <= TARGETS['penalised'] else 'MISSED'}), "
            f"measured ≥ {TARGETS['measured']:.0%} "
            f"({'met' if total['measured_rate'] >= TARGETS['measured'] else 'MISSED'}), "
            f"twins pass 0 ({'met' if total['twins_pass'] == 0 else 'MISSED'})"]
    return "\n".join(out)


def select(prs: Sequence[dict[str, Any]], half: str | None, projects: Sequence[str], limit: int | None,
           skip: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The corpus PRs to review: of ``half`` and ``projects`` (all when empty), the first ``limit`` per project in
    corpus order, minus the ids in ``skip``."""
    seen: Counter[str] = Counter()
    done = set(skip)
    out: list[dict[str, Any]] = []
    for pr in prs:
        if (half and pr["half"] != half) or (projects and pr["project"] not in projects):
            continue
        seen[pr["project"]] += 1
        if limit is not None and seen[pr["project"]] > limit:
            continue
        if pr["id"] not in done:
            out.append(pr)
    return out


async def review_one(kind: str, pr: dict[str, Any], args: argparse.Namespace, settings: Any,
                     lock: asyncio.Lock) -> dict[str, Any]:
    from app.review.assembly import review_repository

    started = time.perf_counter()
    async with lock:  # one clone (and twin commit) at a time per bench
        git_dir = work_repo(args.mirrors, args.work, pr["repo"])
        if kind == "twin":
            sha, _ = make_twin(git_dir, pr["base"], pr["pr_head"])
            if sha != pr["head"]:
                raise SystemExit(f"{pr['id']}: twin built as {sha}, twins.json pins {pr['head']}")
    try:
        evaluation, _ = await review_repository(git_dir, pr["base"], pr["head"], settings=settings,
                                                title=pr.get("title", ""), body=pr.get("body", ""))
    except Exception as exc:  # a bench reports a review that raised and goes on
        return error_record(kind, pr, exc, time.perf_counter() - started)
    return record(kind, pr, evaluation, time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/logomesh-bench/repos"))
    parser.add_argument("--half", choices=("fit", "held-out"), default=None)
    parser.add_argument("--project", action="append", default=[])
    parser.add_argument("--limit", type=int, default=None, help="PRs per project (corpus order)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--twins", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--honest", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--dump", type=Path, default=None, help="JSON lines, appended; reviews in it are skipped")
    parser.add_argument("--first", action="append", default=[],
                        help="a PR id or project reviewed before the rest (the order of the queue only)")
    parser.add_argument("--tables", type=Path, default=None, help="print the tables of this dump and stop")
    args = parser.parse_args()
    if args.tables:
        print(tables(load_dump(args.tables)))
        return

    from app.settings import load_settings

    done = load_dump(args.dump) if args.dump and args.dump.exists() else []
    prs = json.loads(CORPUS.read_text(encoding="utf-8"))
    todo = [("honest", pr) for pr in select(prs, args.half, args.project, args.limit,
                                            {r["id"] for r in done if r["kind"] == "honest"}) if args.honest]
    if args.twins and TWINS.exists():
        chosen = {pr["id"] for pr in select(prs, args.half, args.project, args.limit)}
        by_id = {pr["id"]: pr for pr in prs}  # a twin claims its PR's title and body
        twins = [{**by_id[t["id"]], **t} for t in json.loads(TWINS.read_text(encoding="utf-8")) if t["id"] in chosen]
        for twin in twins:
            if not twin.get("verified"):
                print(f"twin of {twin['id']} left out: {twin.get('dropped') or 'not verified'}")
        twin_done = {r["id"] for r in done if r["kind"] == "twin"}
        todo += [("twin", t) for t in twins if t.get("verified") and t["id"] not in twin_done]
    first = set(args.first)
    todo.sort(key=lambda item: not ({item[1]["id"], item[1]["project"]} & first))  # stable: corpus order otherwise
    settings = load_settings(home=args.work.parent / "home")
    print(f"{len(todo)} reviews ({len(done)} already in {args.dump}), {args.jobs} at a time", flush=True)
    gate = asyncio.Semaphore(args.jobs)
    lock = asyncio.Lock()
    rows = list(done)

    async def run(kind: str, pr: dict[str, Any]) -> None:
        async with gate:
            row = await review_one(kind, pr, args, settings, lock)
        rows.append(row)
        print(f"{kind:6} {row['id']:32} {row['verdict']:7} {row.get('neutral') or '':20} T {row['t_status']} "
              f"{row['seconds']:.0f} s  {'; '.join(row['reasons'])[:160]}", flush=True)
        if args.dump:
            with args.dump.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")

    await asyncio.gather(*(run(kind, pr) for kind, pr in todo))
    print(tables(rows))


if __name__ == "__main__":
    asyncio.run(main())
