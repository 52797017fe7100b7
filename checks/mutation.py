"""Mutants of the product lines a change adds: does any test notice when the new code is subtly wrong?

``mutants_for(case, max_mutants)`` is pure and deterministic: the same change yields the same mutants in the
same order. For each changed Python file that is product code (not a test path), every AST node that starts on
a line the change adds is a candidate site:

- comparison operators (``<`` ↔ ``<=``, ``>`` ↔ ``>=``, ``==`` ↔ ``!=``, ``in`` ↔ ``not in``, ``is`` ↔ ``is not``);
- arithmetic operators (``+`` ↔ ``-``, ``*`` ↔ ``/``, ``//`` → ``/``, ``%`` → ``*``);
- boolean operators (``and`` ↔ ``or``) and conditions (``if c`` → ``if not c``);
- constants (``n`` → ``n + 1``, ``True`` ↔ ``False``);
- return values (``return x`` → ``return None``) and statement deletion (an expression statement → ``pass``).

Sites are taken round-robin over lines (one per line before a second on any line), then cut at the budget.
Each mutant carries the whole mutated file (``ast.unparse``); the sandbox runs it only against the tests that
covered its line at head. A test suite that kills none of them does not exercise the change.

JavaScript, TypeScript and Go product files get the same kinds of mutants from their syntax trees
(:mod:`checks.languages.mutation_syntax`), one language at a time (``mutants_for(case, n, language)``): their
sandbox runs each against the tests that passed at head.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Iterator

from checks import pyast
from checks.languages import GO, JAVASCRIPT, PYTHON, go, javascript, mutation_syntax
from checks.models import Case, ChangedFile, Mutant
from checks.testpaths import is_test_path


def _javascript_harness(path: str) -> bool:
    return javascript.is_test_path(path) or javascript.is_harness_path(path)


# language → (its product files, its test files and the runner's own configuration and setup files)
PLUG_INS = {JAVASCRIPT: (javascript.owns, _javascript_harness), GO: (go.owns, go.is_test_path)}

COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
    ast.Mod: ast.Mult,
}
SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
           ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
           ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.And: "and", ast.Or: "or"}

Edit = Callable[[ast.AST], str | None]  # mutates the node in place; returns a description, None = not applicable


def _site_edits(node: ast.AST) -> Iterator[Edit]:
    if isinstance(node, ast.Compare) and type(node.ops[0]) in COMPARE_SWAPS:
        def compare(n: ast.AST) -> str | None:
            assert isinstance(n, ast.Compare)
            old = type(n.ops[0])
            n.ops[0] = COMPARE_SWAPS[old]()
            return f"changing `{SYMBOLS[old]}` to `{SYMBOLS[COMPARE_SWAPS[old]]}`"
        yield compare
    if isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAPS:
        def binop(n: ast.AST) -> str | None:
            assert isinstance(n, ast.BinOp)
            old = type(n.op)
            n.op = BINOP_SWAPS[old]()
            return f"changing `{SYMBOLS[old]}` to `{SYMBOLS[BINOP_SWAPS[old]]}`"
        yield binop
    if isinstance(node, ast.BoolOp):
        def boolop(n: ast.AST) -> str | None:
            assert isinstance(n, ast.BoolOp)
            old = type(n.op)
            n.op = ast.Or() if old is ast.And else ast.And()
            return f"changing `{SYMBOLS[old]}` to `{'or' if old is ast.And else 'and'}`"
        yield boolop
    if isinstance(node, ast.If | ast.While):
        def negate(n: ast.AST) -> str | None:
            assert isinstance(n, ast.If | ast.While)
            n.test = ast.UnaryOp(op=ast.Not(), operand=n.test)
            return "negating the condition"
        yield negate
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        def constant(n: ast.AST) -> str | None:
            assert isinstance(n, ast.Constant)
            old = n.value
            assert isinstance(old, int | float)
            n.value = (not old) if isinstance(old, bool) else old + 1
            return f"changing the constant `{old!r}` to `{n.value!r}`"
        yield constant
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        def returns(n: ast.AST) -> str | None:
            assert isinstance(n, ast.Return)
            n.value = ast.Constant(value=None)
            return "returning `None` instead"
        yield returns
    if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
        def delete(n: ast.AST) -> str | None:
            return "deleting the statement"
        yield delete


def _apply(source: str, index: int, edit: Edit) -> tuple[str, str] | None:
    """Apply ``edit`` to the ``index``-th node of a fresh parse of ``source``; ``(source, description)``.

    A fresh parse, not ``copy.deepcopy``: the C parser copes with nesting that Python-level recursion does not."""
    try:
        clone = pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    nodes = list(ast.walk(clone))
    target = nodes[index]
    if isinstance(target, ast.Expr) and edit.__name__ == "delete":
        for parent in nodes:
            for _name, value in ast.iter_fields(parent):
                if isinstance(value, list) and target in value:
                    value[value.index(target)] = ast.Pass()
        description: str | None = "deleting the statement"
    else:
        description = edit(target)
    if description is None:
        return None
    try:
        return ast.unparse(ast.fix_missing_locations(clone)), description
    except (ValueError, TypeError, RecursionError):
        return None


def _mutant(path: str, line: int, description: str, source: str) -> Mutant:
    """A mutant, its id the digest of where it is, what it changes and the file it makes (stable across runs)."""
    digest = hashlib.sha256(f"{path}:{line}:{description}:{source}".encode()).hexdigest()[:12]
    return Mutant(id=digest, path=path, line=line, description=description, source=source)


def _file_mutants(changed: ChangedFile) -> list[Iterator[Mutant]]:
    """Per added line (in line order), its mutants, built lazily: a file of thousands of sites costs only the
    mutants chosen (each is a copy of the whole module)."""
    if changed.content is None or not changed.added_lines:
        return []
    try:
        tree = pyast.parse(changed.content)
    except (SyntaxError, ValueError, RecursionError):
        return []
    added = set(changed.added_lines)
    content = changed.content
    sites: dict[int, list[tuple[int, Edit]]] = {}
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for index, node in enumerate(ast.walk(tree)):
        line = getattr(node, "lineno", None)
        if line not in added or id(node) in docstrings:
            continue
        sites.setdefault(line, []).extend((index, edit) for edit in _site_edits(node))

    def line_mutants(line: int) -> Iterator[Mutant]:
        for index, edit in sites[line]:
            applied = _apply(content, index, edit)
            if applied is None:
                continue
            source, description = applied
            yield _mutant(changed.path, line, description, source)

    return [line_mutants(line) for line in sorted(sites)]


def _syntax_mutants(changed: ChangedFile) -> list[Iterator[Mutant]]:
    """A JavaScript/TypeScript/Go file's mutants per added line, from its syntax tree."""
    if changed.content is None or not changed.added_lines:
        return []
    by_line = mutation_syntax.line_mutants(changed.path, changed.content, set(changed.added_lines))

    def line_mutants(line: int) -> Iterator[Mutant]:
        for description, source in by_line[line]:
            yield _mutant(changed.path, line, description, source)

    return [line_mutants(line) for line in sorted(by_line)]


def mutants_for(case: Case, max_mutants: int, language: str = PYTHON) -> tuple[Mutant, ...]:
    """Up to ``max_mutants`` mutants over the change's product lines of ``language``, spread over lines first."""
    if max_mutants <= 0:
        return ()
    lines: list[Iterator[Mutant]] = []
    for changed in sorted(case.files, key=lambda f: f.path):
        if changed.status == "removed":
            continue
        if language == PYTHON and changed.path.endswith(".py") and not is_test_path(changed.path):
            lines.extend(_file_mutants(changed))
        elif language in PLUG_INS:
            owns, is_test = PLUG_INS[language]
            if owns(changed.path) and not is_test(changed.path):
                lines.extend(_syntax_mutants(changed))
    chosen: list[Mutant] = []
    seen: set[str] = set()
    while len(chosen) < max_mutants and lines:
        # one round takes the next mutant of every line: spread over lines first
        for line in list(lines):
            if len(chosen) >= max_mutants:
                break
            mutant = next(line, None)
            if mutant is None:
                lines.remove(line)
            elif mutant.id not in seen:
                seen.add(mutant.id)
                chosen.append(mutant)
    return tuple(chosen)
