"""Parsing Python from several threads at once: never CPython's ``AST constructor recursion depth mismatch``.

The harness below makes the interpreter switch threads inside a parse (a cyclic collection running finalizers that
release the GIL); with a bare ``ast.parse`` it raises that ``SystemError`` here (CPython 3.11, gh-106905) a few
times in a hundred parses, as one did in a real review (markupsafe#115).
"""

from __future__ import annotations

import ast
import gc
import threading
import time
from pathlib import Path

from checks import pyast

SOURCE = (Path(__file__).resolve().parents[2] / "checks" / "rationale.py").read_text(encoding="utf-8")


class Finalised:
    def __del__(self) -> None:
        time.sleep(0)  # gives the GIL away from inside a collection


def test_parses_in_several_threads_while_collections_switch_threads_never_fail() -> None:
    errors: list[str] = []
    trees: list[int] = []

    def churn() -> None:
        for _ in range(200_000):
            a, b = Finalised(), Finalised()
            a.other, b.other = b, a  # type: ignore[attr-defined]  # a cycle: collected by the cyclic collector

    def parse() -> None:
        for _ in range(40):
            try:
                trees.append(len(pyast.parse(SOURCE).body))
            except SystemError as exc:
                errors.append(str(exc))

    threshold = gc.get_threshold()
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=parse) for _ in range(3)] + [threading.Thread(target=churn)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*threshold)
    assert errors == []
    assert len(trees) == 120 and len(set(trees)) == 1


def test_an_expression_parses_for_literal_eval() -> None:
    assert ast.literal_eval(pyast.parse_expression("{'a': (1, 2.5)}")) == {"a": (1, 2.5)}
    assert isinstance(pyast.parse("x = 1").body[0], ast.Assign)
