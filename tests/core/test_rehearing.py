"""The re-hearing: a spread above the rubric's limit makes the Chief Justice hear those judges ONE more time, each
shown the others' arguments and cited evidence; the offline personas move only on a cited fact; both rounds are
recorded."""

from __future__ import annotations

import json
from pathlib import Path

from checks.chief_justice import rehearing_order
from checks.court import CourtParts
from checks.hearing import Hearing, hear
from checks.judges import Defense, Prosecutor, TechLead
from checks.judges.base import reconsidered
from checks.models import Brief, Evidence, JudicialOpinion
from checks.protocols import Judge
from checks.rehearing import rehear
from rubric import Rubric, load_rubric
from tests.core.test_judges import brief
from tests.core.test_review_golden import evaluate

RUBRIC = load_rubric()
EVAL = Evidence(id="eval", detective="repo", kind="banned-call", summary="eval() executes arbitrary code",
                severity="high", cwe="CWE-95")
TESTED = Evidence(id="tested", detective="docs", kind="tests-added", summary="the change adds tests", severity="info")
FACTS = {e.id: e for e in (EVAL, TESTED)}


def op(judge: str, score: int, *cited: str, verdict: str = "PASS", criterion: str = "architecture") -> JudicialOpinion:
    return JudicialOpinion(judge=judge, criterion_id=criterion, score=score, argument=f"{judge} says {score}",
                           cited_evidence=cited, verdict="KILL" if verdict == "KILL" else "PASS")


def test_a_judge_moves_one_point_toward_an_opponent_who_cites_a_fact_arguing_his_way() -> None:
    moved = reconsidered(op("defense", 5), [op("prosecutor", 2, "eval")], FACTS)
    assert moved.score == 4, "one point, never the whole way"
    assert "moved from 5 to 4/5 by prosecutor (2/5, citing eval: eval() executes arbitrary code)" in moved.argument
    up = reconsidered(op("prosecutor", 1), [op("defense", 5, "tested")], FACTS)
    assert up.score == 2, "a favourable fact pulls up"


def test_an_argument_without_a_fact_arguing_its_way_moves_nobody() -> None:
    own = op("defense", 5)
    assert reconsidered(own, [op("prosecutor", 2)], FACTS) == own, "no citation"
    assert reconsidered(own, [op("prosecutor", 2, "tested")], FACTS) == own, "a favourable fact cannot pull down"
    assert reconsidered(own, [op("prosecutor", 2, "not-on-the-record")], FACTS) == own, "a fact not on the record"
    assert reconsidered(op("prosecutor", 1), [op("defense", 5, "eval")], FACTS).score == 1, "adverse cannot pull up"


def test_opposite_pulls_that_cancel_out_and_a_kill_and_an_established_flaw_hold() -> None:
    own = op("tech_lead", 3)
    assert reconsidered(own, [op("prosecutor", 1, "eval"), op("defense", 5, "tested")], FACTS) == own
    kill = op("prosecutor", 1, "eval", verdict="KILL")
    assert reconsidered(kill, [op("defense", 5, "tested")], FACTS) == kill
    low = op("prosecutor", 1, "eval")
    assert reconsidered(low, [op("defense", 5, "tested")], FACTS, flaw_established=True) == low


class NoSecondRound:
    """A judge that cannot reconsider: its first opinion stands, with a notice."""

    persona = "stubborn"

    async def deliberate(self, b: Brief, rubric: Rubric) -> list[JudicialOpinion]:
        return [JudicialOpinion(judge=self.persona, criterion_id=c.id, score=5, argument="fine")
                for c in rubric.criteria]


async def test_the_chief_justice_orders_one_rehearing_only_where_the_spread_is_above_the_limit() -> None:
    b = brief([EVAL])
    judges: list[Judge] = [Prosecutor(), Defense(), TechLead(), NoSecondRound()]
    first = await hear(judges, b, RUBRIC)
    order = rehearing_order(RUBRIC, first.opinions)
    assert order, "the personas and a judge scoring 5 everywhere spread by more than 2 somewhere"
    for criterion_id, reason in order.items():
        scores = [o.score for o in first.opinions if o.criterion_id == criterion_id]
        assert max(scores) - min(scores) > RUBRIC.chief_justice.dissent_spread
        assert reason.startswith(f"{criterion_id}: ") and "> 2" in reason
    assert all(c.id in order or max(s) - min(s) <= 2 for c in RUBRIC.criteria
               for s in [[o.score for o in first.opinions if o.criterion_id == c.id]])

    after, record = await rehear(judges, b, RUBRIC, first, order)
    assert record is not None and record.criteria == tuple(c.id for c in RUBRIC.criteria if c.id in order)
    assert {o.criterion_id for o in record.first_round} == set(order)
    assert record.notices == ("the stubborn judge cannot be heard again; its first opinion stands",)
    assert record.notices[0] in after.notices
    untouched = [o for o in first.opinions if o.criterion_id not in order]
    assert [o for o in after.opinions if o.criterion_id not in order] == untouched
    stubborn = [o for o in after.opinions if o.judge == "stubborn"]
    assert stubborn == [o for o in first.opinions if o.judge == "stubborn"]
    assert len(after.opinions) == len(first.opinions)
    for line in record.moved:
        judge, rest = line.split(" on ", 1)
        criterion_id, change = rest.split(": ")
        before, now = (int(x) for x in change.split(" → "))
        assert abs(before - now) == 1
        assert next(o for o in after.opinions if (o.judge, o.criterion_id) == (judge, criterion_id)).score == now


async def test_no_spread_no_rehearing() -> None:
    first = Hearing(opinions=(op("a", 3), op("b", 5)), notices=(), records=())
    assert rehearing_order(RUBRIC, first.opinions) == {}
    assert await rehear([], brief(), RUBRIC, first, {}) == (first, None)


async def test_a_review_records_both_rounds_and_the_rulings_follow_the_second(tmp_path: Path) -> None:
    """The eval scenario: the Defense gives architecture 5 while the Prosecutor and the Tech Lead cite eval() for 2;
    shown that fact, the Defense moves to 4, and the spread that forced a dissent is gone."""
    data = json.loads(await evaluate(tmp_path, "eval"))
    rehearing = data["rehearing"]
    assert rehearing["criteria"] == ["architecture"]
    assert rehearing["reasons"] == ["architecture: defense 5/5 and prosecutor 2/5 spread by 3 > 2"]
    first = {o["judge"]: o["score"] for o in rehearing["first_round"]}
    assert first == {"defense": 5, "prosecutor": 2, "tech_lead": 2}
    second = {o["judge"]: o["score"] for o in data["opinions"] if o["criterion_id"] == "architecture"}
    assert second == {"defense": 4, "prosecutor": 2, "tech_lead": 2}
    assert rehearing["moved"] == ["defense on architecture: 5 → 4"]
    assert data["dissent"] == [], "a spread of 2 is within the limit: no dissent after the re-hearing"
    ruling = next(r for r in data["rulings"] if r["criterion_id"] == "architecture")
    assert ruling["opinions_considered"] == 3 and "dissent" not in ruling["rules_applied"]


def test_court_parts_default_to_the_offline_bench_that_can_be_heard_again() -> None:
    from checks.protocols import Reconsidering

    assert all(isinstance(j, Reconsidering) for j in CourtParts().judges)
