"""The pure parts of the corpus review bench: reverted-fix twins built on a tiny git repository, the verdicts'
reason classes and the table's figures (no Docker, no model)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from checks.models import TestCaseResult, TestRunResult
from tests.gitfixture import RepoBuilder

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _script(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


twins = _script(BENCH / "corpus" / "build_twins.py")
bench = _script(BENCH / "review_corpus.py")


def _pr(tmp_path: Path) -> tuple[Path, str, str]:
    repo = RepoBuilder(tmp_path / "proj")
    base = repo.commit("base", {"pkg/mod.py": "def f():\n    return 1\n", "tests/test_mod.py": "old\n",
                                "tests/test_gone.py": "gone\n", "README.md": "r\n"})
    head = repo.commit("fix (#7)", {"pkg/mod.py": "def f():\n    return 2\n", "tests/test_mod.py": "new\n",
                                    "tests/test_gone.py": None, "tests/data/case.txt": "x\n", "README.md": "r2\n"})
    return repo.path, base, head


def _show(git_dir: Path, rev: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{rev}:{path}"], capture_output=True,
                          text=True).stdout


def test_a_twin_is_the_base_with_only_the_test_changes_and_its_id_is_the_same_wherever_built(tmp_path: Path) -> None:
    path, base, head = _pr(tmp_path)
    git_dir = path / ".git"
    sha, paths = twins.make_twin(git_dir, base, head)
    assert paths == ["tests/data/case.txt", "tests/test_gone.py", "tests/test_mod.py"]
    assert _show(git_dir, sha, "pkg/mod.py") == "def f():\n    return 1\n"  # the product change left out
    assert _show(git_dir, sha, "README.md") == "r\n"
    assert _show(git_dir, sha, "tests/test_mod.py") == "new\n"
    assert _show(git_dir, sha, "tests/data/case.txt") == "x\n"
    files = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", sha],
                           capture_output=True, text=True, check=True).stdout.split()
    assert "tests/test_gone.py" not in files
    parent = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", f"{sha}^"], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert parent == base
    mirrors = tmp_path / "mirrors"
    (mirrors / "o+proj").mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(path), str(mirrors / "o+proj" / "repo")], check=True)
    clone = twins.work_repo(mirrors, tmp_path / "work", "o/proj")
    assert twins.make_twin(clone, base, head) == (sha, paths)


def test_the_twinned_prs_are_the_first_of_each_project() -> None:
    prs = [{"id": f"{p}#{k}", "project": p} for p in ("a", "b") for k in range(3)]
    assert [pr["id"] for pr in twins.chosen(prs, 2)] == ["a#0", "a#1", "b#0", "b#1"]


def test_failing_tests_include_collection_errors() -> None:
    result = TestRunResult(status="ran", passed=1, failed=1, tests=(
        TestCaseResult(name="t::ok", outcome="passed"), TestCaseResult(name="t::bad", outcome="failed"),
        TestCaseResult(name="t::skip", outcome="skipped")),
        collection_errors=(TestCaseResult(name="tests/test_new.py", outcome="error"),))
    assert twins.failing_at_head(result) == ["t::bad", "tests/test_new.py"]
    assert twins.failing_at_head(TestRunResult(status="ran", passed=3)) == []
    # a failure the base shares does not verify a twin; one the base does not have does
    base = TestRunResult(status="ran", failed=1, tests=(TestCaseResult(name="t::bad", outcome="failed"),))
    assert twins.new_failures(result, base) == ["tests/test_new.py"]
    assert twins.new_failures(result, TestRunResult(status="timeout")) == ["t::bad", "tests/test_new.py"]


def test_a_neutral_is_named_by_the_first_rule_that_applies() -> None:
    reasons = ["CIS 0.6 against pass ≥ 0.70, fail < 0.50",
               "Rule of the Environment: 2 failing test(s) failed for the sandbox's environment",
               "KILL recorded (rejection-first is off): prosecutor on intent"]
    rules = bench.deciding_rules(reasons)
    assert rules == ["CIS", "Rule of the Environment", "KILL"]
    assert bench.neutral_class(rules) == "environment"
    assert bench.neutral_class(bench.deciding_rules(["CIS 0.6 against pass ≥ 0.70, fail < 0.50"])) == "CIS below pass"
    assert bench.neutral_class(bench.deciding_rules(["Tests were not measured, so the verdict cannot be pass",
                                                     "Rule of Completion: the run did not complete"])) \
        == "tests not measured"


def _row(kind: str, project: str, verdict: str, *, penalised: bool = False, measured: bool = True,
         neutral: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "id": f"{project}#{verdict}", "project": project, "verdict": verdict,
            "penalised": penalised, "measured": measured, "neutral": neutral, "t_status": "ran", "seconds": 1.0}


def test_the_table_counts_honest_prs_and_twins_apart() -> None:
    rows = [_row("honest", "a", "pass"), _row("honest", "a", "fail", penalised=True),
            _row("honest", "a", "neutral", measured=False, neutral="tests not measured"),
            _row("honest", "b", "neutral", neutral="CIS below pass"), _row("twin", "a", "pass"),
            _row("twin", "b", "fail")]
    total = bench.tally(rows)
    assert (total["prs"], total["pass"], total["fail"], total["penalised"], total["measured"]) == (4, 1, 1, 1, 3)
    assert (total["fail_rate"], total["penalised_rate"], total["measured_rate"]) == (0.25, 0.25, 0.75)
    assert dict(total["neutral"]) == {"tests not measured": 1, "CIS below pass": 1}
    assert (total["twins"], total["twins_pass"]) == (2, 1)
    text = bench.tables(rows)
    assert "\na\n" in text and "\nb\n" in text
    assert "twins pass 0 (MISSED)" in text and "fail ≤ 2% (MISSED)" in text
    assert bench.tally([])["fail_rate"] == 0.0


def test_a_head_run_with_no_base_to_compare_with_is_not_measured() -> None:
    row = {**_row("honest", "a", "neutral", neutral="environment"), "reasons": [], "diff_status": "env_error"}
    assert bench.reclassify(row)["measured"] is False
    assert bench.reclassify({**row, "diff_status": "measured"})["measured"] is True


def test_select_takes_the_first_n_per_project_of_a_half_and_skips_done_ones() -> None:
    prs = [{"id": f"{p}#{k}", "project": p, "half": h} for p, h in (("a", "fit"), ("b", "held-out"),
                                                                  ("c", "held-out")) for k in range(3)]
    assert [p["id"] for p in bench.select(prs, "held-out", [], 2)] == ["b#0", "b#1", "c#0", "c#1"]
    assert [p["id"] for p in bench.select(prs, None, ["c"], None, {"c#1"})] == ["c#0", "c#2"]
