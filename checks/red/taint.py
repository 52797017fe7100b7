"""The Red Agent's own AST taint pass: untrusted input → dangerous sink, inside each changed function.

What: for every function of a changed Python file, the parameters (and ``input()``, ``sys.argv``,
``request.*``) are taint sources; assignments propagate taint (flow-insensitively, to a fixpoint); a call to a
sink with a tainted argument is a :class:`~checks.red.hypotheses.Hypothesis`. It also flags constructs that
are dangerous without a source: hard-coded secrets, weak randomness for tokens, network use where the rubric
forbids it, module-level state mutated without a lock in threaded code.
Why: bandit says a sink is there; the taint pass says *which argument* reaches it, which is what the MCTS
planner needs to build a probe, and what keeps clean code of the same shape (``shell=False``, parameterised
SQL, ``basename`` on paths) free of findings.
Example: ``def run(cmd): subprocess.run(cmd, shell=True)`` → command-injection, target ``run``, tainted ``cmd``.

Only sinks on lines the change adds are reported: the agent attacks the change, not the whole repository.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from checks import pyast
from checks.red.hypotheses import Hypothesis, Target
from checks.red.shared_state import dotted, shared_state
from checks.resolve import assignment_aliases, call_name

SANITIZERS = frozenset({
    "int", "float", "bool", "len", "shlex.quote", "pipes.quote", "os.path.basename", "werkzeug.utils.secure_filename",
    "secure_filename", "hashlib.sha256", "uuid.UUID", "ast.literal_eval",
})
REQUEST_NAMES = frozenset({"request", "req", "flask.request"})
CODE_SINKS = frozenset({"eval", "exec", "builtins.eval", "builtins.exec"})
DESERIALISE_SINKS = frozenset({
    "pickle.loads", "pickle.load", "_pickle.loads", "_pickle.load", "cPickle.loads", "marshal.loads", "marshal.load",
    "yaml.load", "yaml.unsafe_load", "yaml.load_all", "yaml.unsafe_load_all", "dill.loads", "jsonpickle.decode",
    "shelve.open",
})
SAFE_YAML_LOADERS = frozenset({"SafeLoader", "CSafeLoader", "yaml.SafeLoader", "yaml.CSafeLoader", "BaseLoader",
                               "yaml.BaseLoader"})
SHELL_ALWAYS = frozenset({"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
                          "asyncio.create_subprocess_shell", "commands.getoutput"})
SHELL_IF_FLAG = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                           "subprocess.Popen"})
SQL_METHODS = frozenset({"execute", "executemany", "executescript"})
OPEN_SINKS = frozenset({"open", "io.open", "codecs.open", "os.open", "builtins.open"})
PATH_METHODS = frozenset({"read_text", "read_bytes", "write_text", "write_bytes", "open", "unlink"})
CONTAINMENT_CHECKS = frozenset({"is_relative_to", "commonpath", "commonprefix"})
RANDOM_CALLS = frozenset({"random.random", "random.randint", "random.choice", "random.choices", "random.getrandbits",
                          "random.randrange", "random.sample", "random.uniform", "random.shuffle"})
DEPTH_PARAMS = re.compile(r"(depth|level|limit|max_|remaining|budget)", re.IGNORECASE)
SECRET_NAME = re.compile(r"(token|secret|passw(or)?d|passwd|api_?key|private_?key|access_?key|auth_?key|credential)",
                         re.IGNORECASE)
TOKEN_CONTEXT = re.compile(r"(token|secret|passw|nonce|salt|session|otp|api_?key|reset|csrf)", re.IGNORECASE)
KNOWN_TOKEN = re.compile(r"^(ghp_[A-Za-z0-9]{30,}|gh[ousr]_[A-Za-z0-9]{30,}|AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9_-]{20,}|"
                         r"xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,})$")
PLACEHOLDER = re.compile(r"(^x+$|change.?me|example|dummy|placeholder|your[_-]|<|\{|\$\{|^\*+$|redacted)",
                         re.IGNORECASE)
MIN_SECRET_LENGTH = 8


def _varied(text: str) -> bool:
    """Secrets mix character classes; labels such as ``"password"`` or ``"api_key"`` do not."""
    classes = [any(c.islower() for c in text), any(c.isupper() for c in text), any(c.isdigit() for c in text),
               any(not c.isalnum() and c not in "_-." for c in text)]
    return sum(classes) >= 2


@dataclass
class ModuleFacts:
    """What the module imports (alias → dotted name) and its module-level mutable globals."""

    aliases: dict[str, str] = field(default_factory=dict)
    imported: set[str] = field(default_factory=set)
    mutable_globals: set[str] = field(default_factory=set)

    def resolve(self, node: ast.AST) -> str | None:
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        real = self.aliases.get(head)
        if real is None:
            return name
        return f"{real}.{rest}" if rest else real

    @property
    def threaded(self) -> bool:
        return any(m.split(".")[0] in ("threading", "concurrent", "_thread", "multiprocessing") for m in self.imported)


def module_facts(tree: ast.Module) -> ModuleFacts:
    facts = ModuleFacts()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                facts.imported.add(alias.name)
                facts.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            facts.imported.add(node.module)
            for alias in node.names:
                facts.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            value = stmt.value
            mutable = isinstance(value, ast.Dict | ast.List | ast.Set) or (
                isinstance(value, ast.Call) and (dotted(value.func) or "").split(".")[-1]
                in ("dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"))
            if mutable:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                facts.mutable_globals.update(t.id for t in targets if isinstance(t, ast.Name))
    # module-level names bound to a resolvable callable: ``run = getattr(builtins, "ev" + "al")``
    top = ast.Module(body=[s for s in tree.body if isinstance(s, ast.Assign)], type_ignores=[])
    facts.aliases = assignment_aliases(top, facts.aliases)
    return facts


class FunctionTaint:
    """Taint of names inside one function: name → the sources (parameter names, ``input``…) that reach it."""

    def __init__(self, func: ast.FunctionDef | ast.AsyncFunctionDef, params: tuple[str, ...], facts: ModuleFacts):
        self.func = func
        self.facts = facts
        self.taint: dict[str, set[str]] = {p: {p} for p in params}
        self.formatted: set[str] = set()
        self._propagate()

    def sources(self, expr: ast.AST | None) -> set[str]:
        """The sources an expression carries; sanitiser calls cut the flow."""
        if expr is None:
            return set()
        found: set[str] = set()
        stack: list[ast.AST] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call):
                name = self.facts.resolve(node.func) or ""
                if name in SANITIZERS or name.split(".")[-1] in ("quote", "basename", "secure_filename"):
                    continue
                if name in ("input", "builtins.input"):
                    found.add("input()")
                if isinstance(node.func, ast.Attribute):
                    receiver = self.facts.resolve(node.func.value) or ""
                    if receiver in REQUEST_NAMES or receiver.split(".")[0] in REQUEST_NAMES:
                        found.add("request")
            if isinstance(node, ast.Name):
                found |= self.taint.get(node.id, set())
            elif isinstance(node, ast.Attribute | ast.Subscript):
                name = self.facts.resolve(node.value if isinstance(node, ast.Subscript) else node) or ""
                if name in ("sys.argv",) or name.startswith("sys.argv"):
                    found.add("sys.argv")
                if name.split(".")[0] in REQUEST_NAMES and "." in name:
                    found.add("request")
            stack.extend(ast.iter_child_nodes(node))
        return found

    def is_formatted(self, expr: ast.AST | None) -> bool:
        """A string built from tainted parts: f-string, ``%``, ``+`` or ``.format`` — or a name assigned one."""
        if expr is None:
            return False
        if isinstance(expr, ast.Name):
            return expr.id in self.formatted
        if isinstance(expr, ast.JoinedStr):
            return any(isinstance(v, ast.FormattedValue) and self.sources(v.value) for v in expr.values)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod | ast.Add):
            # A BinOp carries the sources of its two operands, so this is "either operand is tainted, or the left
            # one is formatted" — decided without re-reading the chain at each level: a string built from n
            # pieces (``"a" + b + "c" + …``, a chain down its left side) costs O(n), not O(n²).
            if self.sources(expr):
                return True
            left = expr.left
            while isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod | ast.Add):
                left = left.left  # untainted too: its sources are part of expr's
            return self.is_formatted(left)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
            return any(self.sources(a) for a in [*expr.args, *[k.value for k in expr.keywords]])
        return False

    def _assignments(self) -> Iterator[tuple[list[ast.AST], ast.AST | None]]:
        for node in ast.walk(self.func):
            if isinstance(node, ast.Assign):
                yield list(node.targets), node.value
            elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                yield [node.target], node.value
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                yield [node.target], node.iter
            elif isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:
                    if item.optional_vars is not None:
                        yield [item.optional_vars], item.context_expr

    def _propagate(self) -> None:
        for _ in range(20):  # a fixpoint; the bound only guards pathological code
            changed = False
            for targets, value in self._assignments():
                incoming = self.sources(value)
                formatted = self.is_formatted(value)
                for target in targets:
                    for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                        if incoming - self.taint.get(name, set()):
                            self.taint.setdefault(name, set()).update(incoming)
                            changed = True
                        if formatted and name not in self.formatted:
                            self.formatted.add(name)
                            changed = True
            if not changed:
                return


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> tuple[str, ...]:
    args = func.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if is_method and names and names[0] in ("self", "cls"):
        names = names[1:]
    return tuple(names)


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _first_arg(call: ast.Call, *keywords: str) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in keywords), None)


def _ordered(sources: Iterable[str], params: tuple[str, ...]) -> tuple[str, ...]:
    """The parameters among ``sources``, in signature order (probes can only drive parameters)."""
    chosen = set(sources)
    return tuple(p for p in params if p in chosen)


class TaintPass:
    """Runs over one module's source and yields hypotheses for the lines the change adds."""

    def __init__(self, path: str, source: str, added_lines: Iterable[int] | None = None,
                 network_modules: Iterable[str] = (), concurrent: bool = False) -> None:
        """``concurrent``: the change says its code runs concurrently (instance state is then shared state)."""
        self.path = path
        self.source = source
        self.added = set(added_lines) if added_lines is not None else None
        self.network_modules = tuple(network_modules)
        self.concurrent = concurrent

    def _in_change(self, line: int) -> bool:
        return self.added is None or line in self.added

    def run(self) -> list[Hypothesis]:
        try:
            tree = pyast.parse(self.source, filename=self.path)
        except (SyntaxError, ValueError):
            return []  # the repo investigator reports syntax errors; there is nothing to attack
        facts = module_facts(tree)
        found: list[Hypothesis] = []
        found += self._secrets(tree)
        for func, is_method, qualname in self._functions(tree):
            params = _params(func, is_method)
            target = Target(path=self.path, qualname=qualname, params=params, is_method=is_method)
            flow = FunctionTaint(func, params, facts)
            found += self._sinks(func, target, flow, facts)
            found += self._recursion(func, target, flow, is_method)
            found += self._randomness(func, target, facts)
            found += self._shared_state(func, target, facts)
        return [h for h in found if self._in_change(h.line)]

    @staticmethod
    def _functions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool, str]]:
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                yield stmt, False, stmt.name
            elif isinstance(stmt, ast.ClassDef):
                for item in stmt.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        static = any(dotted(d) == "staticmethod" for d in item.decorator_list)
                        yield item, not static, f"{stmt.name}.{item.name}"

    def _hyp(self, kind: str, node: ast.AST, sink: str, detail: str, target: Target | None,
             tainted: tuple[str, ...] = ()) -> Hypothesis:
        return Hypothesis(kind=kind, path=self.path, line=getattr(node, "lineno", 1), sink=sink, detail=detail,
                          target=target, tainted=tainted)

    def _sinks(self, func: ast.FunctionDef | ast.AsyncFunctionDef, target: Target, flow: FunctionTaint,
               facts: ModuleFacts) -> list[Hypothesis]:
        found: list[Hypothesis] = []
        guarded_paths = any(
            (isinstance(n, ast.Attribute) and n.attr in CONTAINMENT_CHECKS)
            or (isinstance(n, ast.Name) and n.id in CONTAINMENT_CHECKS)
            for n in ast.walk(func)
        )
        aliases = assignment_aliases(func, facts.aliases)
        for call in (n for n in ast.walk(func) if isinstance(n, ast.Call)):
            # resolved by value: getattr(builtins, "ev" + "al")(x) is eval(x)
            name = call_name(call, aliases) or facts.resolve(call.func) or ""
            first = _first_arg(call)
            tainted = _ordered(flow.sources(first), target.params)
            if name in CODE_SINKS and tainted:
                found.append(self._hyp("code-injection", call, name, f"{name}() of {', '.join(tainted)}", target,
                                       tainted))
            elif name in DESERIALISE_SINKS and tainted:
                loader = _keyword(call, "Loader")
                if name == "yaml.load" and loader is not None and (facts.resolve(loader) or "") in SAFE_YAML_LOADERS:
                    continue
                found.append(self._hyp("deserialization", call, name, f"{name}() of {', '.join(tainted)}", target,
                                       tainted))
            elif name in SHELL_ALWAYS or name in SHELL_IF_FLAG:
                shell = _keyword(call, "shell")
                on = name in SHELL_ALWAYS or (isinstance(shell, ast.Constant) and shell.value is True)
                command = _first_arg(call, "args", "cmd", "command")
                tainted = _ordered(flow.sources(command), target.params)
                if on and tainted:
                    found.append(self._hyp("command-injection", call, name,
                                           f"{name}(shell) runs a command built from {', '.join(tainted)}",
                                           target, tainted))
            elif isinstance(call.func, ast.Attribute) and call.func.attr in SQL_METHODS:
                query = _first_arg(call, "sql")
                if flow.is_formatted(query):
                    tainted = _ordered(flow.sources(query), target.params)
                    if tainted:
                        found.append(self._hyp("sql-injection", call, f".{call.func.attr}",
                                               f"SQL formatted from {', '.join(tainted)} passed to "
                                               f".{call.func.attr}()", target, tainted))
            elif not guarded_paths and (name in OPEN_SINKS or (
                    isinstance(call.func, ast.Attribute) and call.func.attr in PATH_METHODS
                    and flow.sources(call.func.value))):
                method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
                carrier = call.func.value if isinstance(call.func, ast.Attribute) and name not in OPEN_SINKS \
                    else first
                tainted = _ordered(flow.sources(carrier), target.params)
                if tainted:
                    found.append(self._hyp("path-traversal", call, name or f".{method}",
                                           f"file path built from {', '.join(tainted)} without a containment check",
                                           target, tainted))
            if self.network_modules and any(name == m or name.startswith(m + ".") for m in self.network_modules):
                found.append(self._hyp("network-use", call, name, f"{name}() opens a network connection, which the "
                                       "rubric forbids", target))
        return found

    def _recursion(self, func: ast.FunctionDef | ast.AsyncFunctionDef, target: Target, flow: FunctionTaint,
                   is_method: bool) -> list[Hypothesis]:
        if any(DEPTH_PARAMS.search(p) for p in target.params):
            return []
        for call in (n for n in ast.walk(func) if isinstance(n, ast.Call)):
            callee = dotted(call.func)
            if callee not in (func.name, f"self.{func.name}", f"cls.{func.name}"):
                continue
            carried = set().union(*(flow.sources(a) for a in call.args)) if call.args else set()
            tainted = _ordered(carried, target.params)
            if tainted:
                return [self._hyp("resource-exhaustion", call, callee or func.name,
                                  f"{func.name}() recurses on {', '.join(tainted)} with no depth bound", target,
                                  tainted)]
        return []

    def _randomness(self, func: ast.FunctionDef | ast.AsyncFunctionDef, target: Target,
                    facts: ModuleFacts) -> list[Hypothesis]:
        context = TOKEN_CONTEXT.search(func.name) is not None
        found: list[Hypothesis] = []
        for node in ast.walk(func):
            if not isinstance(node, ast.Assign | ast.Return | ast.AnnAssign):
                continue
            names = [n.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if t is not None
                     for n in ast.walk(t) if isinstance(n, ast.Name)]
            if not (context or any(TOKEN_CONTEXT.search(n) for n in names)):
                continue
            value = node.value
            for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)) if value is not None else ():
                name = facts.resolve(call.func) or ""
                if name in RANDOM_CALLS:
                    found.append(self._hyp("weak-randomness", call, name,
                                           f"{name}() is predictable but makes a secret in {func.name}()", target))
        return found

    def _shared_state(self, func: ast.FunctionDef | ast.AsyncFunctionDef, target: Target,
                      facts: ModuleFacts) -> list[Hypothesis]:
        return shared_state(func, target, threaded=facts.threaded, concurrent=self.concurrent,
                            mutable_globals=facts.mutable_globals,
                            hyp=lambda node, sink, detail: self._hyp("unlocked-shared-state", node, sink, detail,
                                                                     target))

    def _secrets(self, tree: ast.Module) -> list[Hypothesis]:
        found: list[Hypothesis] = []
        for node in ast.walk(tree):
            pairs: list[tuple[str, ast.AST]] = []
            if isinstance(node, ast.Assign):
                pairs = [(dotted(t) or "", node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                pairs = [(dotted(node.target) or "", node.value)]
            elif isinstance(node, ast.keyword) and node.arg:
                pairs = [(node.arg, node.value)]
            for name, value in pairs:
                if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                    continue
                text = value.value
                named = SECRET_NAME.search(name.split(".")[-1]) is not None
                looks_real = len(text) >= MIN_SECRET_LENGTH and " " not in text and not PLACEHOLDER.search(text) \
                    and not text.startswith(("http://", "https://", "/")) and _varied(text)
                if (named and looks_real) or KNOWN_TOKEN.match(text):
                    found.append(Hypothesis(kind="hardcoded-secret", path=self.path, line=value.lineno, sink=name,
                                            detail=f"{name or 'a literal'} holds a hard-coded credential "
                                            f"({len(text)} characters)", target=None))
        lines = {h.line for h in found}
        for node in ast.walk(tree):
            # A literal with a well-known token shape is a secret wherever it sits (dict values, arguments…).
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.lineno not in lines \
                    and KNOWN_TOKEN.match(node.value):
                lines.add(node.lineno)
                found.append(Hypothesis(kind="hardcoded-secret", path=self.path, line=node.lineno, sink="literal",
                                        detail=f"a literal with the shape of a {node.value[:4]}… credential",
                                        target=None))
        return sorted(found, key=lambda h: h.line)


def target_index(path: str, source: str) -> Callable[[int], Target | None]:
    """Parse once; return a lookup from a line to the top-level function or method whose body holds it — how a
    scanner's finding becomes attackable (one parse per file, however many findings it has)."""
    try:
        tree = pyast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return lambda line: None
    spans = sorted((func.lineno, getattr(func, "end_lineno", None) or func.lineno,
                    Target(path=path, qualname=qualname, params=_params(func, is_method), is_method=is_method))
                   for func, is_method, qualname in TaintPass._functions(tree))
    starts = [span[0] for span in spans]

    def at(line: int) -> Target | None:
        # functions and methods do not overlap: only the last one starting at or before the line can hold it
        index = bisect.bisect_right(starts, line) - 1
        return spans[index][2] if index >= 0 and spans[index][1] >= line else None

    return at


def enclosing_target(path: str, source: str, line: int) -> Target | None:
    """The top-level function or method whose body holds ``line``."""
    return target_index(path, source)(line)
