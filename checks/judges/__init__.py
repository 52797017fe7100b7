"""Judges: one persona per module, for both courts. The offline personas are deterministic rule sets (see each
module's docstring); a module registers its persona with :func:`checks.judges.base.persona`, so adding one is
adding its module and naming it in the rubric's ``judges``."""

from collections.abc import Iterable

from checks.judges.base import Court, OfflineJudge, registered_personas
from checks.judges.defense import Defense
from checks.judges.prosecutor import Prosecutor
from checks.judges.tech_lead import TechLead

__all__ = ["Defense", "OfflineJudge", "Prosecutor", "TechLead", "offline_judges"]


def offline_judges(personas: Iterable[str] | None = None, court: Court = "pr") -> list[OfflineJudge]:
    """The offline bench for ``court``: the personas named (a rubric's ``judges``, in its order) that have an
    offline module, or every registered persona."""
    registered = registered_personas()
    names = list(registered) if personas is None else [name for name in personas if name in registered]
    return [registered[name](court) for name in names]
