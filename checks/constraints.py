"""Deterministic AST checks of Python source against the rubric's constraint set.

Calls are resolved through the file's imports (``import subprocess as sp; sp.run`` is ``subprocess.run``,
``from pickle import loads`` is ``pickle.loads``), so renaming an import does not hide a banned call.
Everything is read with :mod:`ast`; nothing here uses regular expressions over code.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from checks import pyast
from checks.collector import collector_paused
from checks.resolve import assignment_aliases, call_name, fold_string
from checks.testpaths import is_test_path
from rubric import Rubric
from rubric.model import CallRule


@dataclass(frozen=True)
class Violation:
    rule: str
    category: str  # banned-call | banned-import | network | boundary | required-pattern
    severity: str
    message: str
    line: int | None
    cwe: str | None = None
    symbol: str | None = None

    @property
    def security(self) -> bool:
        return self.cwe is not None


@dataclass(frozen=True)
class SourceReport:
    violations: tuple[Violation, ...]
    syntax_error: tuple[int | None, str] | None = None


def path_matches(path: str, pattern: str) -> bool:
    """Glob match where ``**`` spans directories and a bare directory pattern covers its subtree."""
    if fnmatch.fnmatchcase(path, pattern):
        return True
    if pattern.endswith("/**") and path.startswith(pattern[:-3] + "/"):
        return True
    return pattern.endswith("/") and path.startswith(pattern)


def _module_matches(module: str, banned: str) -> bool:
    return module == banned or module.startswith(banned + ".")


class _Resolver(ast.NodeVisitor):
    """First pass: the file's import aliases, and every imported module with its line."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.imports: list[tuple[str, int]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imports.append((alias.name, node.lineno))
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases.setdefault(top, top)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:  # relative imports stay inside the repository
            return
        module = node.module or ""
        self.imports.append((module, node.lineno))
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            self.imports.append((full, node.lineno))
            self.aliases[alias.asname or alias.name] = full


def dotted_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, with the first part resolved through the import aliases."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


def _keyword_value(node: ast.AST, aliases: dict[str, str]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    return dotted_name(node, aliases)


def _call_matches(rule: CallRule, name: str) -> bool:
    if rule.name.endswith(".*"):
        return name.startswith(rule.name[:-1])
    return name == rule.name


def _keywords_allow(rule: CallRule, call: ast.Call, aliases: dict[str, str]) -> bool:
    """True when the call's keywords make the rule apply."""
    values = {kw.arg: _keyword_value(kw.value, aliases) for kw in call.keywords if kw.arg}
    if rule.when_keyword:
        for key, wanted in rule.when_keyword.items():
            if key not in values or values[key] not in wanted:
                return False
    if rule.unless_keyword:
        for key, safe in rule.unless_keyword.items():
            if key in values and values[key] in safe:
                return False
    return True


def _all_constant(call: ast.Call) -> bool:
    """Whether every argument of the call is a literal (strings, numbers, and lists or tuples of them)."""
    def constant(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.List | ast.Tuple):
            return all(constant(e) for e in node.elts)
        return False
    return all(constant(a) for a in call.args) and all(constant(k.value) for k in call.keywords)


EXECUTORS = frozenset({"exec", "eval", "compile"})
MAX_NESTING = 3
PACKAGE_ROOTS = ("src", "lib", "lib2", "lib3", "python")  # where a repository keeps its packages, besides its root


def own_packages(head_paths: Collection[str], added: Collection[str] = ()) -> frozenset[str]:
    """The top-level packages the repository itself provides (``yaml`` for PyYAML's ``lib3/yaml/__init__.py``),
    never a standard-library name and never one whose ``__init__.py`` is in ``added`` (a change cannot make a
    package its own to launder calls into it)."""
    names: set[str] = set()
    skip = set(added)
    for path in head_paths:
        parts = PurePosixPath(path).parts
        if parts[-1:] != ("__init__.py",) or path in skip:
            continue
        if len(parts) == 2:
            names.add(parts[0])
        elif len(parts) == 3 and parts[0] in PACKAGE_ROOTS:
            names.add(parts[1])
    return frozenset(n for n in names if n.isidentifier() and n not in sys.stdlib_module_names)


def check_source(path: str, source: str, rubric: Rubric, _depth: int = 0,
                 own: frozenset[str] = frozenset(), _decoded: bool = False) -> SourceReport:
    """Every constraint violation in one Python file (all lines; the caller decides which lines count).

    Code hidden in a string that folds to a constant (``exec(base64.b64decode("…"))``) is checked too, and what
    it holds is reported on the line that executes it. A banned call into one of ``own`` (:func:`own_packages`)
    is noted, not a flaw: the repository defines what it does (``yaml.load`` in PyYAML's own tests)."""
    with collector_paused():
        return _check_source(path, source, rubric, _depth, own, _decoded)


def _check_source(path: str, source: str, rubric: Rubric, _depth: int, own: frozenset[str],
                  decoded: bool) -> SourceReport:
    try:
        tree = pyast.parse(source, filename=path)
    except SyntaxError as exc:
        return SourceReport(violations=(), syntax_error=(exc.lineno, exc.msg or "invalid syntax"))
    except ValueError as exc:  # e.g. source with NUL bytes
        return SourceReport(violations=(), syntax_error=(None, str(exc)))
    constraints = rubric.constraints
    resolver = _Resolver()
    resolver.visit(tree)
    found: list[Violation] = []

    for module, line in resolver.imports:
        for rule in constraints.banned_imports:
            if _module_matches(module, rule.name):
                found.append(Violation(f"import:{rule.name}", "banned-import", rule.severity, rule.message, line,
                                       rule.cwe, module))
        if constraints.network.prohibited:
            for banned in constraints.network.modules:
                if _module_matches(module, banned):
                    found.append(Violation(f"network:{banned}", "network", constraints.network.severity,
                                           f"network module {module} is prohibited here", line,
                                           constraints.network.cwe, module))
        for boundary in constraints.boundaries:
            if path_matches(path, boundary.source):
                for banned in boundary.forbidden_imports:
                    if _module_matches(module, banned):
                        found.append(Violation(f"boundary:{boundary.id}", "boundary", boundary.severity,
                                               boundary.message, line, None, module))

    aliases = assignment_aliases(tree, resolver.aliases)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        # what the call really calls: getattr(builtins, "ev" + "al"), __import__("os").system, aliases, ...
        name = call_name(node, aliases)
        if name is None:
            continue
        hidden = (fold_string(node.args[0], aliases)
                  if name in EXECUTORS and node.args and _depth < MAX_NESTING else None)
        # code that hides what it runs (a constant decoded at run time, and all it runs) is judged as code
        # anywhere, a test file too; a literal string run by exec() is as visible as the lines around it
        decodes = bool(hidden) and not isinstance(node.args[0], ast.Constant)
        plain = not decoded and not decodes
        for call_rule in constraints.banned_calls:
            if _call_matches(call_rule, name) and _keywords_allow(call_rule, node, resolver.aliases):
                severity, message = call_rule.severity, call_rule.message
                if plain and is_test_path(path) and _all_constant(node):
                    # a test's own fixed command: nothing untrusted reaches it, so it is noted, not a flaw
                    severity, message = "low", f"{message} (constant arguments in a test file)"
                elif name.split(".")[0] in own:
                    severity, message = "low", f"{message} (the repository's own package: it defines this call)"
                elif plain and is_test_path(path):
                    # the tests' own code on the tests' own data: it ships to no user, and an attacker's input
                    # never reaches it (code hidden in a decoded constant is still checked below, at its severity)
                    severity, message = "low", f"{message} (in a test file: it runs only under the tests)"
                found.append(Violation(f"call:{call_rule.name}", "banned-call", severity, message, node.lineno,
                                       call_rule.cwe, name))
        if hidden:
            for inner in check_source(path, hidden, rubric, _depth + 1, own, decoded or decodes).violations:
                found.append(Violation(f"{inner.rule}:hidden", inner.category, inner.severity,
                                       f"{inner.message} (in code decoded from a constant and run by {name}())",
                                       node.lineno, inner.cwe, inner.symbol))

    for pattern in constraints.required_patterns:
        if not any(path_matches(path, p) for p in pattern.paths):
            continue
        if not _has_pattern(tree, resolver, pattern.kind, pattern.name):
            found.append(Violation(f"required:{pattern.id}", "required-pattern", pattern.severity,
                                   pattern.message, None, None, pattern.name))

    unique: dict[tuple[str, int | None], Violation] = {}
    for v in found:  # ``from x import y`` names both x and x.y: one finding per rule and line
        unique.setdefault((v.rule, v.line), v)
    return SourceReport(violations=tuple(sorted(unique.values(), key=lambda v: (v.line or 0, v.rule))))


def _has_pattern(tree: ast.Module, resolver: _Resolver, kind: str, name: str | None) -> bool:
    if kind == "docstring":
        return ast.get_docstring(tree) is not None
    if kind == "import":
        return any(_module_matches(module, name or "") for module, _ in resolver.imports)
    for node in ast.walk(tree):
        if kind == "call" and isinstance(node, ast.Call) and dotted_name(node.func, resolver.aliases) == name:
            return True
        if kind == "decorator" and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if dotted_name(target, resolver.aliases) == name:
                    return True
    return False
