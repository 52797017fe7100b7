"""The Red Agent's hypotheses on JavaScript and TypeScript: the sinks of :mod:`checks.languages.javascript_syntax`
on the lines a change adds, each with the exported function a probe can call and the parameters that reach it.

A sink is probed through the module's exports, as its users reach it: ``export function f``, ``export const f =
(…) =>``, ``export { f as g }``, ``export default function``, ``module.exports = { f, g: h }``, ``module.exports =
function``, ``module.exports.f = …`` and ``exports.f = …``; a method of a class exported in any of these ways is
``Class.method``, called on an instance built with no arguments (a static method on the class). The function that
holds the sink (or an exported function around the callback that does) is the target; a parameter reaches the sink
when its name, or a local variable built from it, occurs in the sink's arguments.

A handler of an Express route in a module that loads ``express`` (``app.get('/run', (req, res) => …)``,
``router.post(path, check, handler)``, ``app.route('/run').get(handler)``) is a target too, named ``GET /run``: the
probe gives the module an Express that records its routes and runs the route's handlers in order, each one's
``next()`` leading to the next (:data:`Target.route`). A sink outside any exported function or route handler has no
target: it stays a static, unconfirmed finding.

Pure; without the tree-sitter wheels no hypothesis is made (the syntax rules say the file is not analysed).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from checks.constraints import Violation
from checks.languages import javascript_syntax as syntax
from checks.languages.tree import text, walk
from checks.red.flow import call_on_line, reaching
from checks.red.hypotheses import Hypothesis, Target

# the sink rules a probe can confirm, and the attack class each one is
KINDS = {"js-child-process-shell": "command-injection", "js-eval": "code-injection", "js-vm": "code-injection",
         "js-unsafe-deserialize": "deserialization", "js-sql-string": "sql-injection",
         "js-path-traversal": "path-traversal"}
FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                       "generator_function_declaration", "generator_function"})
CLASSES = frozenset({"class_declaration", "class", "abstract_class_declaration"})
CALLS = ("call_expression", "new_expression")
ROUTE_METHODS = frozenset({"get", "post", "put", "delete", "patch", "all", "options", "head"})
EXPRESS = "express"
WHOLE_MODULE = "module.exports"  # the target is what ``module.exports = …`` assigns, not one of its properties


def _span(node: Any) -> tuple[int, int]:
    return node.start_byte, node.end_byte


def _is_module_exports(node: Any) -> bool:
    return node.type == "member_expression" and text(node).replace(" ", "") == "module.exports"


def _exported_member(node: Any) -> str | None:
    """``f`` of ``module.exports.f`` or ``exports.f``, else None."""
    if node.type != "member_expression":
        return None
    holder, prop = node.child_by_field_name("object"), node.child_by_field_name("property")
    if holder is None or prop is None:
        return None
    if text(holder) == "exports" or _is_module_exports(holder):
        return text(prop)
    return None


class _Exports:
    """Which function and class nodes of a module its exports reach, by the name a user calls them by."""

    def __init__(self, root: Any) -> None:
        self.local: dict[str, Any] = {}  # top-level name → its function or class node
        self.names: dict[tuple[int, int], str] = {}  # function or class node's span → exported name
        pending: list[tuple[str, Any]] = []  # (exported name, value node) resolved once every local is known
        for statement in root.named_children:
            node = statement.child_by_field_name("declaration") if statement.type == "export_statement" else statement
            self._declare(node)
            if statement.type == "export_statement":
                self._export_statement(statement, pending)
            elif statement.type == "expression_statement" and statement.named_children:
                self._assignment(statement.named_children[0], pending)
        for name, value in pending:
            function = self._function(value)
            if function is not None:
                self.names.setdefault(_span(function), name)

    def _declare(self, node: Any) -> None:
        if node is None:
            return
        if node.type in ("function_declaration", "generator_function_declaration", *CLASSES):
            name = node.child_by_field_name("name")
            if name is not None:
                self.local[text(name)] = node
        elif node.type in ("lexical_declaration", "variable_declaration"):
            for declarator in node.named_children:
                name, value = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
                if declarator.type == "variable_declarator" and name is not None and value is not None \
                        and syntax._unwrap(value).type in FUNCTIONS | CLASSES:
                    self.local[text(name)] = syntax._unwrap(value)

    def _function(self, value: Any) -> Any:
        value = syntax._unwrap(value)
        if value.type in FUNCTIONS | CLASSES:
            return value
        if value.type in ("identifier", "shorthand_property_identifier"):
            return self.local.get(text(value))
        return None

    def _export_statement(self, statement: Any, pending: list[tuple[str, Any]]) -> None:
        default = any(child.type == "default" for child in statement.children)
        declaration = statement.child_by_field_name("declaration")
        value = statement.child_by_field_name("value")
        if declaration is not None:
            if declaration.type in ("function_declaration", "generator_function_declaration", *CLASSES):
                name = declaration.child_by_field_name("name")
                pending.append(("default" if default or name is None else text(name), declaration))
            elif declaration.type in ("lexical_declaration", "variable_declaration"):
                for declarator in declaration.named_children:
                    name, init = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
                    if name is not None and init is not None:
                        pending.append((text(name), init))
        elif value is not None and default:
            pending.append(("default", value))
        for clause in statement.named_children:
            if clause.type != "export_clause":
                continue
            for specifier in clause.named_children:
                local, alias = specifier.child_by_field_name("name"), specifier.child_by_field_name("alias")
                if local is not None:
                    pending.append((text(alias or local), local))

    def _assignment(self, expression: Any, pending: list[tuple[str, Any]]) -> None:
        if expression.type != "assignment_expression":
            return
        left, right = expression.child_by_field_name("left"), expression.child_by_field_name("right")
        if left is None or right is None:
            return
        member = _exported_member(left)
        if member is not None:
            pending.append((member, right))
        elif _is_module_exports(left):
            right = syntax._unwrap(right)
            if right.type == "object":
                for entry in right.named_children:
                    if entry.type == "shorthand_property_identifier":
                        pending.append((text(entry), entry))
                    elif entry.type == "pair":
                        key, value = entry.child_by_field_name("key"), entry.child_by_field_name("value")
                        if key is not None and value is not None:
                            pending.append((text(key).strip("'\""), value))
                    elif entry.type == "method_definition":
                        name = entry.child_by_field_name("name")
                        if name is not None:
                            self.names.setdefault(_span(entry), text(name))
            else:
                pending.append((WHOLE_MODULE, right))

    def target_of(self, node: Any) -> tuple[str, bool] | None:
        """``(the name users call node by, whether it is a method)`` when ``node`` is an exported function, a method
        of an exported object literal, or a method of an exported class (``Class.method``), else None."""
        if node.type not in FUNCTIONS and node.type != "method_definition":
            return None
        name = self.names.get(_span(node))
        if name is not None:
            return name, False
        holder = node.parent.parent if node.type == "method_definition" and node.parent is not None else None
        owner = self.names.get(_span(holder)) if holder is not None and holder.type in CLASSES else None
        method = node.child_by_field_name("name")
        if owner is None or method is None or text(method) == "constructor":
            return None
        return f"{owner}.{text(method)}", True


def _route_call(call: Any) -> tuple[str, str, list[Any]] | None:
    """``(method, path, handlers)`` of a route registration ``X.get('/p', h…)`` or ``X.route('/p').get(h…)``."""
    if call.type != "call_expression":
        return None
    callee, values = call.child_by_field_name("function"), syntax._arguments(call)
    if callee is None or callee.type != "member_expression" or not values:
        return None
    method, holder = text(callee.child_by_field_name("property")), callee.child_by_field_name("object")
    if method not in ROUTE_METHODS:
        return None
    route = syntax._string(values[0])
    if route is not None:
        return method.upper(), route, values[1:]
    if holder is not None and holder.type == "call_expression":
        inner, at = holder.child_by_field_name("function"), syntax._arguments(holder)
        if inner is not None and inner.type == "member_expression" and at \
                and text(inner.child_by_field_name("property")) == "route":
            route = syntax._string(at[0])
            if route is not None:
                return method.upper(), route, values
    return None


class _Routes:
    """The Express route registrations of a module that loads ``express`` (``require`` or ``import``), in the order
    of the source."""

    def __init__(self, root: Any) -> None:
        self.calls: list[tuple[tuple[int, int], str, str, list[Any]]] = []
        loads = any((node.type == "call_expression" and syntax._module_of(node) == EXPRESS
                     and text(node.child_by_field_name("function")) == "require")
                    or (node.type == "import_statement" and node.child_by_field_name("source") is not None
                        and syntax._string(node.child_by_field_name("source")) == EXPRESS)
                    for node in walk(root))
        if not loads:
            return
        for node in walk(root):
            found = _route_call(node)
            if found is not None:
                self.calls.append((_span(node), *found))
        self.calls.sort()

    def route_of(self, function: Any) -> tuple[str, str, int, int] | None:
        """``(method, path, registration, handler)`` when ``function`` is a handler of a registration."""
        if function.type not in FUNCTIONS or function.parent is None or function.parent.parent is None:
            return None
        call = _span(function.parent.parent)
        seen: dict[tuple[str, str], int] = {}
        for span, method, route, handlers in self.calls:
            occurrence = seen.get((method, route), 0)
            seen[(method, route)] = occurrence + 1
            if span == call:
                spans = [_span(syntax._unwrap(h)) for h in handlers]
                return (method, route, occurrence, spans.index(_span(function))) if _span(function) in spans \
                    else None
        return None


def parameters(function: Any) -> tuple[str, ...]:
    """The function's parameter names in order; a destructured one is ``argN`` (its position)."""
    single = function.child_by_field_name("parameter")
    if single is not None:
        return (text(single),)
    formal = function.child_by_field_name("parameters")
    names: list[str] = []
    for index, param in enumerate(formal.named_children if formal is not None else ()):
        if param.type == "comment":
            continue
        node = param
        if node.type in ("required_parameter", "optional_parameter"):
            node = node.child_by_field_name("pattern") or node
        if node.type == "assignment_pattern":
            node = node.child_by_field_name("left") or node
        if node.type == "rest_pattern" and node.named_children:
            node = node.named_children[0]
        names.append(text(node) if node.type == "identifier" else f"arg{index}")
    return tuple(names)


def _identifiers(node: Any) -> set[str]:
    return {text(n) for n in walk(node) if n.type in ("identifier", "shorthand_property_identifier")}


def tainted(function: Any, sink: Any, params: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters whose value reaches ``sink``'s arguments: directly, or through a local variable assigned from
    them inside ``function`` (to a fixpoint)."""
    assignments: list[tuple[str, set[str]]] = []
    for node in walk(function):
        if node.type == "variable_declarator":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None:
                assignments += [(target, _identifiers(value)) for target in _identifiers(name)]
        elif node.type in ("assignment_expression", "augmented_assignment_expression"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None and left.type == "identifier":
                assignments.append((text(left), _identifiers(right) | ({text(left)} if node.type.startswith(
                    "augmented") else set())))
    arguments = sink.child_by_field_name("arguments")
    # a callback among the arguments receives the sink's results; the names it uses are not what the sink reads
    used = {name for argument in (arguments.named_children if arguments is not None else ())
            if syntax._unwrap(argument).type not in FUNCTIONS for name in _identifiers(argument)}
    return reaching(params, assignments, used)


def _sinks(root: Any, violations: tuple[Violation, ...]) -> list[tuple[Violation, Any]]:
    """Each violation with its call node; the deserialiser rule, reported at the package's import, becomes one
    violation per call of the package's reader (``unserialize(…)``, ``serialize.unserialize(…)``) on its own line."""
    found: list[tuple[Violation, Any]] = []
    for violation in violations:
        if violation.rule != "js-unsafe-deserialize":
            found.append((violation, call_on_line(root, violation.line, violation.symbol, CALLS)
                           if violation.line is not None else None))
            continue
        reader = syntax.DESERIALIZERS.get(violation.symbol or "")
        for node in walk(root):
            function = node.child_by_field_name("function") if node.type == "call_expression" else None
            if function is not None and reader and text(function).rsplit(".", 1)[-1] == reader:
                found.append((replace(violation, line=node.start_point[0] + 1), node))
    return found


def hypotheses(path: str, source: str, added: set[int] | None) -> list[Hypothesis]:
    """The probeable sinks on ``added`` lines (None: every line) of one JavaScript/TypeScript file."""
    violations = syntax.check_javascript(source, path)
    parser = syntax._parser(syntax.dialect(path))
    if not violations or parser is None:
        return []
    root = parser.parse(source.encode("utf-8", "surrogatepass")).root_node
    exports = _Exports(root)
    routes = _Routes(root)
    found: list[Hypothesis] = []
    for violation, sink in _sinks(root, violations):
        kind = KINDS.get(violation.rule)
        if kind is None or violation.severity not in ("high", "critical") or violation.line is None \
                or (added is not None and violation.line not in added):
            continue
        target: Target | None = None
        reach: tuple[str, ...] = ()
        ancestor = sink.parent if sink is not None else None
        while ancestor is not None:
            found_target = exports.target_of(ancestor)
            route = routes.route_of(ancestor) if found_target is None else None
            if found_target is not None or route is not None:
                params = parameters(ancestor)
                if found_target is not None:
                    target = Target(path=path, qualname=found_target[0], params=params, is_method=found_target[1])
                elif route is not None:
                    target = Target(path=path, qualname=f"{route[0]} {route[1]}", params=params, route=route)
                reach = tainted(ancestor, sink, params) if sink is not None else ()
                break
            ancestor = ancestor.parent
        found.append(Hypothesis(kind=kind, path=path, line=violation.line, sink=violation.rule,
                                detail=violation.message, target=target, tainted=reach, origins=("syntax",)))
    return found
