"""Finding plug-ins: every module of a package is imported, so each can register itself on import.

The detectives (:mod:`checks.detectives.registry`) and the judges' personas (:mod:`checks.judges`) are found
this way: adding one is adding its module.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

_scanned: dict[str, tuple[str, ...]] = {}  # package name → the path whose modules have all been imported


def import_modules(package: ModuleType, *, skip: frozenset[str] = frozenset()) -> None:
    """Import every module of ``package`` (but ``skip``) the first time, and again when its path changes."""
    path = tuple(package.__path__)
    if _scanned.get(package.__name__) == path:
        return
    for module in pkgutil.iter_modules(package.__path__):
        if module.name not in skip:
            importlib.import_module(f"{package.__name__}.{module.name}")
    _scanned[package.__name__] = path
