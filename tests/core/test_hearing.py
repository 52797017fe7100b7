"""One hearing for both courts: every judge in parallel, one order, a judge's own failure survived, a bug not."""

from __future__ import annotations

import asyncio
from typing import NoReturn

import pytest

from checks.audit.court import AuditParts, run_audit
from checks.audit.models import RepoSnapshot
from checks.errors import JudgeError
from checks.hearing import by_criterion, hear
from checks.judges import Defense, Prosecutor, TechLead
from checks.models import Brief, Deliberation, Evidence, JudicialOpinion
from rubric import Rubric, load_rubric
from tests.core.test_judges import brief

RUBRIC = load_rubric()


class Slow:
    """Finishes last, answering with a Deliberation that leaves records out of id order."""

    persona = "slow"

    async def deliberate(self, b: Brief, rubric: Rubric) -> Deliberation:
        await asyncio.sleep(0.05)
        return Deliberation(judge=self.persona, notices=("slow: used its fallback",), opinions=tuple(
            JudicialOpinion(judge=self.persona, criterion_id=c.id, score=3, argument="a") for c in rubric.criteria),
            evidence=(Evidence(id="z.usage", detective="slow", kind="llm-usage", summary="z"),
                      Evidence(id="a.usage", detective="slow", kind="llm-usage", summary="a")))


class Unavailable:
    persona = "absent"

    async def deliberate(self, b: Brief, rubric: Rubric) -> NoReturn:
        raise JudgeError(self.persona, "the model could not be reached")


class Broken:
    persona = "broken"

    async def deliberate(self, b: Brief, rubric: Rubric) -> NoReturn:
        raise ZeroDivisionError("a bug")


async def test_opinions_come_in_one_order_and_a_judge_s_own_failure_is_a_notice() -> None:
    hearing = await hear([Slow(), Unavailable(), Prosecutor(), Defense(), TechLead()], brief(), RUBRIC)
    keys = [(o.criterion_id, o.judge) for o in hearing.opinions]
    assert keys == sorted(keys) and {o.judge for o in hearing.opinions} == {"slow", "prosecutor", "defense",
                                                                          "tech_lead"}
    assert hearing.notices == ("slow: used its fallback",
                               "judge absent failed: the model could not be reached; the court ruled without absent")
    assert [e.id for e in hearing.records] == ["a.usage", "z.usage"]
    assert set(by_criterion(hearing.opinions)) == {c.id for c in RUBRIC.criteria}


async def test_a_bug_in_a_judge_is_not_swallowed_by_either_court() -> None:
    with pytest.raises(ZeroDivisionError):
        await hear([Prosecutor(), Broken()], brief(), RUBRIC)
    snapshot = RepoSnapshot(name="octo/empty", head_sha="a" * 40, commits=(), paths=(), sources=())
    with pytest.raises(ZeroDivisionError):
        await run_audit(snapshot, None, RUBRIC, AuditParts(judges=[Broken()]))
    audit = await run_audit(snapshot, None, RUBRIC, AuditParts(judges=[Unavailable(), Prosecutor()]))
    assert any("ruled without absent" in n for n in audit.notices)
