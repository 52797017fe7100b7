"""Python that this interpreter does not read: Python 2 source, or syntax newer than the running Python.

A file ``ast`` rejects is not always broken: a project may keep a Python 2 tree beside its Python 3 one
(PyYAML's ``lib/``), or use syntax of a newer Python than LogoMesh runs on (``type X = ...``, generic
``def f[T]``). Such a file is *unread* — its architecture rules and sinks were not checked, and the court says so
(never a pass on unread code) — but it is not "code that does not parse", which vetoes a change.

The tolerant tree-sitter grammar for Python (``tree-sitter-python``) reads Python 2 statements and every newer
syntax; a file it reads with no error node is a dialect, a file it cannot read is a syntax error. Pure; without
the grammar (:func:`available` False) every file ``ast`` rejects stays a syntax error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from checks.languages.tree import grammar, walk
from checks.models import Evidence

PYTHON2 = "Python 2"
# what CPython 3 says about Python 2 source (print and exec statements, ``except E, e``, ``0777``)
PYTHON2_SIGNS = ("Missing parentheses in call to", "multiple exception types must be parenthesized",
                 "leading zeros in decimal integer literals are not permitted")
PYTHON2_NODES = frozenset({"print_statement", "exec_statement"})
NEWER_NODES = frozenset({"type_alias_statement", "type_parameter"})


def _parser() -> Any:
    return grammar("tree_sitter_python")


def available() -> bool:
    """Whether Python dialects can be told from syntax errors here (the tree-sitter-python wheel is installed)."""
    return _parser() is not None


def here() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def dialect(source: str, message: str) -> str | None:
    """For a file ``ast`` rejected with ``message``: which Python it is written in (``"Python 2"``, a newer
    Python, or one this interpreter does not read) when the tolerant grammar reads it whole, else None (a syntax
    error)."""
    parser = _parser()
    if parser is None:
        return None
    try:
        tree = parser.parse(source.encode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeError):
        return None
    if tree.root_node.has_error:
        return None
    kinds = {node.type for node in walk(tree.root_node)}
    if kinds & PYTHON2_NODES or any(sign in message for sign in PYTHON2_SIGNS):
        return PYTHON2
    if kinds & NEWER_NODES:
        return f"Python newer than {here()}"
    return f"Python 2 or a Python newer than {here()}"


def unread_dialects(evidence: Iterable[Evidence]) -> list[Evidence]:
    """The evidence naming changed files left unread because of their dialect."""
    return [e for e in evidence if e.kind == "code-dialect"]
