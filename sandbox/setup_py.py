"""What a ``setup.py`` declares in literals, read without running it: ``install_requires``, ``extras_require`` and
``python_requires`` (and ``name``) of its ``setup(...)`` call.

Only literal values count (a list or tuple of strings; a dict of such lists; a string), also when bound to a
module-level name first (``requires = [...]`` then ``install_requires=requires``). Anything computed is left out:
the file is the change's and is never executed outside the sandbox.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from checks import pyast


@dataclass(frozen=True)
class SetupPy:
    install_requires: list[str] = field(default_factory=list)
    extras_require: dict[str, list[str]] = field(default_factory=dict)
    python_requires: str | None = None
    name: str | None = None


def _literal(node: ast.expr, names: dict[str, ast.expr]) -> object:
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    if isinstance(node, ast.Dict):  # extras_require={"tests": TESTS}: each value may be a name bound above
        pairs = [(_literal(k, {}), v) for k, v in zip(node.keys, node.values, strict=True) if k is not None]
        return {key: _literal(v, names) for key, v in pairs if isinstance(key, str)}
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list | tuple) else []


def read_setup_py(text: str | None) -> SetupPy:
    """The literal metadata of the first ``setup(...)`` / ``setuptools.setup(...)`` call in ``text``."""
    if not text:
        return SetupPy()
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return SetupPy()
    names: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            names[stmt.targets[0].id] = stmt.value
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if called != "setup":
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        requires = _literal(keywords["install_requires"], names) if "install_requires" in keywords else None
        extras = _literal(keywords["extras_require"], names) if "extras_require" in keywords else None
        python = _literal(keywords["python_requires"], names) if "python_requires" in keywords else None
        name = _literal(keywords["name"], names) if "name" in keywords else None
        return SetupPy(
            install_requires=_strings(requires),
            extras_require={k: _strings(v) for k, v in extras.items() if isinstance(k, str)}
            if isinstance(extras, dict) else {},
            python_requires=python.strip() or None if isinstance(python, str) else None,
            name=name.strip() or None if isinstance(name, str) else None,
        )
    return SetupPy()
