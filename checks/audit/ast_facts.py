"""Facts about a code base's architecture, read from the AST of every Python file (never executed, no regex).

What is collected, each with its ``file:line``:

- definitions: every class and function name (what a report's "component" claims are checked against);
- typed state: classes deriving from pydantic ``BaseModel``, ``TypedDict`` or decorated ``@dataclass``;
- reducers: ``Annotated[..., operator.add]`` (or any ``Annotated`` whose metadata is a callable name) fields;
- graph wiring: ``StateGraph(...)`` instantiations and ``add_node`` / ``add_edge`` /
  ``add_conditional_edges`` calls, from which fan-out (one source, several targets) and fan-in (a list of
  sources, or several sources into one target) are derived;
- structured output: calls of ``with_structured_output``, ``bind_tools`` and ``tool`` decorators;
- judge personas and a synthesis engine: class or function names naming a prosecutor, defense, tech lead or a
  chief justice, and whether the chief justice's module defines ``rule_*`` functions.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from checks import pyast
from checks.models import Location

STATE_BASES = {"BaseModel": "pydantic", "TypedDict": "TypedDict"}
GRAPH_CLASSES = {"StateGraph", "Graph", "MessageGraph"}
STRUCTURED_CALLS = {"with_structured_output", "bind_tools"}
TOOL_DECORATORS = {"tool", "StructuredTool"}
PERSONAS = {"prosecutor": "prosecutor", "defense": "defense", "defence": "defense", "techlead": "tech_lead",
            "tech_lead": "tech_lead"}
CHIEF_NAMES = ("chiefjustice", "chief_justice")


@dataclass(frozen=True)
class Fact:
    """One architectural fact: what it is, its name and where it was found."""

    kind: str
    name: str
    location: Location
    detail: str = ""


@dataclass
class ArchitectureFacts:
    definitions: dict[str, list[Location]] = field(default_factory=dict)
    typed_state: list[Fact] = field(default_factory=list)
    untyped_state: list[Fact] = field(default_factory=list)
    reducers: list[Fact] = field(default_factory=list)
    graphs: list[Fact] = field(default_factory=list)
    nodes: list[Fact] = field(default_factory=list)
    edges: list[tuple[tuple[str, ...], str, Location]] = field(default_factory=list)
    conditional_edges: list[Fact] = field(default_factory=list)
    structured_output: list[Fact] = field(default_factory=list)
    personas: dict[str, list[Location]] = field(default_factory=dict)
    chief_justice: list[Fact] = field(default_factory=list)
    used_names: dict[str, Location] = field(default_factory=dict)
    python_files: int = 0
    unparsable: list[Location] = field(default_factory=list)

    def fan_out(self) -> dict[str, list[str]]:
        """Sources with two or more outgoing plain edges: the places work runs in parallel."""
        targets: dict[str, set[str]] = {}
        for sources, target, _loc in self.edges:
            for source in sources:
                targets.setdefault(source, set()).add(target)
        return {s: sorted(t) for s, t in sorted(targets.items()) if len(t) > 1}

    def fan_in(self) -> dict[str, list[str]]:
        """Targets with two or more incoming sources: where parallel branches join."""
        sources: dict[str, set[str]] = {}
        for srcs, target, _loc in self.edges:
            sources.setdefault(target, set()).update(srcs)
        return {t: sorted(s) for t, s in sorted(sources.items()) if len(s) > 1}

    def defines(self, name: str) -> list[Location]:
        return self.definitions.get(name, [])

    def uses(self, name: str) -> Location | None:
        return self.used_names.get(name)


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    if isinstance(node, ast.Call):
        return _name(node.func)
    return None


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):  # START / END constants or node-name variables
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _persona(name: str) -> str | None:
    squashed = name.lower().replace("-", "_")
    for key, persona in PERSONAS.items():
        if key in squashed or key in squashed.replace("_", ""):
            return persona
    return None


def _is_chief(name: str) -> bool:
    squashed = name.lower()
    return any(c in squashed or c in squashed.replace("_", "") for c in CHIEF_NAMES)


def _collect_file(facts: ArchitectureFacts, path: str, tree: ast.Module) -> None:
    module_rules = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("rule_"))
    for node in ast.walk(tree):
        where = Location(path=path, line=getattr(node, "lineno", None))
        used = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if used is not None and used not in facts.used_names:
            facts.used_names[used] = where
        if isinstance(node, ast.alias):
            for part in (node.asname or node.name).split("."):
                facts.used_names.setdefault(part, Location(path=path, line=node.lineno))
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            facts.definitions.setdefault(node.name, []).append(where)
            persona = _persona(node.name)
            if persona:
                facts.personas.setdefault(persona, []).append(where)
            if _is_chief(node.name) or (_is_chief(path) and node.name.startswith("rule_")):
                detail = ", ".join(module_rules) if module_rules else ""
                facts.chief_justice.append(Fact("synthesis", node.name, where, detail))
        if isinstance(node, ast.ClassDef):
            bases = [_name(b) for b in node.bases]
            kinds = [STATE_BASES[b] for b in bases if b in STATE_BASES]
            decorators = [_name(d) for d in node.decorator_list]
            if "dataclass" in decorators:
                kinds.append("dataclass")
            if kinds:
                facts.typed_state.append(Fact("typed-state", node.name, where, kinds[0]))
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    ann = stmt.annotation
                    if (isinstance(ann, ast.Subscript) and _name(ann.value) == "Annotated"
                            and isinstance(ann.slice, ast.Tuple) and len(ann.slice.elts) > 1):
                        reducer = ast.unparse(ann.slice.elts[1])
                        if reducer:
                            facts.reducers.append(Fact("reducer", f"{node.name}.{stmt.target.id}",
                                                       Location(path=path, line=stmt.lineno), reducer))
        elif isinstance(node, ast.Call):
            callee = _name(node.func)
            if callee in GRAPH_CLASSES:
                arg = node.args[0] if node.args else None
                state = _name(arg) if arg is not None else None
                facts.graphs.append(Fact("graph", callee, where, state or ""))
                if state in (None, "dict", "Dict"):
                    facts.untyped_state.append(Fact("untyped-state", callee, where, state or "no state schema"))
            elif callee == "add_node" and node.args:
                name = _literal(node.args[0])
                if name:
                    facts.nodes.append(Fact("node", name, where))
            elif callee == "add_edge" and len(node.args) >= 2:
                first, second = node.args[0], node.args[1]
                sources: tuple[str, ...]
                if isinstance(first, ast.List | ast.Tuple):
                    sources = tuple(s for s in (_literal(e) for e in first.elts) if s)
                else:
                    one = _literal(first)
                    sources = (one,) if one else ()
                target = _literal(second)
                if sources and target:
                    facts.edges.append((sources, target, where))
            elif callee == "add_conditional_edges" and node.args:
                facts.conditional_edges.append(Fact("conditional-edge", _literal(node.args[0]) or "?", where))
            elif callee in STRUCTURED_CALLS:
                facts.structured_output.append(Fact("structured-output", callee, where))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                if _name(decorator) in TOOL_DECORATORS:
                    facts.structured_output.append(Fact("tool-schema", node.name, where))


def collect(sources: dict[str, str]) -> ArchitectureFacts:
    """Architecture facts of every ``.py`` file in ``sources`` (path → text); a file that does not parse is
    recorded, never raised."""
    facts = ArchitectureFacts()
    for path in sorted(sources):
        if not path.endswith(".py"):
            continue
        facts.python_files += 1
        try:
            tree = pyast.parse(sources[path], filename=path)
        except (SyntaxError, ValueError) as exc:
            facts.unparsable.append(Location(path=path, line=getattr(exc, "lineno", None)))
            continue
        _collect_file(facts, path, tree)
    for locations in facts.definitions.values():
        locations.sort(key=lambda loc: (loc.path, loc.line or 0))
    return facts
