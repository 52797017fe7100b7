"""The Red Agent's taint pass: a string built from many pieces costs linear time, with the same findings.

``old_is_formatted`` is :meth:`FunctionTaint.is_formatted` as it was: at every level of a ``+`` / ``%`` chain it
re-read both operands' sources, then recursed into the left one — O(n²) for n pieces. The new one reads the
chain once. Results must be identical: checked expression by expression and hypothesis by hypothesis on
generated functions, and on the red fixtures. Cost is counted in calls, never timed.
"""

from __future__ import annotations

import ast
import random

import pytest

from checks.red.hypotheses import Hypothesis
from checks.red.taint import FunctionTaint, TaintPass
from tests.red.fixtures import CLEAN, VULNERABLE


def old_is_formatted(self: FunctionTaint, expr: ast.AST | None) -> bool:
    """The reference: the method before the change, kept verbatim but for the recursive call's name."""
    if expr is None:
        return False
    if isinstance(expr, ast.Name):
        return expr.id in self.formatted
    if isinstance(expr, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) and self.sources(v.value) for v in expr.values)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod | ast.Add):
        return bool(self.sources(expr.left) | self.sources(expr.right)) or old_is_formatted(self, expr.left)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
        return any(self.sources(a) for a in [*expr.args, *[k.value for k in expr.keywords]])
    return False


LEAVES = ["name", "other", "'text'", "\"%s\"", "f'{name}'", "f'{other}!'", "f'plain'", "'{}'.format(name)",
          "'{}'.format(3)", "int(name)", "shlex.quote(name)", "request.args['q']", "sys.argv[1]", "query",
          "clean", "input()", "str(other)", "len(name)", "os.path.basename(name)"]


def expression(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.3:
        return rng.choice(LEAVES)
    op = rng.choice(["+", "%", "+", "*", "-"])
    left, right = expression(rng, depth - 1), expression(rng, depth - 2)
    return f"({left} {op} {right})" if rng.random() < 0.3 else f"{left} {op} {right}"


def function(rng: random.Random, index: int) -> str:
    lines = [f"def handler_{index}(name, other, conn):"]
    for _ in range(rng.randint(1, 8)):
        target = rng.choice(["query", "clean", "command", "path"])
        lines.append(f"    {target} = {expression(rng, rng.randint(0, 6))}")
    lines += [f"    conn.execute({expression(rng, 4)})", f"    conn.executemany(query + {expression(rng, 3)})",
              f"    subprocess.run({expression(rng, 3)}, shell=True)", f"    open({expression(rng, 2)})",
              "    return query"]
    return "\n".join(lines)


def module(rng: random.Random) -> str:
    header = "import os\nimport shlex\nimport subprocess\nimport sys\nfrom flask import request\n\n\n"
    return header + "\n\n\n".join(function(rng, i) for i in range(rng.randint(1, 12))) + "\n"


def hypotheses(path: str, source: str, monkeypatch: pytest.MonkeyPatch, *, old: bool) -> list[Hypothesis]:
    if old:
        monkeypatch.setattr(FunctionTaint, "is_formatted", old_is_formatted)
    try:
        return TaintPass(path, source).run()
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("seed", range(40))
def test_generated_functions_give_the_same_hypotheses(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    source = module(random.Random(seed))
    new = hypotheses("shop/gen.py", source, monkeypatch, old=False)
    assert new == hypotheses("shop/gen.py", source, monkeypatch, old=True)


@pytest.mark.parametrize("seed", range(20))
def test_every_expression_is_judged_the_same(seed: int) -> None:
    """With the taint the pass computed, every expression of the module gets the same answer from both."""
    tree = ast.parse(module(random.Random(100 + seed)))
    from checks.red.taint import module_facts

    facts = module_facts(tree)
    for func in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        flow = FunctionTaint(func, ("name", "other", "conn"), facts)
        for node in ast.walk(func):
            if isinstance(node, ast.expr):
                assert flow.is_formatted(node) == old_is_formatted(flow, node), ast.unparse(node)


def test_the_red_fixtures_give_the_same_hypotheses(monkeypatch: pytest.MonkeyPatch) -> None:
    for path, source in [*VULNERABLE.values(), *CLEAN.values()]:
        new = hypotheses(path, source, monkeypatch, old=False)
        assert new == hypotheses(path, source, monkeypatch, old=True)


def long_concatenation(pieces: int, tainted_at: int | None = None) -> str:
    parts = [f"'part {i} '" if i != tainted_at else "name" for i in range(pieces)]
    return f"def build(name, conn):\n    query = {' + '.join(parts)}\n    conn.execute(query)\n"


def count_sources_calls(source: str, monkeypatch: pytest.MonkeyPatch, *, old: bool) -> tuple[int, list[Hypothesis]]:
    calls = 0
    original = FunctionTaint.sources

    def counting(self: FunctionTaint, expr: ast.AST | None) -> set[str]:
        nonlocal calls
        calls += 1
        return original(self, expr)

    monkeypatch.setattr(FunctionTaint, "sources", counting)
    if old:
        monkeypatch.setattr(FunctionTaint, "is_formatted", old_is_formatted)
    try:
        found = TaintPass("shop/sql.py", source).run()
    finally:
        monkeypatch.undo()
    return calls, found


def test_a_long_concatenation_is_read_once_per_level_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old method called ``sources`` twice per piece of the chain (each call reading the whole prefix); the
    new one a fixed number of times, whatever the length."""
    short_calls, short = count_sources_calls(long_concatenation(50), monkeypatch, old=False)
    long_calls, long = count_sources_calls(long_concatenation(400), monkeypatch, old=False)
    assert long_calls == short_calls and short == long == []
    old_calls, old = count_sources_calls(long_concatenation(400), monkeypatch, old=True)
    assert old == long and old_calls > 10 * long_calls
    # tainted anywhere in the chain: still found, and the same as before
    for where in (0, 200, 399):
        _, new_found = count_sources_calls(long_concatenation(400, tainted_at=where), monkeypatch, old=False)
        _, old_found = count_sources_calls(long_concatenation(400, tainted_at=where), monkeypatch, old=True)
        assert new_found == old_found and [h.kind for h in new_found] == ["sql-injection"]
