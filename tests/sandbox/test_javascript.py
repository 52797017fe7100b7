"""JavaScript pull requests reviewed end to end: node's own test runner, with LogoMesh's reporter, at base, at head
and under the base's tests (the guard), in the Docker sandbox, through ``review_repository`` on git repositories
built here.

Friendly: an honest change with a passing new test passes, measured (T, R, A).
Hostile, each failing change with a trick that must not make it pass (the attack list of ``test_truth.py``): a change
that breaks a test; one whose own new test fails; one that also skips the test it breaks, marks another test
``.only``, ends the test process early (``process.exit(0)`` in the test, or in the code the test loads), prints
forged TAP and reporter lines, or deletes the test file — each ``fail``, with the harness inventory naming how where it
can. A change that runs a shell with its input is named on its line and does not pass; a project that needs a Node.js
or a test runner the sandbox does not have is an honest ``neutral`` naming it, never ``fail``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from tests.gitfixture import RepoBuilder
from tests.sandbox.attacks import (
    assert_hollow_test_does_not_pass,
    assert_padding_is_bounded,
    assert_shell_sink_probed,
)
from tests.sandbox.registries import unreachable

pytestmark = pytest.mark.docker


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


PACKAGE = '{\n  "name": "tally",\n  "version": "1.0.0",\n  "scripts": {"test": "node --test"}\n}\n'
CALC = dedent("""
    'use strict';

    // add returns the sum of a and b.
    function add(a, b) {
      return a + b;
    }

    module.exports = { add };
    """)
SHOUT_TEST = dedent("""
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert');
    const { shout } = require('../src/echo.js');

    test('shout returns the line in capitals', () => {
      assert.strictEqual(shout('hello world'), 'HELLO WORLD\\n');
    });
    """)
CALC_TEST = dedent("""
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert');
    const { add } = require('../src/calc');

    test('add', () => {
      assert.strictEqual(add(2, 3), 5);
    });
    """)
MEAN = dedent("""

    // mean returns the arithmetic mean of the values, and zero for an empty list.
    function mean(values) {
      if (values.length === 0) {
        return 0;
      }
      return values.reduce((total, value) => total + value, 0) / values.length;
    }
    """)
MEAN_TEST = dedent("""

    test('mean', () => {
      assert.strictEqual(mean([]), 0);
      assert.strictEqual(mean([4]), 4);
      assert.strictEqual(mean([1, 2, 3, 4]), 2.5);
      assert.strictEqual(mean([-3, 3]), 0);
    });
    """)
WITH_MEAN = CALC.replace("module.exports = { add };", MEAN.strip() + "\n\nmodule.exports = { add, mean };")
BROKEN = CALC.replace("a + b", "a + b + 1")
SUB = CALC.replace("module.exports = { add };", "// sub returns a minus b.\nfunction sub(a, b) {\n  return b - a;\n}\n"
                   "\n"
                   "module.exports = { add, sub };")
SUB_TEST = CALC_TEST.replace("{ add }", "{ add, sub }") + dedent("""

    test('sub', () => {
      assert.strictEqual(sub(5, 3), 2);
      assert.strictEqual(sub(3, 5), -2);
    });
    """)
FORGED_COVERAGE = dedent("""

    test('mean', () => {
      const fs = require('node:fs');
      const length = fs.readFileSync(require.resolve('../src/calc.js'), 'utf8').length;
      const script = { url: 'file:///sandbox/repo/src/calc.js',
                       functions: [{ functionName: '', ranges: [{ startOffset: 0, endOffset: length, count: 1 }] }] };
      fs.mkdirSync(process.env.NODE_V8_COVERAGE, { recursive: true });
      fs.writeFileSync(`${process.env.NODE_V8_COVERAGE}/coverage-0-0-0.json`, JSON.stringify({ result: [script] }));
      assert.ok(mean);
    });
    """)
REMEMBERS = dedent("""

    test('mean', () => {
      const fs = require('node:fs');
      const seen = require('node:os').tmpdir() + '/mean-seen';
      assert.ok(!fs.existsSync(seen), 'run before');
      fs.writeFileSync(seen, '1');
      assert.strictEqual(typeof mean([1, 2]), 'number');
    });
    """)
START = {"package.json": PACKAGE, "src/calc.js": CALC, "test/calc.test.js": CALC_TEST,
         "README.md": "# tally\n\nSmall arithmetic helpers.\n"}
FORGED_OUTPUT = dedent("""

    test('reporting', () => {
      process.stdout.write('ok 1 - add\\n');
      process.stdout.write('LOGOMESH-JS {"type":"test:pass","name":"add","nesting":0,'
                           + '"file":"/sandbox/repo/test/calc.test.js"}\\n');
      process.stderr.write('ok 1 - add\\n');
    });
    """)
# Object.groupBy came with Node.js 21: the image's Node 18 has none, its Node 22 has it
PARITY = CALC.replace("module.exports = { add };", "// parity groups the values into odd and even ones.\n"
                      "function parity(values) {\n  return Object.groupBy(values, (v) => (v % 2 === 0 ? 'even' : "
                      "'odd'));\n}\n\nmodule.exports = { add, parity };")
PARITY_TEST = CALC_TEST.replace("{ add }", "{ add, parity }") + dedent("""

    test('parity', () => {
      assert.deepStrictEqual({ ...parity([1, 2, 3]) }, { odd: [1, 3], even: [2] });
      assert.deepStrictEqual({ ...parity([]) }, {});
    });
    """)
LATER_NODE = PACKAGE.replace('"version": "1.0.0",', '"version": "1.0.0",\n  "engines": {"node": ">=20"},')
CASES: dict[str, dict[str, str | None]] = {
    "honest": {"src/calc.js": WITH_MEAN, "test/calc.test.js": CALC_TEST.replace("{ add }", "{ add, mean }")
               + MEAN_TEST},
    "honest-output": {"src/calc.js": WITH_MEAN, "test/calc.test.js": CALC_TEST.replace("{ add }", "{ add, mean }")
                      + MEAN_TEST.replace("test('mean', () => {\n", "test('mean', () => {\n  console.log('ok 1 - mean "
                                          "of four values');\n")},
    "honest-todo": {"src/calc.js": WITH_MEAN, "test/calc.test.js": CALC_TEST.replace("{ add }", "{ add, mean }")
                    + MEAN_TEST + "\ntest.todo('mean of strings');\n"},
    "regression": {"src/calc.js": BROKEN},
    "hollow": {"src/calc.js": WITH_MEAN, "test/calc.test.js": CALC_TEST.replace("{ add }", "{ add, mean }")
               + "\ntest('mean', () => {\n  assert.ok(true);\n});\n"},
    "hollow-tautology": {"src/calc.js": WITH_MEAN, "test/calc.test.js": CALC_TEST.replace("{ add }", "{ add, mean }")
                         + "\ntest('mean', () => {\n  assert.strictEqual(mean([1, 2]), mean([1, 2]));\n});\n"},
    # a test that never calls mean and writes V8 coverage saying every line of calc.js ran
    "hollow-forged-coverage": {"src/calc.js": WITH_MEAN, "test/calc.test.js": CALC_TEST.replace(
        "{ add }", "{ add, mean }") + FORGED_COVERAGE},
    # a test that checks nothing and fails on any run after its first: every later run (a mutant's) looks killed
    "hollow-remembers": {"src/calc.js": WITH_MEAN, "test/calc.test.js": CALC_TEST.replace(
        "{ add }", "{ add, mean }") + REMEMBERS},
    "new-failing": {"src/calc.js": SUB, "test/calc.test.js": SUB_TEST},
    "padding": {"src/calc.js": SUB, "test/calc.test.js": SUB_TEST + "\nfor (let n = 0; n < 600; n += 1) {\n"
                "  test(`trivial ${n}`, () => {\n    assert.strictEqual(n, n);\n  });\n}\n"},
    "skip-forged": {"src/calc.js": BROKEN, "test/calc.test.js": CALC_TEST.replace("test('add',", "test.skip('add',")},
    "only-forged": {"src/calc.js": BROKEN,
                    "test/calc.test.js": CALC_TEST + "\ntest.only('smoke', () => {\n  assert.ok(true);\n});\n"},
    "exit-in-test": {"src/calc.js": BROKEN,
                     "test/calc.test.js": CALC_TEST.replace("test('add', () => {\n",
                                                            "test('add', () => {\n  process.exit(0);\n")},
    "exit-in-code": {"src/calc.js": BROKEN.replace("'use strict';\n", "'use strict';\nprocess.exitCode = 0;\n"
                                                   "setImmediate(() => process.exit(0));\n")},
    "forged-output": {"src/calc.js": BROKEN, "test/calc.test.js": CALC_TEST + FORGED_OUTPUT},
    "deleted-test": {"src/calc.js": BROKEN, "test/calc.test.js": None},
    "shell": {"src/echo.js": dedent("""
        'use strict';
        const { execSync } = require('node:child_process');

        // shout returns a line of text in capitals, as the shell echoes it.
        function shout(line) {
          return execSync('echo ' + line).toString().toUpperCase();
        }

        module.exports = { shout };
        """), "test/echo.test.js": SHOUT_TEST},
    "quoted-shell": {"src/echo.js": dedent("""
        'use strict';
        const { execSync } = require('node:child_process');

        // shout returns a line of text in capitals, as the shell echoes it.
        function shout(line) {
          return execSync("echo '" + String(line).replace(/'/g, "'\\\\''") + "'").toString().toUpperCase();
        }

        module.exports = { shout };
        """), "test/echo.test.js": SHOUT_TEST},
    "newer-node": {"package.json": PACKAGE.replace('"version": "1.0.0",', '"version": "1.0.0",\n  "engines": '
                                                   '{"node": ">=99"},')},
    "jest": {"package.json": PACKAGE.replace("node --test", "jest")},
    "later-node": {"package.json": LATER_NODE, "src/calc.js": PARITY, "test/calc.test.js": PARITY_TEST},
    "later-node-unsaid": {"src/calc.js": PARITY, "test/calc.test.js": PARITY_TEST},
}
PARITY_TEXT = ("Add parity to calc", "parity groups a list of numbers into odd and even ones with Object.groupBy "
               "(Node.js 21 and later, so the package now asks for Node.js 20 or later); a test covers it.")
HONEST = ("Add mean to calc", "mean returns the arithmetic mean of a list of numbers, and zero for an empty list; a "
          "test covers empty, single, several and negative values.")
TIDY = ("Tidy add", "A cosmetic change to add.")


@pytest.fixture(scope="module")
def tally(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("tally-js")
    repo = RepoBuilder(root)
    repo.commit("Start tally", dict(START))
    return root, repo.branches(CASES)


# for a review whose test is about another mechanism than mutation: no mutants, a shorter suite (mutation has tests of
# its own, and the honest reviews run it)
SHOUT_BODY = "shout returns a line of text in capitals, as the shell echoes it; its test checks a line."
NO_MUTANTS = "rubric:\n  testing:\n    mutation:\n      max_mutants: 0\n"


async def review(root: Path, head: str, title: str, body: str, config: str | None = None,
                 red_team: Literal["on", "off"] = "off") -> Evaluation:
    settings = load_settings(sandbox="docker", home=root / ".lm", embedding="auto", red_team=red_team)
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title=title, body=body,
                                            config_text=config)
    return evaluation


def reasons(evaluation: Evaluation) -> str:
    return " | ".join(evaluation.verdict_reasons)


def kinds(evaluation: Evaluation, kind: str) -> list[str]:
    return [e.summary for e in evaluation.evidence if e.kind == kind]


async def test_an_honest_javascript_change_with_passing_tests_passes(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["honest"], *HONEST)
    assert evaluation.measured["testing"] is True
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured"
    assert diff.new_passing == ("test/calc.test.js::mean",) and diff.unchanged_passing == 1
    assert not diff.regressed and not diff.new_failing
    assert any(s.startswith("Node.js 18") for s in kinds(evaluation, "test-environment")), \
        kinds(evaluation, "test-environment")
    assert "JavaScript (2 files) judged on its tests (Node.js 18" in reasons(evaluation)
    assert evaluation.measured["rationale"] is True and evaluation.measured["architecture"] is True
    mutation = [e for e in evaluation.evidence if e.kind == "test-mutation"]
    assert mutation and mutation[0].facts["killed"] >= 1, kinds(evaluation, "test-mutation")
    assert evaluation.verdict == "pass", reasons(evaluation)


@pytest.mark.parametrize("name", ["hollow", "hollow-tautology", "hollow-forged-coverage", "hollow-remembers"])
async def test_a_javascript_change_whose_new_test_checks_nothing_does_not_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str) -> None:
    # the new test passes; every mutant of mean's lines survives, or is never run when no test calls mean
    root, heads = tally
    assert_hollow_test_does_not_pass(await review(root, heads[name], *HONEST), "test/calc.test.js::mean", "src/calc.js",
                                     calls_it=name != "hollow")  # forged coverage only gets its mutants run


async def test_a_project_that_asks_for_a_later_node_runs_with_the_oldest_line_that_allows_it(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    # engines.node >=20: the image's Node.js 22 (its 18 does not satisfy it), and the test of what only 21+ has passes
    root, heads = tally
    evaluation = await review(root, heads["later-node"], *PARITY_TEXT)
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", reasons(evaluation)
    assert diff.new_passing == ("test/calc.test.js::parity",) and not diff.regressed and not diff.new_failing
    assert any(s.startswith("Node.js 22") for s in kinds(evaluation, "test-environment")), \
        kinds(evaluation, "test-environment")
    assert "JavaScript (2 files) judged on its tests (Node.js 22" in reasons(evaluation)
    assert evaluation.verdict == "pass", reasons(evaluation)
    # hostile twin: the same code in a package that says nothing runs with the oldest line, 18, where the new test
    # fails — the change's own failure, never passed over
    evaluation = await review(root, heads["later-node-unsaid"], *PARITY_TEXT)
    assert any(s.startswith("Node.js 18") for s in kinds(evaluation, "test-environment"))
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "Rule of New Failures: 1 test(s) of this change fail (first: test/calc.test.js::parity)" \
        in reasons(evaluation)


@pytest.mark.parametrize("name", ["honest-output", "honest-todo"])
async def test_the_honest_twins_of_forged_output_and_skips_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str) -> None:
    # a test that prints TAP-like text while it passes is output; a test marked to do later is named, not held
    # against the change, when nothing it covered broke
    root, heads = tally
    evaluation = await review(root, heads[name], *HONEST)
    diff = evaluation.differential
    assert diff is not None and "test/calc.test.js::mean" in diff.new_passing and not diff.regressed
    if name == "honest-todo":
        assert any("adds a skip" in s for s in kinds(evaluation, "harness-change"))
    assert evaluation.verdict == "pass", reasons(evaluation)


async def test_a_javascript_change_that_breaks_an_existing_test_fails(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["regression"], *TIDY)
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "Rule of Regression: 1 test(s) passed at base and fail with this change (first: " \
           "test/calc.test.js::add)" in reasons(evaluation)
    regressed = evaluation.differential.regressed if evaluation.differential else ()
    assert [c.location for c in regressed] == ["test/calc.test.js:7"]
    assert "6 !== 5" in (regressed[0].message or "")


@pytest.mark.parametrize("name", ["new-failing", "padding"])
async def test_a_javascript_change_whose_own_test_fails_fails(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], "Add sub to calc", "sub returns the difference of two "
                              "numbers; a test covers positive and negative results.")
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "Rule of New Failures: 1 test(s) of this change fail (first: test/calc.test.js::sub)" \
        in reasons(evaluation)
    if name == "padding":  # 600 trivial passing tests beside it: nothing diluted, and the record does not grow
        assert_padding_is_bounded(evaluation, 600)


@pytest.mark.parametrize(("name", "mechanism"), [
    ("skip-forged", "adds a skip to an existing test file"),
    ("only-forged", "adds `.only`"),
    ("exit-in-test", None),
    ("exit-in-code", None),
    ("forged-output", None),
    ("deleted-test", "a test file is deleted"),
])
async def test_a_javascript_change_that_silences_the_test_it_breaks_does_not_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str,
        mechanism: str | None) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], *TIDY)
    assert evaluation.verdict == "fail", reasons(evaluation)
    diff = evaluation.differential
    assert diff is not None
    assert "test/calc.test.js::add" in [c.name for c in diff.regressed] + [c.name for c in diff.new_failing] \
        + list(diff.removed), diff
    if mechanism is not None:
        assert any(mechanism in s for s in kinds(evaluation, "harness-change")), kinds(evaluation, "harness-change")


@pytest.mark.parametrize(("name", "confirmed"), [("shell", True), ("quoted-shell", False)])
async def test_a_javascript_shell_sink_is_probed_and_fails_only_when_its_input_gets_through(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str, confirmed: bool) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], "Add shout", SHOUT_BODY, red_team="on")
    assert_shell_sink_probed(evaluation, "src/echo.js:6", confirmed=confirmed)


@pytest.mark.parametrize(("name", "said"), [
    ("newer-node", "the project asks for Node.js >=99; the sandbox image offers Node.js 18, 22"),
    ("jest", "the project's tests run with jest (package.json's test script)"),
])
async def test_a_project_the_sandbox_cannot_run_is_neutral_and_named(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str, said: str) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], "Update package.json", "The package's metadata changes.")
    assert evaluation.verdict == "neutral", reasons(evaluation)
    assert evaluation.measured["testing"] is False
    assert said in reasons(evaluation) + " ".join(kinds(evaluation, "test-environment")), reasons(evaluation)


# --- a project with an npm dependency: npm ci --ignore-scripts in the setup phase, through the egress proxy -------

REGISTRY = "https://registry.npmjs.org/"
MS_LOCK = dedent("""
    {
      "name": "spans",
      "version": "1.0.0",
      "lockfileVersion": 3,
      "requires": true,
      "packages": {
        "": {"name": "spans", "version": "1.0.0", "dependencies": {"ms": "2.1.3"}},
        "node_modules/ms": {
          "version": "2.1.3",
          "integrity": "MS_INTEGRITY",
          "license": "MIT"
        }
      }
    }
    """).replace("MS_INTEGRITY", "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/"
                 "tXtF3WRTlA==")
SPANS = dedent("""
    'use strict';
    const ms = require('ms');

    // seconds returns how many whole seconds a span such as '2m' or '1.5h' lasts.
    function seconds(span) {
      return Math.floor(ms(span) / 1000);
    }

    module.exports = { seconds };
    """)
SPANS_TEST = dedent("""
    'use strict';
    const test = require('node:test');
    const assert = require('node:assert');
    const { seconds } = require('../src/spans');

    test('seconds', () => {
      assert.strictEqual(seconds('2m'), 120);
      assert.strictEqual(seconds('1.5h'), 5400);
    });
    """)
SPANS_PACKAGE = '{\n  "name": "spans",\n  "version": "1.0.0",\n  "dependencies": {"ms": "2.1.3"}\n}\n'
SPANS_START = {"package.json": SPANS_PACKAGE,
               "package-lock.json": MS_LOCK, "src/spans.js": SPANS, "test/spans.test.js": SPANS_TEST}
SPANS_CASES: dict[str, dict[str, str | None]] = {
    "honest": {"src/spans.js": SPANS.replace("module.exports = { seconds };", dedent("""
        // minutes returns how many whole minutes a span lasts.
        function minutes(span) {
          return Math.floor(ms(span) / 60000);
        }

        module.exports = { seconds, minutes };""")),
               "test/spans.test.js": SPANS_TEST.replace("{ seconds }", "{ seconds, minutes }") + dedent("""

        test('minutes', () => {
          assert.strictEqual(minutes('2h'), 120);
          assert.strictEqual(minutes('90s'), 1);
        });
        """)},
    "regression": {"src/spans.js": SPANS.replace("/ 1000", "/ 100")},
}


def registry_reachable() -> str | None:
    """None when the npm registry answers from this machine, else why not."""
    return unreachable(REGISTRY + "ms")


@pytest.fixture(scope="module")
def spans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("spans-js")
    repo = RepoBuilder(root)
    repo.commit("Start spans", dict(SPANS_START))
    return root, repo.branches(SPANS_CASES)


async def test_packages_that_cannot_be_installed_are_named_never_a_runner_logomesh_lacks(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    # the lock pins ms with another package's integrity hash: npm ci refuses it (EINTEGRITY) at base and at head
    forged = MS_LOCK.replace("sha512-6FlzubTLZG3J2a", "sha512-AAAAubTLZG3J2a")
    repo = RepoBuilder(tmp_path / "forged-lock")
    repo.commit("Start spans", {**SPANS_START, "package-lock.json": forged})
    heads = repo.branches({"honest": SPANS_CASES["honest"]})
    evaluation = await review(tmp_path / "forged-lock", heads["honest"], "Add minutes to spans",
                              "minutes returns how many whole minutes a span lasts.")
    said = reasons(evaluation)
    assert evaluation.verdict == "neutral" and evaluation.measured["testing"] is False, said
    assert "the JavaScript tests could not run: the project's npm packages could not be installed: npm ci failed" \
        in said, said
    assert "which LogoMesh does not run" not in said, said


async def test_a_project_with_an_npm_dependency_is_installed_from_its_lock_file_and_measured(
        spans: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = spans
    evaluation = await review(root, heads["honest"], "Add minutes to spans", "minutes returns how many whole "
                              "minutes a span such as 2h lasts, through ms like seconds; a test covers hours and "
                              "seconds.")
    assert evaluation.measured["testing"] is True, reasons(evaluation)
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured" and diff.new_passing == ("test/spans.test.js::minutes",)
    assert any("packages from package-lock.json" in s for s in kinds(evaluation, "test-environment")), \
        kinds(evaluation, "test-environment")
    assert evaluation.verdict == "pass", reasons(evaluation)
    evaluation = await review(root, heads["regression"], "Tidy seconds", "A cosmetic change to seconds.")
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "Rule of Regression: 1 test(s) passed at base and fail with this change (first: " \
           "test/spans.test.js::seconds)" in reasons(evaluation)


YARN_LOCKS = {
    "classic": dedent("""
        # THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
        # yarn lockfile v1


        ms@2.1.3:
          version "2.1.3"
          resolved "https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz#574c8138ce1d2b5861f0b44579dbadd60c6615b2"
          integrity sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==
        """),
    "berry": dedent("""
        # This file is generated by running "yarn install" inside your project.
        # Manual changes might be lost - proceed with caution!

        __metadata:
          version: 8
          cacheKey: 10c0

        "ms@npm:2.1.3":
          version: 2.1.3
          resolution: "ms@npm:2.1.3"
          checksum: MS_CHECKSUM
          languageName: node
          linkType: hard

        "spans@workspace:.":
          version: 0.0.0-use.local
          resolution: "spans@workspace:."
          dependencies:
            ms: "npm:2.1.3"
          languageName: unknown
          linkType: soft
        """).replace("MS_CHECKSUM", "10c0/d924b57e7312b3b63ad21fc5b3dc0af5e78d61a1fc7cfb5457edaf26326bf62be5307cc87f"
                     "fb6862ef1c2b33b0233cdb5d4f01c4c958cc0d660948b65a287a48"),
}
# the integrity each lock pins for ms, and the same with its first characters forged
YARN_FORGED = {"classic": ("sha512-6FlzubTLZG3J2a", "sha512-AAAAubTLZG3J2a"),
               "berry": ("10c0/d924b57e", "10c0/aaaab57e")}


@pytest.mark.parametrize("line", ["classic", "berry"])
async def test_a_project_whose_packages_yarn_installs_is_measured_and_a_forged_yarn_lock_is_not(
        line: str, tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    start = {k: v for k, v in SPANS_START.items() if k != "package-lock.json"}
    repo = RepoBuilder(tmp_path / "yarn")
    repo.commit("Start spans", {**start, "yarn.lock": YARN_LOCKS[line]})
    heads = repo.branches({"honest": SPANS_CASES["honest"]})
    evaluation = await review(tmp_path / "yarn", heads["honest"], "Add minutes to spans", "minutes returns how many "
                              "whole minutes a span such as 2h lasts, through ms like seconds; a test covers hours "
                              "and seconds.")
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", reasons(evaluation)
    assert diff.new_passing == ("test/spans.test.js::minutes",) and not diff.regressed
    assert any("packages from yarn.lock" in s for s in kinds(evaluation, "test-environment")), \
        kinds(evaluation, "test-environment")
    assert evaluation.verdict == "pass", reasons(evaluation)
    # a lock whose hash is not the package's: Yarn refuses it at base and head, named, never a pass
    real, forged = YARN_FORGED[line]
    repo = RepoBuilder(tmp_path / "forged")
    repo.commit("Start spans", {**start, "yarn.lock": YARN_LOCKS[line].replace(real, forged)})
    heads = repo.branches({"honest": SPANS_CASES["honest"]})
    evaluation = await review(tmp_path / "forged", heads["honest"], "Add minutes to spans",
                              "minutes returns how many whole minutes a span lasts.")
    said = reasons(evaluation)
    assert evaluation.verdict == "neutral" and evaluation.measured["testing"] is False, said
    release = "1.22" if line == "classic" else "4.12.0"
    assert ("the JavaScript tests could not run: the project's npm packages could not be installed: "
            f"yarn {release} install failed") in said, said


# --- a mixed change: Python and JavaScript, each language's tests run and judged ---------------------------------

OPS = "def add(a, b):\n    return a + b\n"
OPS_TESTS = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
MIXED_START = {**START, "calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "",
               "tests/test_ops.py": OPS_TESTS}
MIXED_CASES: dict[str, dict[str, str | None]] = {
    "both-honest": {"calc/ops.py": OPS + "\n\ndef sub(minuend, subtrahend):\n    \"\"\"The difference of two "
                                          "numbers.\"\"\"\n    return minuend - subtrahend\n",
                    "tests/test_sub.py": "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
                    **CASES["honest"]},
    "breaks-javascript": {"calc/ops.py": OPS + "\n\ndef sub(minuend, subtrahend):\n    \"\"\"The difference of two "
                                                "numbers.\"\"\"\n    return minuend - subtrahend\n",
                          "src/calc.js": BROKEN},
}


async def test_a_mixed_change_is_judged_on_both_languages_tests(
        tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> None:
    root = tmp_path_factory.mktemp("mixed-js")
    repo = RepoBuilder(root)
    repo.commit("Start", dict(MIXED_START))
    heads = repo.branches(MIXED_CASES)
    honest = await review(root, heads["both-honest"], "Add sub() in Python and mean() in JavaScript",
                          "sub returns the difference of two numbers, with a test; mean returns the arithmetic mean "
                          "of a list of numbers, and zero for an empty list, with a test.")
    diff = honest.differential
    assert diff is not None and diff.status == "measured"
    assert set(diff.new_passing) == {"tests/test_sub.py::test_sub", "test/calc.test.js::mean"}
    assert honest.verdict != "fail", reasons(honest)
    broken = await review(root, heads["breaks-javascript"], "Add sub() in Python",
                          "sub returns the difference of two numbers.")
    assert broken.verdict == "fail", reasons(broken)
    assert "Rule of Regression: 1 test(s) passed at base and fail with this change (first: " \
           "test/calc.test.js::add)" in reasons(broken)
