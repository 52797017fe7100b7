"""Judges: one persona per module. The offline personas are deterministic rule sets; see each docstring."""

from checks.judges.defense import Defense
from checks.judges.prosecutor import Prosecutor
from checks.judges.tech_lead import TechLead

__all__ = ["Defense", "Prosecutor", "TechLead", "offline_judges"]


def offline_judges() -> list[Prosecutor | Defense | TechLead]:
    return [Prosecutor(), Defense(), TechLead()]
