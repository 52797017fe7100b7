"""Changes in a language LogoMesh does not analyse are never failed on facts computed on nothing, end to end.

Real git repositories reviewed by ``review_repository`` with the real sandbox and the real embedding model: a
JavaScript-only and a Go-only change to a project whose tests are JavaScript and Go get no intent penalty (none is
computed from code LogoMesh cannot parse, even under a description of something else). The project's Go tests run
(the Go plug-in, ``tests/sandbox/test_go.py``); its JavaScript tests are named as not run. The JavaScript change is
"not analysed"; the Go change is judged on its tests, and with too few words for R it cannot pass: the verdict is at
most ``neutral``. The hostile twin: a Python-only change that breaks a test of a project that also holds JavaScript
tests still fails, and a mixed change is judged on its Python part with the other language named.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from tests.gitfixture import RepoBuilder

pytestmark = pytest.mark.docker


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


SUM_JS = "function sum(a, b) {\n  return a + b;\n}\n\nmodule.exports = { sum };\n"
SUM_TEST_JS = dedent("""
    const { sum } = require('../src/sum');

    test('adds', () => {
      expect(sum(2, 3)).toBe(5);
    });
    """)
CALC_GO = "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
CALC_TEST_GO = dedent("""
    package calc

    import "testing"

    func TestAdd(t *testing.T) {
    \tif Add(2, 3) != 5 {
    \t\tt.Fatal("Add(2, 3) != 5")
    \t}
    }
    """)
POLYGLOT = {"package.json": '{"name": "tally", "version": "1.0.0", "scripts": {"test": "jest"}}\n',
            "src/sum.js": SUM_JS, "test/sum.test.js": SUM_TEST_JS, "go.mod": "module example.com/tally\n\ngo 1.21\n",
            "calc/calc.go": CALC_GO, "calc/calc_test.go": CALC_TEST_GO, "README.md": "# tally\n\nSums numbers.\n"}
POLYGLOT_CASES: dict[str, dict[str, str | None]] = {
    "js-only": {
        "src/sum.js": SUM_JS.replace("module.exports = { sum };", dedent("""
            function product(values) {
              return values.reduce((total, value) => total * value, 1);
            }

            module.exports = { sum, product };""")),
        "test/sum.test.js": SUM_TEST_JS + "\ntest('multiplies', () => {\n  const { product } = require('../src/sum');"
                                          "\n  expect(product([2, 3, 4])).toBe(24);\n});\n"},
    "go-only": {
        "calc/calc.go": CALC_GO + "\n// Sub returns a - b.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n",
        "calc/calc_test.go": CALC_TEST_GO + "\nfunc TestSub(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n"
                                            "\t\tt.Fatal(\"Sub\")\n\t}\n}\n"},
}
# a description of something else entirely: with code R cannot read, no penalty may come of it
ELSEWHERE = ("Fix the retry budget of the connection pool",
             "The `PoolManager` retried forever when `max_retries` was exhausted during TLS handshakes; it now "
             "raises `MaxRetryError` with the last exception and closes the socket it opened.")

OPS = "def add(a, b):\n    return a + b\n"
OPS_TESTS = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
MIXED = {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "", "tests/test_ops.py": OPS_TESTS,
         "web/sum.js": SUM_JS, "web/sum.test.js": SUM_TEST_JS.replace("../src/sum", "./sum")}
MIXED_CASES: dict[str, dict[str, str | None]] = {
    "breaks-python": {"calc/ops.py": OPS.replace("a + b", "a - b")},
    "python-and-js": {"calc/ops.py": OPS + "\n\ndef sub(minuend, subtrahend):\n    \"\"\"The difference of two "
                                           "numbers.\"\"\"\n    return minuend - subtrahend\n",
                      "tests/test_sub.py": "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
                      "web/sum.js": SUM_JS.replace("a + b", "Number(a) + Number(b)")},
}


def repository(tmp_path_factory: pytest.TempPathFactory, name: str, start: dict[str, str | None],
               cases: dict[str, dict[str, str | None]]) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp(name)
    repo = RepoBuilder(root)
    repo.commit(f"Start {name}", start)
    return root, repo.branches(cases)


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return repository(tmp_path_factory, "polyglot", dict(POLYGLOT), POLYGLOT_CASES)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return repository(tmp_path_factory, "mixed", dict(MIXED), MIXED_CASES)


async def review(root: Path, head: str, title: str, body: str) -> Evaluation:
    settings = load_settings(sandbox="docker", home=root / ".lm", embedding="auto", red_team="off")
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title=title, body=body)
    return evaluation


@pytest.mark.parametrize("name", sorted(POLYGLOT_CASES))
@pytest.mark.parametrize("description", ["honest", "elsewhere"])
async def test_a_change_only_in_javascript_or_go_is_never_failed_on_nothing(
        polyglot: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str,
        description: str) -> None:
    root, heads = polyglot
    title, body = ELSEWHERE if description == "elsewhere" else (
        ("Add product() of a list of numbers", "product multiplies every value of the list, with a test.")
        if name == "js-only" else ("Add Sub to calc", "Sub returns the difference of two ints, with a test."))
    evaluation = await review(root, heads[name], title, body)
    assert evaluation.verdict == "neutral", evaluation.verdict_reasons
    assert evaluation.intent_penalty == 1.0
    assert not [e for e in evaluation.evidence if e.kind == "intent-mismatch"]
    semantic = evaluation.semantic
    assert semantic is not None and semantic.penalty_threshold is None
    language = "JavaScript" if name == "js-only" else "Go"
    if semantic.measured:  # R reads the words; LogoMesh computes no penalty from code it cannot parse
        said = next(e for e in evaluation.evidence if e.id == "semantic.intent-unanalysed")
        assert f"code is in {language}" in said.summary
    # T: the project's Go tests ran at base and head (nothing regressed); its JavaScript tests are not run
    assert evaluation.measured["testing"] is True
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured" and not diff.regressed
    reasons = " | ".join(evaluation.verdict_reasons)
    if language == "JavaScript":
        assert "not analysed: JavaScript" in reasons
    else:  # judged on its Go tests; the 3 words it adds are too few for R, so its tests alone cannot pass it
        assert "Rule of Measurement: Go (2 files) judged on its tests (Go 1.21)" in reasons
        assert "the change's intent (R) was not measured either, so its tests alone cannot pass it" in reasons


async def test_a_python_change_that_breaks_a_test_still_fails_beside_javascript_tests(
        mixed: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = mixed
    evaluation = await review(root, heads["breaks-python"], "Make add() faster",
                              "add() skips a conversion it did not need.")
    assert evaluation.verdict == "fail", evaluation.verdict_reasons
    assert evaluation.measured["testing"] is True
    assert any(r.startswith("Rule of Regression") for r in evaluation.verdict_reasons)


async def test_a_mixed_change_is_judged_on_its_python_and_names_the_rest(
        mixed: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = mixed
    evaluation = await review(root, heads["python-and-js"], "Add sub() and coerce the operands of sum()",
                              "sub(a, b) returns the difference of two numbers, with a test; sum() in the web "
                              "page converts its operands to numbers first.")
    assert evaluation.measured["testing"] is True and evaluation.verdict != "fail", evaluation.verdict_reasons
    assert any("judged on its Python code only; not analysed: JavaScript (1 file) (first: web/sum.js)" in r
               for r in evaluation.verdict_reasons), evaluation.verdict_reasons
