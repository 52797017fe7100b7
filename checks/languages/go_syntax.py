"""Go's syntax tree (tree-sitter): the sinks a Go change must not open, as architecture violations.

Each rule reads the tree, never the text: an import is resolved by its alias (``import sh "os/exec"`` makes
``sh.Command`` the same call), and only what a literal says counts as a literal.

==========================  ============================================================  ========  =======
rule                        what                                                          severity  CWE
==========================  ============================================================  ========  =======
``go-exec-shell``           ``exec.Command``/``CommandContext`` starting a shell with     high      CWE-78
                            ``-c`` (medium when every argument is a string literal)
``go-text-template-html``   ``text/template`` in a file that serves HTTP (``net/http``):  high      CWE-79
                            it escapes nothing; ``html/template`` does
``go-sql-string``           a query built with ``+`` or ``fmt.Sprintf`` passed to         high      CWE-89
                            ``Query``/``QueryRow``/``Exec``/``Prepare`` (and ``…Context``)
``go-unsafe``               an ``unsafe`` import                                          medium    CWE-242
==========================  ============================================================  ========  =======

Pure; tree-sitter and its Go grammar are the ``tree-sitter`` and ``tree-sitter-go`` wheels. Without them
:func:`available` is False and no Go file counts as analysed.
"""

from __future__ import annotations

from typing import Any

from checks.constraints import Violation
from checks.languages.tree import grammar
from checks.languages.tree import text as _text
from checks.languages.tree import walk as _walk

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/bash",
                    "/usr/bin/env"})
SQL_METHODS = {"Query": 0, "QueryRow": 0, "Exec": 0, "Prepare": 0, "QueryContext": 1, "QueryRowContext": 1,
               "ExecContext": 1, "PrepareContext": 1}


def _parser() -> Any:
    return grammar("tree_sitter_go")


def available() -> bool:
    """Whether Go files can be parsed here (the tree-sitter wheels are installed)."""
    return _parser() is not None


def _string(node: Any) -> str | None:
    """The value of a string literal node, else None."""
    if node.type == "interpreted_string_literal":
        return "".join(_text(c) for c in node.children if c.type == "interpreted_string_literal_content")
    if node.type == "raw_string_literal":
        return _text(node)[1:-1]
    return None


CONSTANTS = frozenset({"int_literal", "float_literal", "imaginary_literal", "rune_literal", "true", "false", "nil"})


def _constant(node: Any) -> bool:
    return _string(node) is not None or node.type in CONSTANTS


def _imports(root: Any) -> dict[str, tuple[str, int]]:
    """``{name in the file: (import path, line)}`` (an unnamed import is known by its path's last element)."""
    found: dict[str, tuple[str, int]] = {}
    for node in _walk(root):
        if node.type != "import_spec":
            continue
        path_node = node.child_by_field_name("path")
        path = _string(path_node) if path_node is not None else None
        if path is None:
            continue
        alias = node.child_by_field_name("name")
        name = _text(alias) if alias is not None else path.rsplit("/", 1)[-1]
        found[name] = (path, node.start_point[0] + 1)
    return found


def _arguments(call: Any) -> list[Any]:
    args = call.child_by_field_name("arguments")
    return [c for c in args.children if c.is_named and c.type != "comment"] if args is not None else []


def _built_string(node: Any, imports: dict[str, tuple[str, int]]) -> bool:
    """A string made at run time from parts: ``"…" + x`` or ``fmt.Sprintf(…)`` with a non-literal argument."""
    if node.type == "parenthesized_expression" and node.named_children:
        return _built_string(node.named_children[0], imports)
    if node.type == "binary_expression":
        operator = node.child_by_field_name("operator")
        if operator is not None and _text(operator) == "+":
            parts = [node.child_by_field_name("left"), node.child_by_field_name("right")]
            return any(p is not None and not _constant(p) and p.type != "binary_expression" for p in parts) or any(
                p is not None and _built_string(p, imports) for p in parts)
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        if function is not None and function.type == "selector_expression":
            operand, field = function.child_by_field_name("operand"), function.child_by_field_name("field")
            package = imports.get(_text(operand)) if operand is not None else None
            if package and package[0] == "fmt" and field is not None and _text(field) in ("Sprintf", "Sprint"):
                return any(not _constant(a) for a in _arguments(node)[1:])
    return False


def check_go(source: str) -> tuple[Violation, ...] | None:
    """The file's violations, or None when Go cannot be parsed here."""
    parser = _parser()
    if parser is None:
        return None
    root = parser.parse(source.encode("utf-8", "surrogatepass")).root_node
    imports = _imports(root)
    paths = {path: line for path, line in imports.values()}
    found: list[Violation] = []
    if "unsafe" in paths:
        found.append(Violation("go-unsafe", "banned-import", "medium", "imports unsafe: memory safety is off for "
                               "what it touches", paths["unsafe"], "CWE-242", "unsafe"))
    if "text/template" in paths and "net/http" in paths:
        found.append(Violation("go-text-template-html", "banned-import", "high", "text/template in code that serves "
                               "HTTP escapes nothing (cross-site scripting); html/template escapes by context",
                               paths["text/template"], "CWE-79", "text/template"))
    for node in _walk(root):
        if node.type != "call_expression":
            continue
        function = node.child_by_field_name("function")
        if function is None or function.type != "selector_expression":
            continue
        operand, field = function.child_by_field_name("operand"), function.child_by_field_name("field")
        if operand is None or field is None:
            continue
        name, line = _text(field), node.start_point[0] + 1
        package = imports.get(_text(operand))
        args = _arguments(node)
        if package and package[0] == "os/exec" and name in ("Command", "CommandContext"):
            rest = args[1:] if name == "CommandContext" else args
            program = _string(rest[0]) if rest else None
            values = [_string(a) for a in rest[1:]]
            if program in SHELLS and "-c" in values:
                literal = all(v is not None for v in values)
                found.append(Violation(
                    "go-exec-shell", "banned-call", "medium" if literal else "high",
                    f"exec.{name} runs {program} -c" + ("" if literal else " with a command built at run time: "
                                                        "shell injection"), line, "CWE-78", f"exec.{name}"))
        elif name in SQL_METHODS and len(args) > SQL_METHODS[name] and _built_string(args[SQL_METHODS[name]], imports):
            found.append(Violation("go-sql-string", "banned-call", "high", f"{name} gets SQL built from strings: "
                                   "SQL injection; pass the values as query arguments", line, "CWE-89", name))
    return tuple(sorted(found, key=lambda v: (v.line or 0, v.rule)))
