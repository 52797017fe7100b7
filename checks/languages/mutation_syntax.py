"""Mutants of the lines a change adds to JavaScript, TypeScript and Go product code, read from the syntax tree
(tree-sitter), as :mod:`checks.mutation` builds Python's from its AST.

A site is a node that starts on an added line:

- comparison operators (``<`` ↔ ``<=``, ``>`` ↔ ``>=``, ``===`` ↔ ``!==``, ``==`` ↔ ``!=``);
- arithmetic operators (``+`` ↔ ``-``, ``*`` ↔ ``/``, ``%`` → ``*``) and logical ones (``&&`` ↔ ``||``);
- compound assignments and increments (``+=`` ↔ ``-=``, ``*=`` ↔ ``/=``, ``++`` ↔ ``--``);
- an ``if``'s condition negated;
- decimal integer constants (``n`` → ``n + 1``) and ``true`` ↔ ``false`` — never in a TypeScript type, which no
  run sees;
- a returned value (JavaScript / TypeScript: ``return x`` → ``return undefined``; Go's return values are typed, so
  none) and a call statement deleted.

Each mutant is the whole file with one node's bytes replaced. A Go mutant that does not compile (``+`` on strings
swapped for ``-``, a deleted call leaving a variable unused) is the run's to find: the sandbox counts it as not run,
never as killed. Pure; without tree-sitter's grammars no mutant is made.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from checks.languages import go_syntax, javascript_syntax
from checks.languages.tree import walk

SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "===": "!==", "!==": "===", "==": "!=", "!=": "==",
         "+": "-", "-": "+", "*": "/", "/": "*", "%": "*", "&&": "||", "||": "&&"}
# compound assignments and increments (``total += value``, ``i++``)
UPDATES = {"+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "++": "--", "--": "++"}
INTEGER = re.compile(rb"^[0-9]+$")
# a node under one of these is a type, not a value (TypeScript's literal types, Go's array lengths)
TYPE_PARENTS = ("type_annotation", "literal_type", "predefined_type", "array_type", "type_arguments",
                "type_alias_declaration", "interface_declaration", "generic_type")
DIRECTIVE = re.compile(rb"^['\"]use \w+['\"];?$")

Site = tuple[int, int, bytes, str]  # start byte, end byte, replacement, description


def _in_type(node: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in TYPE_PARENTS:
            return True
        parent = parent.parent
    return False


def _sites(node: Any, go: bool) -> Iterator[Site]:
    kind = node.type
    if kind == "binary_expression":
        operator = node.child_by_field_name("operator")
        if operator is not None and operator.type in SWAPS:
            new = SWAPS[operator.type]
            yield operator.start_byte, operator.end_byte, new.encode(), f"changing `{operator.type}` to `{new}`"
    elif kind in ("augmented_assignment_expression", "assignment_statement", "update_expression", "inc_statement",
                  "dec_statement"):
        operator = node.child_by_field_name("operator") or next(
            (c for c in node.children if c.type in ("++", "--")), None)
        if operator is not None and operator.type in UPDATES:
            new = UPDATES[operator.type]
            yield operator.start_byte, operator.end_byte, new.encode(), f"changing `{operator.type}` to `{new}`"
    elif kind == "if_statement":
        condition = node.child_by_field_name("condition")
        if condition is not None:
            inner = condition
            if condition.type == "parenthesized_expression" and condition.named_child_count == 1:
                inner = condition.named_children[0]
            text = bytes(inner.text or b"")
            yield inner.start_byte, inner.end_byte, b"!(" + text + b")", "negating the condition"
    elif kind in ("number", "int_literal") and INTEGER.match(bytes(node.text or b"")) and not _in_type(node):
        old = int(bytes(node.text or b"0"))
        yield node.start_byte, node.end_byte, str(old + 1).encode(), f"changing the constant `{old}` to `{old + 1}`"
    elif kind in ("true", "false") and not _in_type(node):
        new = "false" if kind == "true" else "true"
        yield node.start_byte, node.end_byte, new.encode(), f"changing `{kind}` to `{new}`"
    elif kind == "return_statement" and not go and node.named_child_count:
        value = node.named_children[0]
        if bytes(value.text or b"") != b"undefined":
            yield value.start_byte, value.end_byte, b"undefined", "returning `undefined` instead"
    elif kind == "expression_statement":
        expression = node.named_children[0] if node.named_child_count else None
        call = expression is not None and expression.type in ("call_expression", "await_expression")
        if call and not DIRECTIVE.match(bytes(node.text or b"")):
            yield node.start_byte, node.end_byte, b";" if not go else b"", "deleting the statement"


def _parser(path: str) -> tuple[Any, bool] | None:
    if path.endswith(".go"):
        return go_syntax._parser(), True
    return javascript_syntax._parser(javascript_syntax.dialect(path)), False


def line_mutants(path: str, content: str, added_lines: set[int]) -> dict[int, list[tuple[str, str]]]:
    """``{line: [(description, the whole mutated file), …]}`` for the sites on ``added_lines`` of ``content``."""
    found = _parser(path)
    if not added_lines or found is None or found[0] is None:
        return {}
    parser, go = found
    source = content.encode("utf-8")
    tree = parser.parse(source)
    by_line: dict[int, list[tuple[str, str]]] = {}
    for node in walk(tree.root_node):
        if node.start_point[0] + 1 > max(added_lines) or node.end_point[0] + 1 < min(added_lines):
            continue
        for start, end, replacement, description in _sites(node, go):
            at = source[:start].count(b"\n") + 1  # an operator's own line
            if at not in added_lines:
                continue
            mutated = (source[:start] + replacement + source[end:]).decode("utf-8", "replace")
            by_line.setdefault(at, []).append((description, mutated))
    return by_line
