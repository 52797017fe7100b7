"""Where changed code reads, modifies and writes shared state without a lock: the race probe's hypotheses.

What: in one function or method, a write to state that outlives the call and that the function also reads —
module-level mutable globals (in a module that uses threads), attributes of ``self``/``cls`` and files (in a module
that uses threads or processes, or when the change says the code runs concurrently): ``self.n += 1``;
``self.x = f(self.x)``; ``self.d[k] = …`` or ``self.d.append(…)`` after reading ``self.d``; a file opened for
reading and again for writing (``open(p)`` then ``open(p, "w")``, ``p.read_text()`` then ``p.write_text(…)``, or a
temporary file moved onto it with ``os.replace``) — state that processes share too. A function that takes a lock
(``with …lock…:``, ``with …locks[key]:``, ``….acquire()``, ``fcntl.flock``/``lockf``) is left out, as are
constructors and other dunder methods but ``__call__``.
Why: a read-modify-write is where an interleaving loses an update or lets two callers through a check; a lone
``self.d[k] = v`` or ``append`` is one atomic operation and is not flagged.
Example: ``recent = self._hits.get(c, []); …; self._hits[c] = recent`` → a hypothesis at the write.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from checks.red.hypotheses import RACE_KIND, Hypothesis, Target

MUTATORS = frozenset({"append", "extend", "update", "add", "pop", "setdefault", "insert", "remove", "clear",
                      "discard", "popitem", "appendleft", "popleft"})
LOCK_WORDS = ("lock", "mutex", "cond", "semaphore")
# calls that take a lock: ``lock.acquire()``, and a file's ``fcntl.flock(f, LOCK_EX)``/``lockf``, ``msvcrt.locking``
LOCK_CALLS = frozenset({"acquire", "flock", "lockf", "locking"})
PATH_WRAPPERS = frozenset({"Path", "pathlib.Path", "os.fspath", "PurePath"})
FILE_PREFIX = "file:"  # the sink of a file's read-modify-write: its state is shared by processes too
Hyp = Callable[[ast.AST, str, str], Hypothesis]


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def takes_lock(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    def lockish(expr: ast.AST) -> bool:
        if isinstance(expr, ast.Call):
            expr = expr.func
        if isinstance(expr, ast.Subscript):  # one lock of a table of them: ``with self.locks[key]:``
            expr = expr.value
        name = dotted(expr) or ""
        return any(word in name.lower() for word in LOCK_WORDS)

    for node in ast.walk(func):
        if isinstance(node, ast.With | ast.AsyncWith) and any(lockish(i.context_expr) for i in node.items):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOCK_CALLS:
            return True
    return False


def _path(node: ast.expr) -> ast.expr:
    """The path a call names, through ``Path(p)``/``pathlib.Path(p)``/``os.fspath(p)``."""
    while isinstance(node, ast.Call) and len(node.args) == 1 and dotted(node.func) in PATH_WRAPPERS:
        node = node.args[0]
    return node


def _open_mode(call: ast.Call) -> str | None:
    """The mode of an ``open(…)`` call, when it is written out ("r" when it is left out)."""
    mode: ast.expr | None = call.args[1] if len(call.args) > 1 else None
    mode = next((k.value for k in call.keywords if k.arg == "mode"), mode)
    if mode is None:
        return "r"
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None


def file_rmw(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[ast.AST, str] | None:
    """The first write to a file the function also reads (the same path expression): a read-modify-write of state
    that outlives the call and that other threads and processes share. Appending is left out (each write lands
    whole at the end)."""
    reads: set[str] = set()
    writes: list[tuple[ast.AST, ast.expr]] = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func) or ""
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if name in ("open", "io.open", "builtins.open") and node.args and (mode := _open_mode(node)) is not None:
            path = _path(node.args[0])
            if "r" in mode or "+" in mode:
                reads.add(ast.dump(path))
            if "w" in mode or "+" in mode or "x" in mode:
                writes.append((node, path))
        elif method in ("read_text", "read_bytes") and isinstance(node.func, ast.Attribute):
            reads.add(ast.dump(_path(node.func.value)))
        elif method in ("write_text", "write_bytes") and isinstance(node.func, ast.Attribute):
            writes.append((node, _path(node.func.value)))
        elif name in ("os.replace", "os.rename", "shutil.move") and len(node.args) == 2:
            writes.append((node, _path(node.args[1])))
    for node, path in writes:
        if ast.dump(path) in reads:
            return node, ast.unparse(path)
    return None


def global_writes(func: ast.FunctionDef | ast.AsyncFunctionDef, mutable_globals: set[str]
                  ) -> tuple[ast.AST, str] | None:
    """The first mutation of a module-level mutable global (or a name declared ``global``)."""
    local = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    declared_global = {name for n in ast.walk(func) if isinstance(n, ast.Global) for name in n.names}
    shared = (mutable_globals - local) | declared_global
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            base = dotted(node.func.value)
            if base in shared:
                return node, base
        elif isinstance(node, ast.Assign | ast.AugAssign):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                base = dotted(t.value) if isinstance(t, ast.Subscript) else dotted(t)
                if base in shared and (isinstance(t, ast.Subscript) or base in declared_global):
                    return node, base
    return None


def attribute_rmw(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[ast.AST, str] | None:
    """The first write to an attribute of the first parameter (``self``/``cls``) that the method also reads."""
    positional = [*func.args.posonlyargs, *func.args.args]
    if not positional:
        return None
    owner = positional[0].arg

    def attr(node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == owner:
            return node.attr
        return None

    reads: dict[str, int] = {}
    for node in ast.walk(func):
        name = attr(node)
        if name is not None and isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            reads[name] = reads.get(name, 0) + 1
    for node in ast.walk(func):
        if isinstance(node, ast.AugAssign):
            name = attr(node.target.value) if isinstance(node.target, ast.Subscript) else attr(node.target)
            if name is not None:
                return node, name
        elif isinstance(node, ast.Assign | ast.Delete):
            for t in node.targets:
                if (name := attr(t)) is not None and reads.get(name):
                    return node, name
                if isinstance(t, ast.Subscript) and (name := attr(t.value)) is not None and reads.get(name, 0) >= 2:
                    return node, name
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and (name := attr(node.func.value)) is not None and reads.get(name, 0) >= 2:
            return node, name
    return None


def shared_state(func: ast.FunctionDef | ast.AsyncFunctionDef, target: Target, *, threaded: bool,
                 concurrent: bool, mutable_globals: set[str], hyp: Hyp) -> list[Hypothesis]:
    """The read-modify-write hypothesis of one function, if any (``hyp`` builds it at a node)."""
    if not (threaded or concurrent) or takes_lock(func):
        return []
    if threaded and mutable_globals and (found := global_writes(func, mutable_globals)):
        node, name = found
        return [hyp(node, name, f"{func.name}() mutates module-level {name} in threaded code without a lock")]
    dunder = func.name.startswith("__") and func.name.endswith("__") and func.name != "__call__"
    # not threaded: the PR, the rubric's assumptions or the module's docstrings say the code runs concurrently
    why = "in threaded code" if threaded else "in code said to run concurrently"
    if target.is_method and not dunder and (found := attribute_rmw(func)):
        node, name = found
        return [hyp(node, f"self.{name}", f"{func.name}() reads and writes self.{name} {why} without a lock")]
    if not dunder and (found := file_rmw(func)):
        node, path = found
        return [hyp(node, f"{FILE_PREFIX}{path}", f"{func.name}() reads and writes the file {path} {why} without "
                     "a lock")]
    return []


__all__ = ["FILE_PREFIX", "RACE_KIND", "shared_state"]
