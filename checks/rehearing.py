"""The re-hearing: when judges spread by more than the rubric's ``dissent_spread`` on a criterion, the Chief
Justice orders ONE more round (:func:`checks.chief_justice.rehearing_order`) on those criteria only.

Each judge that gave an opinion there is shown every opinion of the first round — the others' scores, arguments
and cited evidence — and answers again (:class:`~checks.protocols.Reconsidering`). The offline personas follow a
written, deterministic rule (:func:`checks.judges.base.reconsidered`: only a cited fact on the record moves a
judge, one point at most); a model judge is asked once more with the others' arguments as untrusted data. A
judge that cannot reconsider, fails, or answers out of turn keeps its first opinion, with a notice. There is no
third round: whatever spread survives becomes a written dissent.

Both rounds stay on the record (:class:`~checks.models.Rehearing`): the first round's opinions on the re-heard
criteria, who moved, and the second round as the evaluation's opinions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from checks.errors import JudgeError
from checks.hearing import Hearing
from checks.models import Brief, Deliberation, Evidence, JudicialOpinion, Rehearing
from checks.protocols import Judge, Reconsidering
from rubric import Rubric

Answer = list[JudicialOpinion] | Deliberation | JudgeError | None


async def _reconsider(judge: Judge, brief: Brief, rubric: Rubric, first: Sequence[JudicialOpinion],
                      criteria: Sequence[str]) -> Answer:
    if not isinstance(judge, Reconsidering):
        return None
    try:
        return await judge.reconsider(brief, rubric, first, criteria)
    except JudgeError as exc:
        return exc


async def rehear(judges: Sequence[Judge], brief: Brief, rubric: Rubric, hearing: Hearing,
                 order: Mapping[str, str]) -> tuple[Hearing, Rehearing | None]:
    """The hearing after the ordered re-hearing (unchanged when nothing was ordered), and its record."""
    if not order:
        return hearing, None
    criteria = tuple(c.id for c in rubric.criteria if c.id in order)
    first = tuple(o for o in hearing.opinions if o.criterion_id in order)
    heard = {o.judge for o in first}
    bench = [j for j in judges if j.persona in heard]
    answers = await asyncio.gather(*(_reconsider(j, brief, rubric, hearing.opinions, criteria) for j in bench))
    second = {(o.judge, o.criterion_id): o for o in first}
    notices: list[str] = []
    records: list[Evidence] = []
    for judge, answer in zip(bench, answers, strict=True):
        if answer is None:
            notices.append(f"the {judge.persona} judge cannot be heard again; its first opinion stands")
            continue
        if isinstance(answer, JudgeError):
            notices.append(f"{answer}; on re-hearing, its first opinion stands")
            continue
        if isinstance(answer, Deliberation):
            opinions: Sequence[JudicialOpinion] = answer.opinions
            notices.extend(answer.notices)
            records.extend(answer.evidence)
        else:
            opinions = answer
        for op in opinions:
            if op.judge == judge.persona and (op.judge, op.criterion_id) in second:
                second[(op.judge, op.criterion_id)] = op
    moved = tuple(f"{o.judge} on {o.criterion_id}: {o.score} → {second[(o.judge, o.criterion_id)].score}"
                  for o in first if second[(o.judge, o.criterion_id)].score != o.score)
    opinions_after = [o for o in hearing.opinions if o.criterion_id not in order] + list(second.values())
    after = Hearing(opinions=tuple(sorted(opinions_after, key=lambda o: (o.criterion_id, o.judge))),
                    notices=hearing.notices + tuple(notices),
                    records=tuple(sorted((*hearing.records, *records), key=lambda e: e.id)))
    return after, Rehearing(criteria=criteria, reasons=tuple(order[c] for c in criteria), first_round=first,
                            moved=moved, notices=tuple(notices))
