"""The hearing: every judge on the bench deliberates on one brief, in parallel — for a pull request and an audit.

A judge that cannot give its opinions (:class:`~checks.errors.JudgeError`) leaves a notice and the court rules
without it; any other exception is a bug and propagates. A judge may answer with its opinions alone or with a
:class:`~checks.models.Deliberation` that also says what it did (a model judge's usage, fallbacks, records).
The opinions come back in one order (criterion, then judge), whatever order the judges finished in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from checks.errors import JudgeError
from checks.models import Brief, Deliberation, Evidence, JudicialOpinion
from checks.protocols import Judge
from rubric import Rubric


@dataclass(frozen=True)
class Hearing:
    opinions: tuple[JudicialOpinion, ...]  # sorted by (criterion, judge)
    notices: tuple[str, ...]  # in the bench's order
    records: tuple[Evidence, ...]  # what the judges reported doing, sorted by id


async def _deliberate(judge: Judge, brief: Brief, rubric: Rubric
                      ) -> list[JudicialOpinion] | Deliberation | JudgeError:
    try:
        return await judge.deliberate(brief, rubric)
    except JudgeError as exc:
        return exc


async def hear(judges: Sequence[Judge], brief: Brief, rubric: Rubric) -> Hearing:
    answers = await asyncio.gather(*(_deliberate(judge, brief, rubric) for judge in judges))
    opinions: list[JudicialOpinion] = []
    notices: list[str] = []
    records: list[Evidence] = []
    for judge, answer in zip(judges, answers, strict=True):
        if isinstance(answer, JudgeError):
            notices.append(f"{answer}; the court ruled without {judge.persona}")
        elif isinstance(answer, Deliberation):
            opinions.extend(answer.opinions)
            notices.extend(answer.notices)
            records.extend(answer.evidence)
        else:
            opinions.extend(answer)
    return Hearing(opinions=tuple(sorted(opinions, key=lambda o: (o.criterion_id, o.judge))),
                   notices=tuple(notices), records=tuple(sorted(records, key=lambda e: e.id)))


def by_criterion(opinions: Sequence[JudicialOpinion]) -> dict[str, list[JudicialOpinion]]:
    grouped: dict[str, list[JudicialOpinion]] = {}
    for op in opinions:
        grouped.setdefault(op.criterion_id, []).append(op)
    return grouped
