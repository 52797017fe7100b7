"""Which evidence bears on a criterion of an arbitrary rubric, and what the facts alone score it.

The rubric decides, as in the PR court (:func:`checks.judges.base.bears_on`): a criterion's ``evidence`` list names
the evidence kinds it is judged on. The facts' score is

    fact = 1 + 4 · F / (F + A)

with F the number of favourable (``info``) items and A the adverse items weighted by severity
(:data:`ADVERSE_WEIGHT`). Items marked ``neutral`` (descriptions) or ``unmeasured`` (something nobody could
look at) weigh nothing; a criterion with nothing weighed is *not measured* (None), never guessed.
"""

from __future__ import annotations

from checks.judges.base import Docket, bears_on
from checks.models import Brief, Evidence
from rubric import Criterion

ADVERSE_WEIGHT = {"low": 0.5, "medium": 1.5, "high": 2.5, "critical": 4.0}


def weight(evidence: Evidence) -> tuple[float, float]:
    """(favourable, adverse) weight of one item."""
    if evidence.facts.get("neutral") or evidence.facts.get("unmeasured"):
        return 0.0, 0.0
    if evidence.severity == "info":
        return 1.0, 0.0
    return 0.0, ADVERSE_WEIGHT[evidence.severity]


def fact_score(items: tuple[Evidence, ...]) -> float | None:
    favourable = sum(weight(e)[0] for e in items)
    adverse = sum(weight(e)[1] for e in items)
    if favourable + adverse == 0:
        return None
    return 1.0 + 4.0 * favourable / (favourable + adverse)


def audit_docket(brief: Brief, criterion: Criterion) -> Docket:
    items = tuple(e for e in brief.evidence if bears_on(criterion, e))
    return Docket(
        criterion=criterion,
        fact_score=fact_score(items),
        adverse=tuple(e for e in items if e.severity != "info"),
        favourable=tuple(e for e in items if e.severity == "info"),
    )
