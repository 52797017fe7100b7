"""The Red Agent's hypotheses on Go: the shell and SQL sinks of :mod:`checks.languages.go_syntax` on the lines a change
adds, each with the package-level function that holds it and the parameters that reach it.

A Go probe is a test file of the sink's own package, so any package-level function is a target (exported or not),
named ``package.Function``; its arguments are built by type when the probe runs (``reflect``), so only the names and
their order are read here. A method of a named type is a target too, ``package.Type.Method``, called on a new zero
value of its type (``new(Type).Method``: value and pointer receivers alike). Generic functions, methods of generic
types and sinks outside a function have no target: they stay static, unconfirmed findings.

Pure; without the tree-sitter Go wheel no hypothesis is made.
"""

from __future__ import annotations

import re
from typing import Any

from checks.languages import go_syntax as syntax
from checks.languages.tree import text, walk
from checks.red.flow import call_on_line, reaching
from checks.red.hypotheses import Hypothesis, Target

KINDS = {"go-exec-shell": "command-injection", "go-sql-string": "sql-injection"}
KEY = re.compile(r"[A-Za-z_][\w.-]{0,63}")
MAX_KEYS = 30


def package_name(root: Any) -> str | None:
    """The file's ``package`` name."""
    for node in root.named_children:
        if node.type == "package_clause":
            return next((text(c) for c in node.named_children if c.type == "package_identifier"), None)
    return None


def parameters(function: Any) -> tuple[str, ...]:
    """The function's parameter names in order, one per value (``a, b string`` is two); an unnamed or blank one is
    ``argN`` (its position)."""
    names: list[str] = []
    formal = function.child_by_field_name("parameters")
    for declaration in formal.named_children if formal is not None else ():
        if declaration.type not in ("parameter_declaration", "variadic_parameter_declaration"):
            continue
        idents = [text(c) for c in declaration.children_by_field_name("name")]
        for ident in idents or ["_"]:
            names.append(ident if ident != "_" else f"arg{len(names)}")
    return tuple(names)


def _identifiers(node: Any) -> set[str]:
    return {text(n) for n in walk(node) if n.type == "identifier"}


def tainted(function: Any, sink: Any, params: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters whose value reaches ``sink``'s arguments, directly or through locals assigned from them."""
    assignments: list[tuple[str, set[str]]] = []
    for node in walk(function):
        if node.type in ("short_var_declaration", "assignment_statement"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None:
                sources = _identifiers(right) | (_identifiers(left) if node.type == "assignment_statement"
                                                 and text(node.child_by_field_name("operator") or left) != "="
                                                 else set())
                assignments += [(name, sources) for name in _identifiers(left)]
        elif node.type == "var_spec":
            value = node.child_by_field_name("value")
            if value is not None:
                assignments += [(text(name), _identifiers(value)) for name in node.children_by_field_name("name")]
    arguments = sink.child_by_field_name("arguments")
    used = {name for argument in (arguments.named_children if arguments is not None else ())
            if argument.type != "func_literal" for name in _identifiers(argument)}
    return reaching(params, assignments, used)


def keys(function: Any) -> tuple[str, ...]:
    """The short word-like string literals ``function`` uses, in order, at most :data:`MAX_KEYS`: the names a
    handler reads a request's values by (``r.URL.Query().Get("dir")``, ``r.FormValue("name")``), which the probe's
    request carries the payload under."""
    found: dict[str, None] = {}
    for node in walk(function):
        value = syntax._string(node) if node.type in ("interpreted_string_literal", "raw_string_literal") else None
        if value is not None and KEY.fullmatch(value):
            found.setdefault(value)
    return tuple(found)[:MAX_KEYS]


def receiver_type(method: Any) -> str | None:
    """The named type of a method's receiver (``Shell`` of ``(s *Shell)``); None for a generic type's."""
    receiver = method.child_by_field_name("receiver")
    declaration = next((c for c in receiver.named_children if c.type == "parameter_declaration"), None) \
        if receiver is not None else None
    kind = declaration.child_by_field_name("type") if declaration is not None else None
    if kind is not None and kind.type == "pointer_type" and kind.named_children:
        kind = kind.named_children[0]
    return text(kind) if kind is not None and kind.type == "type_identifier" else None


def _qualname(function: Any) -> str | None:
    """``Function``, or ``Type.Method``, of a declaration a probe can call; None for a generic one."""
    name = function.child_by_field_name("name")
    if name is None or function.child_by_field_name("type_parameters") is not None:
        return None
    if function.type == "function_declaration":
        return text(name)
    owner = receiver_type(function)
    return f"{owner}.{text(name)}" if owner is not None else None


def hypotheses(path: str, source: str, added: set[int] | None) -> list[Hypothesis]:
    """The probeable sinks on ``added`` lines (None: every line) of one Go file."""
    violations = syntax.check_go(source)
    parser = syntax._parser()
    if not violations or parser is None:
        return []
    root = parser.parse(source.encode("utf-8", "surrogatepass")).root_node
    package = package_name(root) or "main"
    found: list[Hypothesis] = []
    for violation in violations:
        kind = KINDS.get(violation.rule)
        if kind is None or violation.severity not in ("high", "critical") or violation.line is None \
                or (added is not None and violation.line not in added):
            continue
        sink = call_on_line(root, violation.line, violation.symbol)
        target: Target | None = None
        reach: tuple[str, ...] = ()
        function = sink.parent if sink is not None else None
        while function is not None and function.type not in ("function_declaration", "method_declaration"):
            function = function.parent
        qualname = _qualname(function) if function is not None else None
        if function is not None and qualname is not None:
            params = parameters(function)
            target = Target(path=path, qualname=f"{package}.{qualname}", params=params, keys=keys(function),
                            is_method=function.type == "method_declaration")
            reach = tainted(function, sink, params)
        found.append(Hypothesis(kind=kind, path=path, line=violation.line, sink=violation.rule,
                                detail=violation.message, target=target, tainted=reach, origins=("syntax",)))
    return found
