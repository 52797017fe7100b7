"""The detectives' registry: a detective is one module of this package that registers how it is built.

A module registers with :func:`register` — its id, its place on the bench (the order of the evidence) and the
evidence kinds it emits — on a function that builds it from the review's resources
(:class:`~checks.protocols.CourtResources`)::

    @register("todo", order=70, emits=("todo-left",))
    def build(resources: CourtResources) -> Detective:
        return TodoCounter()

Every module of the package is imported when the bench is asked for (:func:`bench`), so adding a detective is
adding its module: the court runs it and its evidence reaches the report and the DBOM. Which kinds the judges weigh
on which criterion is the rubric's to say (each criterion's ``evidence``, read by
:func:`checks.judges.base.bears_on`): a new kind joins a criterion's docket by a rubric entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from checks.plugins import import_modules
from checks.protocols import CourtResources, Detective

Builder = Callable[[CourtResources], Detective]


@dataclass(frozen=True)
class Registration:
    id: str
    order: int
    build: Builder
    emits: frozenset[str]  # every evidence kind this detective may report


_REGISTERED: dict[str, Registration] = {}


def register(detective_id: str, *, order: int, emits: Iterable[str] = ()) -> Callable[[Builder], Builder]:
    """Register the decorated builder as detective ``detective_id``; an id registered twice is a bug."""

    def decorate(build: Builder) -> Builder:
        known = _REGISTERED.get(detective_id)
        if known is not None and known.build is not build:
            raise ValueError(f"detective {detective_id!r} is registered twice")
        _REGISTERED[detective_id] = Registration(detective_id, order, build, frozenset(emits))
        return build

    return decorate


def unregister(detective_id: str) -> None:
    _REGISTERED.pop(detective_id, None)


def _discover() -> None:
    import checks.detectives as package

    import_modules(package, skip=frozenset({"registry"}))


def registrations() -> list[Registration]:
    """Every detective of the package, in bench order (then by id)."""
    _discover()
    return sorted(_REGISTERED.values(), key=lambda r: (r.order, r.id))


def bench(resources: CourtResources) -> list[Detective]:
    """The detectives of one review, built from its resources, in bench order."""
    return [registration.build(resources) for registration in registrations()]


def emitted_kinds() -> dict[str, frozenset[str]]:
    """For each registered detective, the evidence kinds it declares it may report."""
    return {registration.id: registration.emits for registration in registrations()}
