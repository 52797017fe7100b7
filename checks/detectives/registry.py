"""The detectives' registry: a detective is one module of this package that registers how it is built.

A module registers with :func:`register` — its id, its place on the bench (the order of the evidence) and the
evidence kinds it emits that bear on each CIS component — on a function that builds it from the review's
resources (:class:`~checks.protocols.CourtResources`)::

    @register("todo", order=70, bears_on={"logic": ("todo-left",)})
    def build(resources: CourtResources) -> Detective:
        return TodoCounter()

Every module of the package is imported when the bench is asked for (:func:`bench`), so adding a detective is
adding its module: the court runs it, its evidence reaches the report and the DBOM, and the judges weigh the kinds
it declares on the criteria of those components (:func:`component_kinds`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from checks.plugins import import_modules
from checks.protocols import CourtResources, Detective

Builder = Callable[[CourtResources], Detective]


@dataclass(frozen=True)
class Registration:
    id: str
    order: int
    build: Builder
    bears_on: Mapping[str, frozenset[str]]  # CIS component → the evidence kinds of this detective that bear on it


_REGISTERED: dict[str, Registration] = {}
_kinds: dict[str, frozenset[str]] | None = None  # component_kinds(), until the registrations change


def register(detective_id: str, *, order: int, bears_on: Mapping[str, Iterable[str]] | None = None
             ) -> Callable[[Builder], Builder]:
    """Register the decorated builder as detective ``detective_id``; an id registered twice is a bug."""

    def decorate(build: Builder) -> Builder:
        global _kinds
        known = _REGISTERED.get(detective_id)
        if known is not None and known.build is not build:
            raise ValueError(f"detective {detective_id!r} is registered twice")
        _REGISTERED[detective_id] = Registration(
            detective_id, order, build, {c: frozenset(kinds) for c, kinds in (bears_on or {}).items()})
        _kinds = None
        return build

    return decorate


def unregister(detective_id: str) -> None:
    global _kinds
    _REGISTERED.pop(detective_id, None)
    _kinds = None


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


def component_kinds() -> dict[str, frozenset[str]]:
    """For each CIS component, every evidence kind a detective declares bears on it. Asked for every piece of
    evidence on every criterion: computed once, again only when the registrations change."""
    global _kinds
    _discover()
    if _kinds is None:
        kinds: dict[str, frozenset[str]] = {}
        for registration in _REGISTERED.values():
            for component, declared in registration.bears_on.items():
                kinds[component] = kinds.get(component, frozenset()) | declared
        _kinds = kinds
    return _kinds
