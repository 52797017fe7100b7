"""JavaScript's and TypeScript's syntax tree (tree-sitter): the sinks a change must not open, as architecture
violations, and the scopes (functions, classes, methods) a change touches, for R's chunking (:func:`scopes`).

Each rule reads the tree, never the text: a module is known however it is loaded (``require('child_process')``,
``require('node:child_process')``, ``import cp from 'child_process'``, ``const { exec } = require(…)``), and only what
a literal says counts as a literal (a template string with a substitution is built at run time).

============================  ==========================================================  ========  =======
rule                          what                                                        severity  CWE
============================  ==========================================================  ========  =======
``js-child-process-shell``    ``child_process.exec``/``execSync`` (a shell always), or    high      CWE-78
                              ``spawn``/``execFile``/``…Sync`` with ``shell: true``,
                              given a command built at run time (medium: a literal one)
``js-eval``                   ``eval``, ``new Function``, ``setTimeout``/``setInterval``  high      CWE-95
                              with a string, given code built at run time
``js-vm``                     ``vm.runIn*Context``, ``new vm.Script``,                    high      CWE-95
                              ``vm.compileFunction``: ``vm`` is not a security boundary
``js-sql-string``             SQL built with ``+`` or a template string passed to          high      CWE-89
                              ``query``/``execute``/``raw``/``prepare``
``js-path-traversal``         an ``fs`` call on a path built (``path.join``/``resolve``,  high      CWE-22
                              ``+``, template) from a request's fields (``req.params``,
                              ``req.query``, ``req.body``, ``ctx.request``)
``js-unsafe-deserialize``     ``node-serialize``/``serialize-javascript``'s               high      CWE-502
                              ``unserialize``: it runs the functions the data carries
============================  ==========================================================  ========  =======

Pure; tree-sitter and its grammars are the ``tree-sitter``, ``tree-sitter-javascript`` and ``tree-sitter-typescript``
wheels. Without them :func:`available` is False and no JavaScript file counts as analysed.
"""

from __future__ import annotations

from typing import Any

from checks.constraints import Violation
from checks.languages.tree import grammar
from checks.languages.tree import text as _text
from checks.languages.tree import walk as _walk

CHILD_PROCESS = "child_process"
SHELL_ALWAYS = frozenset({"exec", "execSync"})
SHELL_OPTION = frozenset({"spawn", "spawnSync", "execFile", "execFileSync"})
VM_CALLS = frozenset({"runInNewContext", "runInThisContext", "runInContext", "compileFunction"})
SQL_METHODS = frozenset({"query", "execute", "raw", "prepare", "unsafe", "$queryRawUnsafe", "$executeRawUnsafe"})
FS_MODULES = frozenset({"fs", "fs/promises"})
REQUEST_ROOTS = frozenset({"req", "request", "ctx", "event"})
REQUEST_FIELDS = frozenset({"params", "query", "body", "headers", "cookies", "url", "path", "originalUrl", "request",
                            "pathParameters", "queryStringParameters"})
PATH_BUILDERS = frozenset({"join", "resolve", "normalize"})
DESERIALIZERS = {"node-serialize": "unserialize", "serialize-to-js": "deserialize"}
DIALECTS = {".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx"}


# dialect → (grammar wheel, its function that gives the language)
GRAMMARS = {"javascript": ("tree_sitter_javascript", "language"),
            "typescript": ("tree_sitter_typescript", "language_typescript"),
            "tsx": ("tree_sitter_typescript", "language_tsx")}


def _parser(dialect: str = "javascript") -> Any:
    return grammar(*GRAMMARS[dialect]) if available() else None


def available() -> bool:
    """Whether JavaScript and TypeScript files can be parsed here (the tree-sitter wheels are installed)."""
    return all(grammar(*wheel) is not None for wheel in GRAMMARS.values())


def dialect(path: str) -> str:
    return next((name for suffix, name in DIALECTS.items() if path.endswith(suffix)), "javascript")


def _string(node: Any) -> str | None:
    """The value of a string literal (or a template string without substitutions), else None."""
    if node.type == "string":
        return "".join(_text(c) for c in node.named_children if c.type in ("string_fragment", "escape_sequence"))
    if node.type == "template_string" and not any(c.type == "template_substitution" for c in node.named_children):
        return "".join(_text(c) for c in node.named_children if c.type == "string_fragment")
    return None


def _unwrap(node: Any) -> Any:
    while node.type in ("parenthesized_expression", "as_expression", "non_null_expression",
                        "satisfies_expression") and node.named_children:
        node = node.named_children[0]
    return node


def _arguments(call: Any) -> list[Any]:
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [c for c in args.named_children if c.type != "comment"]


def _module_of(node: Any) -> str | None:
    """The module a ``require('…')`` call loads, else None."""
    node = _unwrap(node)
    if node.type == "await_expression" and node.named_children:
        node = _unwrap(node.named_children[-1])
    if node.type != "call_expression":
        return None
    function = node.child_by_field_name("function")
    args = _arguments(node)
    if function is None or _text(function) not in ("require", "import") or not args:
        return None
    name = _string(args[0])
    return name[len("node:"):] if name and name.startswith("node:") else name


class _Names:
    """What each name of a file stands for: ``modules`` (``cp`` → ``child_process``), ``members`` (``exec`` →
    ``(child_process, exec)``, from a destructuring ``require`` or a named import)."""

    def __init__(self, root: Any) -> None:
        self.modules: dict[str, str] = {}
        self.members: dict[str, tuple[str, str]] = {}
        self.lines: dict[str, int] = {}
        for node in _walk(root):
            if node.type == "import_statement":
                self._import(node)
            elif node.type == "variable_declarator":
                value, name = node.child_by_field_name("value"), node.child_by_field_name("name")
                module = _module_of(value) if value is not None else None
                if module is None or name is None:
                    continue
                self.lines.setdefault(module, node.start_point[0] + 1)
                if name.type == "identifier":
                    self.modules[_text(name)] = module
                elif name.type == "object_pattern":
                    self._pattern(name, module)

    def _pattern(self, pattern: Any, module: str) -> None:
        for child in pattern.named_children:
            if child.type == "shorthand_property_identifier_pattern":
                self.members[_text(child)] = (module, _text(child))
            elif child.type == "pair_pattern":
                key, value = child.child_by_field_name("key"), child.child_by_field_name("value")
                if key is not None and value is not None and value.type == "identifier":
                    self.members[_text(value)] = (module, _text(key))

    def _import(self, node: Any) -> None:
        source = node.child_by_field_name("source")
        module = _string(source) if source is not None else None
        if module is None:
            return
        module = module[len("node:"):] if module.startswith("node:") else module
        self.lines.setdefault(module, node.start_point[0] + 1)
        for clause in node.named_children:
            if clause.type != "import_clause":
                continue
            for part in clause.named_children:
                if part.type == "identifier":  # the default import
                    self.modules[_text(part)] = module
                elif part.type == "namespace_import":
                    names = [c for c in part.named_children if c.type == "identifier"]
                    if names:
                        self.modules[_text(names[-1])] = module
                elif part.type == "named_imports":
                    for spec in part.named_children:
                        if spec.type != "import_specifier":
                            continue
                        name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                        if name is not None:
                            self.members[_text(alias if alias is not None else name)] = (module, _text(name))

    def callee(self, function: Any) -> tuple[str | None, str]:
        """``(module, function name)`` of a call's callee: ``cp.exec`` → ``("child_process", "exec")``, a bare
        ``exec`` imported by name likewise, an unknown object's method → ``(None, name)``."""
        function = _unwrap(function)
        if function.type == "identifier":
            name = _text(function)
            return self.members.get(name, (None, name))
        if function.type == "member_expression":
            obj, prop = function.child_by_field_name("object"), function.child_by_field_name("property")
            name = _text(prop) if prop is not None else ""
            if obj is None:
                return None, name
            obj = _unwrap(obj)
            if obj.type == "identifier":
                known = self.modules.get(_text(obj))
                if known is None and _text(obj) in self.members:  # `const { promises: fsp } = require('fs')`
                    parent, member = self.members[_text(obj)]
                    known = f"{parent}/{member}" if member == "promises" else None
                return known, name
            module = _module_of(obj)
            if module is not None:
                return module, name
            if obj.type == "member_expression":  # `fs.promises.readFile`
                inner = obj.child_by_field_name("object")
                if inner is not None and self.modules.get(_text(inner)) == "fs":
                    return "fs/promises", name
            return None, name
        return None, ""


CONSTANT_TYPES = frozenset({"number", "true", "false", "null", "undefined"})


def _literal(node: Any) -> bool:
    node = _unwrap(node)
    if _string(node) is not None or node.type in CONSTANT_TYPES:
        return True
    if node.type == "binary_expression":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        return left is not None and right is not None and _literal(left) and _literal(right)
    if node.type == "array":
        return all(_literal(c) for c in node.named_children)
    return False


def _built(node: Any) -> bool:
    """A string made at run time from parts: ``'…' + x``, a template string with a substitution, ``[…].join()``."""
    node = _unwrap(node)
    if node.type == "template_string":
        return any(c.type == "template_substitution" for c in node.named_children)
    if node.type == "binary_expression":
        operator = node.child_by_field_name("operator")
        return operator is not None and _text(operator) == "+" and not _literal(node)
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        if function is not None and function.type == "member_expression":
            prop = function.child_by_field_name("property")
            return prop is not None and _text(prop) in ("concat", "join", "format") and not _literal(node)
    return False


def _shell_option(args: list[Any]) -> bool:
    """Whether the call's options object says ``shell: true`` (or a shell's path)."""
    for arg in args:
        arg = _unwrap(arg)
        if arg.type != "object":
            continue
        for pair in arg.named_children:
            key, value = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if pair.type == "pair" and key is not None and value is not None and _text(key).strip("'\"") == "shell":
                return _text(value) not in ("false", "undefined", "null", "0", "''", '""')
            if pair.type == "shorthand_property_identifier" and _text(pair) == "shell":
                return True
    return False


def _from_request(node: Any) -> bool:
    """Whether an expression reads a request's fields (``req.params.name``, ``ctx.request.body``) other than through a
    call (a sanitiser's result is the sanitiser's)."""
    stack = [node]
    while stack:
        part = stack.pop()
        if part.type == "call_expression":
            continue
        stack.extend(part.named_children)
        if part.type != "member_expression":
            continue
        chain: list[str] = []
        current = part
        while current is not None and current.type == "member_expression":
            prop = current.child_by_field_name("property")
            chain.append(_text(prop) if prop is not None else "")
            current = current.child_by_field_name("object")
        if current is not None and current.type == "identifier" and _text(current) in REQUEST_ROOTS and (
                REQUEST_FIELDS & set(chain)):
            return True
    return False


def _path_from_request(node: Any, names: _Names) -> bool:
    node = _unwrap(node)
    if node.type in ("template_string", "binary_expression"):
        return _built(node) and _from_request(node)
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        module, name = names.callee(function) if function is not None else (None, "")
        if module == "path" and name in PATH_BUILDERS:
            return any(_from_request(a) for a in _arguments(node))
    return _from_request(node) if node.type == "member_expression" else False


def check_javascript(source: str, path: str = "a.js") -> tuple[Violation, ...] | None:
    """The file's violations (``path`` chooses JavaScript, TypeScript or TSX), or None when it cannot be parsed
    here."""
    parser = _parser(dialect(path))
    if parser is None:
        return None
    root = parser.parse(source.encode("utf-8", "surrogatepass")).root_node
    names = _Names(root)
    found: list[Violation] = []
    for package, function in DESERIALIZERS.items():
        if package in names.lines:
            found.append(Violation("js-unsafe-deserialize", "banned-import", "high", f"{package}'s {function} runs "
                                   "the functions the data it reads carries: deserialising input runs its code",
                                   names.lines[package], "CWE-502", package))
    for node in _walk(root):
        line = node.start_point[0] + 1
        if node.type == "new_expression":
            constructor = node.child_by_field_name("constructor")
            args = _arguments(node)
            text = _text(constructor) if constructor is not None else ""
            module, name = names.callee(constructor) if constructor is not None else (None, "")
            if text == "Function" and args and not all(_literal(a) for a in args):
                found.append(Violation("js-eval", "banned-call", "high", "new Function compiles code built at run "
                                       "time: code injection", line, "CWE-95", "Function"))
            elif module == "vm" and name == "Script" and args and not _literal(args[0]):
                found.append(Violation("js-vm", "banned-call", "high", "new vm.Script compiles code built at run "
                                       "time; vm is not a security boundary", line, "CWE-95", "vm.Script"))
            continue
        if node.type != "call_expression":
            continue
        function = node.child_by_field_name("function")
        if function is None:
            continue
        module, name = names.callee(function)
        args = _arguments(node)
        if module is None and _unwrap(function).type == "identifier" and name in ("eval", "setTimeout",
                                                                                    "setInterval"):
            code = args[0] if args else None
            if code is not None and ((name == "eval" and not _literal(code)) or (name != "eval" and _built(code))):
                found.append(Violation("js-eval", "banned-call", "high", f"{name} runs code built at run time: code "
                                       "injection", line, "CWE-95", name))
        elif module == CHILD_PROCESS and (name in SHELL_ALWAYS or (name in SHELL_OPTION and _shell_option(args))):
            literal = bool(args) and _literal(args[0]) and (name in SHELL_ALWAYS or len(args) < 2
                                                            or _literal(args[1]) or _unwrap(args[1]).type == "object")
            found.append(Violation(
                "js-child-process-shell", "banned-call", "medium" if literal else "high",
                f"child_process.{name} runs its command through a shell" + ("" if literal else ", built at run "
                                                                            "time: shell injection"),
                line, "CWE-78", f"child_process.{name}"))
        elif module == "vm" and name in VM_CALLS and args and not _literal(args[0]):
            found.append(Violation("js-vm", "banned-call", "high", f"vm.{name} runs code built at run time; vm is "
                                   "not a security boundary", line, "CWE-95", f"vm.{name}"))
        elif module in FS_MODULES and args and _path_from_request(args[0], names):
            found.append(Violation("js-path-traversal", "banned-call", "high", f"fs.{name} opens a path built from "
                                   "the request: path traversal (`../`); resolve it and check it stays under its "
                                   "root", line, "CWE-22", f"fs.{name}"))
        elif module is None and name in SQL_METHODS and _unwrap(function).type == "member_expression" and args \
                and _built(args[0]):
            found.append(Violation("js-sql-string", "banned-call", "high", f"{name} gets SQL built from strings: "
                                   "SQL injection; pass the values as parameters", line, "CWE-89", name))
    return tuple(sorted(found, key=lambda v: (v.line or 0, v.rule)))


SCOPE_TYPES = frozenset({"function_declaration", "generator_function_declaration", "class_declaration",
                         "method_definition", "abstract_class_declaration", "interface_declaration"})
FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})


def _doc(node: Any) -> str | None:
    """The JSDoc block (``/** … */``) right above a declaration (or above its ``export``), cleaned of its stars."""
    target = node.parent if node.parent is not None and node.parent.type == "export_statement" else node
    previous = target.prev_named_sibling
    if previous is None or previous.type != "comment" or not _text(previous).startswith("/**") \
            or previous.end_point[0] + 1 < target.start_point[0]:
        return None
    lines = [line.strip().lstrip("*").strip() for line in _text(previous)[3:-2].splitlines()]
    return "\n".join(line for line in lines if line) or None


def scopes(source: str, path: str = "a.js") -> tuple[tuple[str, int, int, str | None], ...] | None:
    """Every function, class and method of ``source`` as ``(qualified name, first line, last line, JSDoc)``,
    outermost first; ``const f = () => …`` is the function ``f``. None when it cannot be parsed here."""
    parser = _parser(dialect(path))
    if parser is None:
        return None
    root = parser.parse(source.encode("utf-8", "surrogatepass")).root_node
    found: list[tuple[str, int, int, str | None]] = []
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        name_node = None
        if node.type in SCOPE_TYPES:
            name_node = node.child_by_field_name("name")
        elif node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is not None and value.type in FUNCTION_VALUES:
                name_node = node.child_by_field_name("name")
        inner = prefix
        if name_node is not None and name_node.type in ("identifier", "property_identifier", "type_identifier",
                                                        "private_property_identifier"):
            inner = f"{prefix}.{_text(name_node)}" if prefix else _text(name_node)
            holder = node.parent.parent if node.type == "variable_declarator" and node.parent is not None \
                and node.parent.parent is not None and node.parent.parent.type == "export_statement" else node
            found.append((inner, holder.start_point[0] + 1, node.end_point[0] + 1,
                          _doc(node.parent if node.type == "variable_declarator" else node)))
        stack.extend((child, inner) for child in reversed(node.named_children))
    return tuple(found)
