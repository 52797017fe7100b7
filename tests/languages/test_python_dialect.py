"""Python 2 source and syntax newer than this interpreter are unread code, never "code that does not parse"
(PyYAML keeps a Python 2 tree in ``lib/`` beside ``lib3/``: its honest PRs were vetoed for it); a real syntax
error still is one."""

from __future__ import annotations

import pytest

from checks.chief_justice import judge_case
from checks.court import CourtParts, review
from checks.languages import python_dialect
from checks.models import Case, ChangedFile, Evidence, Location
from rubric import load_rubric
from tests.core.test_chief_justice import GOOD, PY_FILE, brief, measured

RUBRIC = load_rubric()
PY2_CONSTRUCTOR = '''import sys

class Constructor(object):
    def construct(self, node):
        try:
            value = node.value
        except KeyError, exc:
            print >>sys.stderr, "no value", exc
            raise
        exec "x = 1" in {}
        return value
'''
NEWER = "type Pair = tuple[int, int]\n\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n"
BROKEN = "def construct(self, node:\n    return node.value\n"
PY3 = '"""Helpers."""\n\n\ndef double(x):\n    return 2 * x\n'


def test_python_2_and_newer_syntax_are_dialects_and_a_syntax_error_is_not() -> None:
    assert python_dialect.available()
    assert python_dialect.dialect(PY2_CONSTRUCTOR, "multiple exception types must be parenthesized") == "Python 2"
    assert python_dialect.dialect("print 'x'\n", "invalid syntax") == "Python 2"
    assert python_dialect.dialect(NEWER, "invalid syntax") == f"Python newer than {python_dialect.here()}"
    for broken in (BROKEN, "x = (1,\n", "class A:\n    def f(self)\n        pass\n", "def f(:\n  pass\n"):
        assert python_dialect.dialect(broken, "invalid syntax") is None, broken


def case_of(*files: tuple[str, str]) -> Case:
    changed = tuple(ChangedFile(path=path, status="modified", added_lines=(1, 2, 3), content=text)
                    for path, text in files)
    return Case(base_sha="a" * 40, head_sha="b" * 40, diff="", files=changed, title="Fix the constructor",
                body="Construct the value of a node in both the Python 2 and the Python 3 trees.")


async def evaluate(case: Case) -> tuple[list[Evidence], str, tuple[str, ...], dict[str, bool]]:
    result = await review(case, RUBRIC, CourtParts(sandbox_missing="none", embedder_missing="none",
                                                   red_team_missing="none"))
    kills = tuple(o.criterion_id for o in result.opinions if o.verdict == "KILL")
    return list(result.evidence), result.verdict, kills, result.measured


async def test_a_python_2_file_is_named_unread_never_vetoed_as_a_syntax_error() -> None:
    evidence, verdict, kills, measured_parts = await evaluate(
        case_of(("lib/yaml/constructor.py", PY2_CONSTRUCTOR), ("lib3/yaml/helpers.py", PY3)))
    assert not [e for e in evidence if e.kind == "syntax-error"]
    unread = [e for e in evidence if e.kind == "code-dialect"]
    assert [(e.location.path if e.location else None, e.severity, e.facts["dialect"]) for e in unread] == [
        ("lib/yaml/constructor.py", "low", "Python 2")]
    assert kills == ()
    assert verdict != "fail" and measured_parts["architecture"]  # the Python 3 file was read


async def test_a_change_of_only_unread_python_does_not_claim_its_architecture_measured() -> None:
    evidence, verdict, kills, measured_parts = await evaluate(case_of(("pkg/new.py", NEWER)))
    assert [e.facts["dialect"] for e in evidence if e.kind == "code-dialect"] == [
        f"Python newer than {python_dialect.here()}"]
    assert kills == () and not measured_parts["architecture"]
    assert verdict == "neutral"


async def test_hostile_a_real_syntax_error_is_still_vetoed() -> None:
    evidence, _, kills, _ = await evaluate(case_of(("lib3/yaml/constructor.py", BROKEN)))
    assert [e.kind for e in evidence if e.kind in ("syntax-error", "code-dialect")] == ["syntax-error"]
    assert "architecture" in kills


@pytest.mark.parametrize("dialect", ["Python 2", "Python newer than 3.11"])
def test_unread_python_keeps_an_otherwise_passing_change_from_pass(dialect: str) -> None:
    unread = Evidence(id="repo.dialect:lib/old.py", detective="repo", kind="code-dialect", severity="low",
                      summary="lib/old.py was not analysed", location=Location(path="lib/old.py"),
                      facts={"reason": f"{dialect} code", "python": True, "dialect": dialect})
    old = ChangedFile(path="lib/old.py", status="modified", added_lines=(1,), content=PY2_CONSTRUCTOR)
    assert judge_case(RUBRIC, brief(files=(PY_FILE, old), diff=measured()), GOOD).verdict == "pass"
    held = judge_case(RUBRIC, brief([unread], files=(PY_FILE, old), diff=measured()), GOOD)
    assert held.verdict == "neutral"
    assert any(r.startswith("Rule of Measurement: changed Python code was not analysed: lib/old.py") and dialect in r
               for r in held.verdict_reasons)
