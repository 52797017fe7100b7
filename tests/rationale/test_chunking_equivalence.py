"""R's chunking in linear time gives exactly what the old per-line scan of every function gave.

``old_innermost`` is the algorithm as it was (every scope checked for every added line, O(F × L)); the sweep
in :func:`checks.rationale.innermost_scopes` must choose the same scope for every line — the shortest span
holding it, the last listed on a tie — and ``build_code_chunks`` must return the same chunks, on generated
files of many shapes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from checks import rationale
from checks.models import Case
from checks.rationale import CodeText, _Scope, build_code_chunks, innermost_scopes, python_scopes
from rubric import Rubric, load_rubric
from tests.rationale.cases import case_from_files


def old_innermost(scopes: Sequence[_Scope], line: int) -> _Scope | None:
    """The reference: the algorithm before the sweep, kept verbatim."""
    best: _Scope | None = None
    for scope in scopes:
        if scope.start <= line <= scope.end and (best is None or scope.end - scope.start <= best.end - best.start):
            best = scope
    return best


def old_mapping(scopes: Sequence[_Scope], lines: Sequence[int]) -> dict[int, _Scope]:
    return {line: found for line in lines if (found := old_innermost(scopes, line)) is not None}


WORDS = ["total", "discount", "shipping", "order", "invoice", "customer", "parcel", "zone", "weight", "price",
         "tax", "refund", "basket", "coupon", "currency", "report"]


def generated_module(rng: random.Random, blocks: int) -> str:
    """Valid Python with classes, methods, nested functions and classes, decorators, one-line defs and
    module-level code between them."""
    lines: list[str] = ['"""A generated module."""', "import functools", ""]

    def word() -> str:
        return rng.choice(WORDS)

    def body(indent: str, depth: int) -> None:
        for _ in range(rng.randint(1, 4)):
            kind = rng.random()
            if depth < 3 and kind < 0.2:
                function(indent, depth + 1)
            elif depth < 3 and kind < 0.3:
                klass(indent, depth + 1)
            elif kind < 0.4:
                lines.append(f"{indent}def {word()}_{len(lines)}(x): return x + 1  # one line")
            elif kind < 0.5:
                lines.append(f"{indent}class {word().title()}{len(lines)}: {word()} = {len(lines)}")
            else:
                lines.append(f"{indent}{word()}_{word()} = compute_{word()}({word()}, {len(lines)})")

    def function(indent: str, depth: int) -> None:
        if rng.random() < 0.3:
            lines.append(f"{indent}@functools.lru_cache(maxsize={rng.randint(1, 64)})")
        if rng.random() < 0.2:
            lines.append(f"{indent}@staticmethod")
        lines.append(f"{indent}def {word()}_{word()}_{len(lines)}(self, {word()}):")
        if rng.random() < 0.5:
            lines.append(f'{indent}    """Compute the {word()} of the {word()} for each {word()}."""')
        body(indent + "    ", depth)
        lines.append(f"{indent}    return {word()}")

    def klass(indent: str, depth: int) -> None:
        lines.append(f"{indent}class {word().title()}{word().title()}{len(lines)}:")
        if rng.random() < 0.5:
            lines.append(f'{indent}    """The {word()} of a {word()}."""')
        body(indent + "    ", depth)

    for _ in range(blocks):
        choice = rng.random()
        if choice < 0.45:
            function("", 0)
        elif choice < 0.8:
            klass("", 0)
        else:
            lines.append(f"{word().upper()}_{len(lines)} = {rng.randint(0, 99)}")
        if rng.random() < 0.5:
            lines.append("")
    return "\n".join(lines) + "\n"


def added_subset(rng: random.Random, count: int) -> list[int]:
    style = rng.choice(["all", "random", "runs"])
    if style == "all":
        return list(range(1, count + 1))
    if style == "random":
        return sorted(rng.sample(range(1, count + 1), k=rng.randint(1, count)))
    chosen: set[int] = set()
    for _ in range(rng.randint(1, 6)):
        start = rng.randint(1, count)
        chosen.update(range(start, min(count, start + rng.randint(1, 30)) + 1))
    return sorted(chosen)


@pytest.mark.parametrize("seed", range(30))
def test_the_sweep_picks_the_scope_the_old_scan_picked(seed: int) -> None:
    rng = random.Random(seed)
    source = generated_module(rng, rng.randint(1, 40))
    scopes = python_scopes(source)
    assert scopes is not None
    count = len(source.splitlines())
    lines = list(range(0, count + 3))  # also lines outside the file and before the first scope
    got, expected = innermost_scopes(scopes, lines), old_mapping(scopes, lines)
    assert got.keys() == expected.keys()
    assert all(got[line] is expected[line] for line in expected)  # the same object, not an equal one


@pytest.mark.parametrize("seed", range(40))
def test_the_sweep_matches_on_arbitrary_spans_with_ties_and_overlaps(seed: int) -> None:
    """Spans no parser produces too — equal spans, partial overlaps, shared starts — must tie-break the same."""
    rng = random.Random(1000 + seed)
    scopes = []
    for i in range(rng.randint(0, 60)):
        start = rng.randint(1, 80)
        end = start + rng.choice([0, 0, 1, 2, 3, rng.randint(0, 40)])
        scopes.append(_Scope(f"s{i}", start, end, None))
    lines = [rng.randint(0, 130) for _ in range(rng.randint(0, 200))]  # unsorted, with repeats
    got, expected = innermost_scopes(scopes, lines), old_mapping(scopes, lines)
    assert got.keys() == expected.keys()
    assert all(got[line] is expected[line] for line in expected)


def chunks_with(monkeypatch: pytest.MonkeyPatch, case: Case, rubric: Rubric, intent: str, *,
                old: bool) -> CodeText:
    if old:
        monkeypatch.setattr(rationale, "innermost_scopes", old_mapping)
    try:
        return build_code_chunks(case, rubric, intent)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("seed", range(12))
def test_build_code_chunks_is_unchanged(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    rubric = load_rubric()
    files = {f"shop/module_{i}.py": generated_module(rng, rng.randint(5, 60)) for i in range(rng.randint(1, 4))}
    files["docs/notes.md"] = "Shipping zones and parcel weights.\n" * rng.randint(1, 5)
    files["shop/broken.py"] = "def broken(:\n    total = discount\n"  # does not parse: one stream
    case = case_from_files(files, "Compute the shipping cost", "Shipping by parcel weight and zone")
    # only some lines added: the diff of a change to existing files
    case = case.model_copy(update={"files": tuple(
        f.model_copy(update={"status": "modified", "added_lines": tuple(added_subset(rng, len(f.added_lines)))})
        for f in case.files)})
    case = case.model_copy(update={"diff": ""})  # the added lines then come from the files' content
    intent = "compute the shipping cost of a parcel by weight and zone"
    new = build_code_chunks(case, rubric, intent)
    old = chunks_with(monkeypatch, case, rubric, intent, old=True)
    assert new == old
    assert new.total_chunks > 0


def test_one_large_file_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    rubric = load_rubric()
    source = "\n".join(f"def shipping_cost_{i}(parcel, zone):\n    '''Cost of a parcel in zone {i}.'''\n"
                       f"    return parcel.weight_kg * zone.price_per_kg + {i}\n" for i in range(2000))
    case = case_from_files({"shop/shipping.py": source}, "Shipping", "Shipping cost by weight and zone")
    new = build_code_chunks(case, rubric, "shipping cost")
    assert new == chunks_with(monkeypatch, case, rubric, "shipping cost", old=True)
    assert new.total_chunks > rubric.rationale.max_chunks
