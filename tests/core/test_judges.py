"""The offline judges: deterministic, distinct personas that answer to the evidence."""

from __future__ import annotations

from collections.abc import Iterable

from checks.judges import Defense, Prosecutor, TechLead
from checks.models import Brief, Case, ChangedFile, Commit, Evidence, RedAnalysis, TestRunResult
from rubric import load_rubric

RUBRIC = load_rubric()


def brief(evidence: Iterable[Evidence] = (), tests: TestRunResult | None = None, files: Iterable[str] = ("a.py",),
          testing: float = 0.85) -> Brief:
    case = Case(base_sha="a" * 40, head_sha="b" * 40, diff="",
                files=tuple(ChangedFile(path=p, status="added", added_lines=(1,)) for p in files),
                commits=(Commit(sha="c" * 40, author_name="A", author_email="a@x", message="Add a thing"),))
    return Brief(case=case, evidence=tuple(evidence), tests=tests, semantic=None, red=RedAnalysis(),
                 components={"rationale": None, "architecture": 0.8, "testing": testing})


async def scores(judge: Prosecutor | Defense | TechLead, b: Brief) -> dict[str, tuple[int, str]]:
    return {o.criterion_id: (o.score, o.verdict) for o in await judge.deliberate(b, RUBRIC)}


async def test_personas_disagree_on_the_same_record() -> None:
    b = brief(tests=TestRunResult(status="ran", passed=3))
    results = [await scores(j, b) for j in (Prosecutor(), Defense(), TechLead())]
    assert results[0] != results[1] != results[2]
    assert results[0]["intent"][0] < results[1]["intent"][0]  # unmeasured: prosecutor 2, defense benefit of doubt


async def test_different_evidence_gives_different_opinions() -> None:
    clean = brief(tests=TestRunResult(status="ran", passed=3))
    failing = brief(tests=TestRunResult(status="ran", passed=1, failed=2), testing=0.4167)
    for judge in (Prosecutor(), Defense(), TechLead()):
        assert (await scores(judge, clean))["testing"] > (await scores(judge, failing))["testing"]


async def test_tech_lead_kills_unparseable_code_and_total_test_failure() -> None:
    syntax = Evidence(id="s", detective="repo", kind="syntax-error", summary="bad", severity="high")
    assert (await scores(TechLead(), brief([syntax])))["architecture"] == (1, "KILL")
    all_fail = brief(tests=TestRunResult(status="ran", failed=3), testing=0.2)
    assert (await scores(TechLead(), all_fail))["testing"] == (1, "KILL")


async def test_prosecutor_kills_a_pr_that_names_files_that_do_not_exist() -> None:
    ghost = Evidence(id="doc.path:x.py", detective="doc", kind="claim-unsupported", summary="ghost",
                     severity="medium", facts={"claim": "path", "path": "x.py", "exists": False})
    assert (await scores(Prosecutor(), brief([ghost])))["intent"][1] == "KILL"


async def test_defense_credits_tests_and_kills_only_an_empty_change() -> None:
    with_tests = brief(files=("a.py", "tests/test_a.py"), tests=TestRunResult(status="ran", passed=1), testing=0.6)
    without = brief(files=("a.py",), tests=TestRunResult(status="ran", passed=1), testing=0.6)
    assert (await scores(Defense(), with_tests))["testing"][0] > (await scores(Defense(), without))["testing"][0]
    assert (await scores(Defense(), brief(files=())))["intent"][1] == "KILL"


def test_persona_rule_texts_differ() -> None:
    docs = [Prosecutor.__module__, Defense.__module__, TechLead.__module__]
    import importlib

    texts = [importlib.import_module(m).__doc__ or "" for m in docs]
    assert len(set(texts)) == 3 and all(len(t) > 200 for t in texts)
