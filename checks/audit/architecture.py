"""ArchitectureInspector — what the code's structure really is, from the AST of the whole repository.

What: turns :mod:`checks.audit.ast_facts` into evidence (typed state, reducers, graph wiring, fan-out/fan-in,
structured output, judge personas, a rule-based synthesis engine) and runs every Python file through the
rubric's constraint set (:func:`checks.constraints.check_source`) for unsafe calls such as ``os.system``.
Why: the criteria of an architecture audit are facts about the code; a report may only describe them.
Example: ``graph-fan-out: 'start' fans out to prosecutor, defense, tech_lead (graph/build.py:12)``.
"""

from __future__ import annotations

from checks.audit.ast_facts import ArchitectureFacts, Fact
from checks.constraints import check_source
from checks.models import Evidence, Location, Severity
from rubric import Rubric

ID = "ast"
MAX_LISTED = 8


def _evidence(key: str, kind: str, summary: str, severity: Severity = "info", location: Location | None = None,
              cwe: str | None = None, **facts: object) -> Evidence:
    return Evidence(id=f"{ID}.{key}", detective=ID, kind=kind, summary=summary, severity=severity,
                    location=location, cwe=cwe, facts=dict(facts))


def _listed(facts: list[Fact]) -> str:
    shown = ", ".join(f"{f.name} ({f.location})" for f in facts[:MAX_LISTED])
    return shown + (f" and {len(facts) - MAX_LISTED} more" if len(facts) > MAX_LISTED else "")


def architecture_evidence(facts: ArchitectureFacts) -> list[Evidence]:
    if facts.python_files == 0:
        return [_evidence("no-python", "graph-missing", "The repository has no Python source to inspect", "medium")]
    items: list[Evidence] = []
    for f in facts.typed_state:
        items.append(_evidence(f"state:{f.location}", "typed-state", f"{f.name} is a typed model ({f.detail})",
                               location=f.location, model=f.name, base=f.detail))
    if not facts.typed_state:
        items.append(_evidence("state-missing", "typed-state-missing",
                               "No pydantic BaseModel, TypedDict or dataclass state model anywhere", "medium"))
    for f in facts.untyped_state:
        items.append(_evidence(f"untyped:{f.location}", "untyped-state",
                               f"{f.name} is built on an untyped state ({f.detail})", "medium", f.location))
    for f in facts.reducers:
        items.append(_evidence(f"reducer:{f.location}", "state-reducer", f"{f.name} merges parallel writes with "
                               f"{f.detail}", location=f.location, field=f.name, reducer=f.detail))

    if facts.graphs:
        first = facts.graphs[0]
        items.append(_evidence("graph", "graph-wiring",
                               f"{len(facts.graphs)} graph(s), {len(facts.nodes)} node(s), {len(facts.edges)} edge(s), "
                               f"{len(facts.conditional_edges)} conditional edge(s): " + _listed(facts.graphs),
                               location=first.location, graphs=len(facts.graphs),
                               nodes=sorted({n.name for n in facts.nodes}), edges=len(facts.edges)))
        fan_out, fan_in = facts.fan_out(), facts.fan_in()
        for source, targets in fan_out.items():
            where = next(loc for srcs, _t, loc in facts.edges if source in srcs)
            items.append(_evidence(f"fan-out:{source}", "graph-fan-out",
                                   f"{source!r} fans out to {', '.join(targets)}", location=where,
                                   source=source, targets=targets))
        for target, sources in fan_in.items():
            where = next(loc for _s, t, loc in facts.edges if t == target)
            items.append(_evidence(f"fan-in:{target}", "graph-fan-out",
                                   f"{', '.join(sources)} join in {target!r}", location=where,
                                   target=target, sources=sources))
        if not fan_out and not fan_in:
            items.append(_evidence("graph-linear", "graph-linear",
                                   "The graph is linear: no node fans out to parallel branches", "medium",
                                   first.location))
    else:
        items.append(_evidence("graph-missing", "graph-missing",
                               "No StateGraph (or other graph) is built anywhere in the code", "medium"))

    if facts.structured_output:
        items.append(_evidence("structured", "structured-output",
                               f"{len(facts.structured_output)} schema-bound model call(s) or tool(s): "
                               + _listed(facts.structured_output), location=facts.structured_output[0].location,
                               calls=[f.name for f in facts.structured_output]))
    else:
        items.append(_evidence("structured-missing", "structured-output-missing",
                               "No with_structured_output, bind_tools or @tool schema anywhere", "medium"))

    if len(facts.personas) >= 2:
        names = sorted(facts.personas)
        first_loc = facts.personas[names[0]][0]
        items.append(_evidence("personas", "judge-personas",
                               f"{len(names)} distinct judge persona(s): " + ", ".join(
                                   f"{n} ({facts.personas[n][0]})" for n in names),
                               location=first_loc, personas=names))
    else:
        items.append(_evidence("personas-missing", "judge-personas-missing",
                               "Fewer than two distinct judge personas are defined"
                               + (f" (only {', '.join(sorted(facts.personas))})" if facts.personas else ""),
                               "medium", personas=sorted(facts.personas)))

    if facts.chief_justice:
        rules = sorted({r for f in facts.chief_justice for r in f.detail.split(", ") if r})
        first_chief = facts.chief_justice[0]
        named = f" with named rules: {', '.join(rules)}" if rules else " (no named rule_* functions)"
        items.append(_evidence("synthesis", "synthesis-engine",
                               f"Chief Justice {first_chief.name} at {first_chief.location}{named}",
                               "info" if rules else "low", first_chief.location, rules=rules))
    else:
        items.append(_evidence("synthesis-missing", "synthesis-engine-missing",
                               "No Chief Justice or synthesis engine is defined", "medium"))
    return items


def safety_evidence(sources: dict[str, str], rubric: Rubric) -> list[Evidence]:
    """Every banned call or import of the rubric's constraint set, anywhere in the repository."""
    items: list[Evidence] = []
    checked = 0
    for path in sorted(sources):
        if not path.endswith(".py"):
            continue
        checked += 1
        report = check_source(path, sources[path], rubric)
        if report.syntax_error is not None:
            line, message = report.syntax_error
            items.append(_evidence(f"syntax:{path}", "syntax-error", f"{path} does not parse: {message}", "low",
                                   Location(path=path, line=line), message=message))
            continue
        for v in report.violations:
            items.append(_evidence(
                f"{v.category}:{v.rule}:{path}:{v.line or 0}", "constraint-violation",
                f"{v.symbol or v.rule}: {v.message}", v.severity,  # type: ignore[arg-type]
                Location(path=path, line=v.line), v.cwe,
                rule=v.rule, category=v.category, symbol=v.symbol, security=v.security))
    if checked and not any(e.kind == "constraint-violation" for e in items):
        items.append(_evidence("tools-clean", "tools-clean",
                               f"{checked} Python file(s) checked: no banned call or import", files=checked))
    return items
