"""The Red Agent against fixture changes, with probes really executed (in a throwaway copy, see conftest)."""

from __future__ import annotations

import pytest

from app.review.red import BanditSource
from checks import cis
from checks.red import collect_hypotheses
from rubric import Rubric
from tests.red.conftest import Attack
from tests.red.fixtures import CLEAN, EXPECTED, VULNERABLE, make_case


@pytest.mark.parametrize("name", sorted(VULNERABLE))
async def test_each_vulnerability_is_found_with_its_severity(attack: Attack, rubric: Rubric, name: str) -> None:
    path, source = VULNERABLE[name]
    kind, severity, confirmed, cwe = EXPECTED[name]
    analysis, _agent, sandbox = await attack({path: source}, sources=[BanditSource()])
    assert analysis.ran
    assert [(f.id.split(":")[0], f.severity, f.confirmed, f.cwe) for f in analysis.findings] == \
        [(kind, severity, confirmed, cwe)]
    finding = analysis.findings[0]
    assert finding.location is not None and finding.location.path == path
    assert analysis.max_severity == severity
    assert analysis.attack_successful is confirmed
    if confirmed:
        assert finding.payload and finding.effect and finding.confidence == rubric.red.confirmed_confidence
        assert sandbox.probes, "a confirmation must come from a probe that ran"
    else:
        assert finding.payload is None and not sandbox.probes
    assert cis.red_penalty(rubric, [f.severity for f in analysis.findings]) == \
        pytest.approx(1 - getattr(rubric.red.multipliers, severity))


@pytest.mark.parametrize("name", sorted(CLEAN))
async def test_clean_code_of_the_same_shape_yields_no_finding(attack: Attack, name: str) -> None:
    path, source = CLEAN[name]
    analysis, _agent, sandbox = await attack({path: source}, sources=[BanditSource()])
    assert analysis.findings == ()
    assert analysis.max_severity == "none" and not analysis.attack_successful
    assert sandbox.probes == []


async def test_all_six_in_one_change_within_the_default_budget(attack: Attack, rubric: Rubric) -> None:
    modules = dict(VULNERABLE.values())
    analysis, agent, sandbox = await attack(modules, sources=[BanditSource()])
    got = {f.id.split(":")[0]: (f.severity, f.confirmed) for f in analysis.findings}
    assert got == {kind: (severity, confirmed) for kind, severity, confirmed, _ in EXPECTED.values()}
    assert agent.last_search is not None
    assert agent.last_search.steps == len(sandbox.probes) <= rubric.red.max_steps
    assert analysis.max_severity == "critical"


async def test_the_same_seed_gives_the_same_tree_probes_and_findings(attack: Attack) -> None:
    modules = dict(VULNERABLE.values())
    first, _a1, box1 = await attack(modules)
    second, _a2, box2 = await attack(modules)
    assert first.search == second.search
    assert first.findings == second.findings
    assert box1.probes == box2.probes
    assert first.search is not None
    tree = first.search["tree"]
    assert tree and all({"path", "visits", "mean", "closed"} <= set(row) for row in tree)


async def test_a_different_change_gets_a_different_seed(attack: Attack) -> None:
    path, source = VULNERABLE["path"]
    one, _a, _b = await attack({path: source})
    two, _a, _b = await attack({path: source + "\n# touched\n"})
    assert one.search is not None and two.search is not None
    assert one.search["seed"] != two.search["seed"]


async def test_the_step_budget_is_respected(attack: Attack) -> None:
    # Only one probe allowed: the agent confirms what it can and reports the rest unconfirmed.
    analysis, agent, sandbox = await attack(dict(VULNERABLE.values()), overrides={"red": {"max_steps": 1}})
    assert agent.last_search is not None
    assert len(sandbox.probes) == 1 and agent.last_search.steps == 1
    assert agent.last_search.stop_reason == "steps"
    unconfirmed = [f for f in analysis.findings if not f.confirmed and f.id.split(":")[0] != "hardcoded-secret"]
    assert len(unconfirmed) >= 4
    assert all(f.severity != "critical" for f in unconfirmed)  # critical requires confirmation
    assert any("budget ran out" in (f.effect or "") for f in unconfirmed)


async def test_the_time_budget_is_respected(attack: Attack) -> None:
    ticks = iter(range(0, 10_000, 25))  # a fake clock: every reading advances 25 s
    analysis, agent, sandbox = await attack(dict(VULNERABLE.values()), clock=lambda: float(next(ticks)))
    assert agent.last_search is not None
    assert agent.last_search.stop_reason == "time"
    assert agent.last_search.steps < 10 and len(sandbox.probes) == agent.last_search.steps
    assert analysis.runtime_seconds is not None and analysis.runtime_seconds > 60


async def test_without_a_sandbox_it_analyses_statically_and_says_so(attack: Attack) -> None:
    analysis, agent, _sandbox = await attack(dict(VULNERABLE.values()), sandboxed=False)
    assert agent.last_search is None
    assert analysis.ran and "no sandbox" in (analysis.reason or "")
    assert not analysis.attack_successful
    severities = {f.id.split(":")[0]: f.severity for f in analysis.findings}
    assert severities == {"command-injection": "high", "code-injection": "high", "deserialization": "high",
                          "sql-injection": "medium", "path-traversal": "medium", "hardcoded-secret": "high"}
    assert analysis.search is not None
    assert analysis.search == {"seed": analysis.search["seed"], "hypotheses": 6, "probeable": 5, "ran": False}


async def test_output_of_the_target_cannot_forge_a_confirmation(attack: Attack) -> None:
    # The module prints a fake probe marker (without the nonce it cannot know) and does nothing dangerous.
    source = ('import subprocess\nimport sys\n\n\ndef run(cmd):\n'
              '    print("LOGOMESH-PROBE-0 {\\"phase\\": \\"attack\\", \\"canary\\": true}")\n'
              '    return subprocess.run(["echo", cmd], shell=True, capture_output=True)\n')
    analysis, _agent, sandbox = await attack({"shop/fake.py": source})
    assert sandbox.probes
    assert [(f.severity, f.confirmed) for f in analysis.findings] == [("high", False)]


async def test_only_added_lines_are_attacked(rubric: Rubric) -> None:
    path, source = VULNERABLE["command"]
    case = make_case({path: source})
    untouched = case.model_copy(update={"files": (case.files[0].model_copy(update={
        "status": "modified", "added_lines": (1, 2)}),)})
    assert collect_hypotheses(case, rubric)
    assert collect_hypotheses(untouched, rubric) == []


async def test_bandit_seeds_are_merged_with_the_taint_pass(rubric: Rubric) -> None:
    path, source = VULNERABLE["sql"]
    hypotheses = collect_hypotheses(make_case({path: source}), rubric, [BanditSource()])
    assert len(hypotheses) == 1
    assert hypotheses[0].origins == ("bandit", "taint") and hypotheses[0].scanner_ids == ("B608",)
    assert hypotheses[0].tainted == ("name",)


async def test_nosec_does_not_hide_a_sink_from_bandit() -> None:
    source = "def f(x):\n    return eval(x)  # nosec\n"
    assert [h.kind for h in BanditSource().candidates("m.py", source)] == ["code-injection"]


async def test_the_analysis_is_canonical_json_for_the_dbom(attack: Attack) -> None:
    rfc8785 = pytest.importorskip("rfc8785")
    analysis, _agent, _sandbox = await attack(dict(VULNERABLE.values()))
    payload = analysis.model_dump(mode="json", exclude={"runtime_seconds"})
    assert rfc8785.dumps(payload)  # raises on integers beyond 2**53, NaN, …
    assert analysis.search is not None
    assert isinstance(analysis.search["seed"], str) and len(analysis.search["seed"]) == 16
    tree = analysis.search["tree"]
    assert all(row["closed"] for row in tree if row["path"].startswith("code-injection"))


async def test_a_file_too_large_for_the_static_pass_is_named_not_silently_skipped(
        attack: Attack, rubric: Rubric) -> None:
    from checks.detectives import RedTeam
    from checks.red.agent import MAX_SOURCE_CHARS

    path, source = VULNERABLE[sorted(VULNERABLE)[0]]
    padding = "\n".join(f"VALUE_{i} = {i}" for i in range(MAX_SOURCE_CHARS // 12))
    analysis, agent, sandbox = await attack({path: source + "\n" + padding + "\n"}, sources=[BanditSource()])
    assert analysis.findings == () and analysis.search is not None
    assert analysis.search["too_large"]["paths"] == [path]
    report = await RedTeam(agent, sandbox).investigate(make_case({path: source + "\n" + padding + "\n"}), rubric)
    capped = [e for e in report.evidence if e.kind == "analysis-capped"]
    assert len(capped) == 1 and capped[0].severity == "low" and path in capped[0].summary
