"""JavaScript pull requests whose tests run with Jest, reviewed end to end in the Docker sandbox: the project's own
Jest from ``node_modules`` (installed by ``npm ci --ignore-scripts`` from the lock file in
``fixtures/jest/``, through the egress proxy), never its ``test`` script, with LogoMesh's reporter module from
outside the tree (``--reporters=``) at base, at head and under the base's tests and Jest configuration (the guard).

Friendly: an honest change with a passing new test passes, measured.
Hostile, each a change that breaks ``add`` with a trick that must not make it pass: a test file that ends its process
(``process.exit(0)``), a Jest configuration adding a reporter that prints forged pass lines, a ``setupFilesAfterEnv``
file that makes ``expect`` never throw, ``test.only`` on another test, ``test.skip`` on the broken one — each
``fail``, and the harness inventory names the Jest option a change sets.
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from tests.gitfixture import RepoBuilder
from tests.sandbox.test_javascript import BROKEN, CALC, dedent, kinds, reasons, registry_reachable, review

pytestmark = pytest.mark.docker

FIXTURE = Path(__file__).parent / "fixtures" / "jest"


CALC_TEST = dedent("""
    'use strict';
    const { add } = require('../src/calc');

    describe('calc', () => {
      test('adds', () => {
        expect(add(2, 3)).toBe(5);
      });
    });
    """)
OTHER_TEST = dedent("""
    'use strict';

    test('strings join', () => {
      expect(['a', 'b'].join('-')).toBe('a-b');
    });
    """)
WITH_MEAN = CALC.replace("module.exports = { add };", dedent("""
    // mean returns the arithmetic mean of the values, and zero for an empty list.
    function mean(values) {
      return values.length === 0 ? 0 : values.reduce((total, value) => total + value, 0) / values.length;
    }

    module.exports = { add, mean };"""))
MEAN_TEST = CALC_TEST.replace("{ add }", "{ add, mean }").replace("  });\n});\n", dedent("""
      });

      test('means', () => {
        expect(mean([])).toBe(0);
        expect(mean([1, 2, 3, 4])).toBe(2.5);
      });
    });
    """))
FORGE = dedent("""
    'use strict';
    // prints a pass for every test of the run, in LogoMesh's format
    class Forge {
      onRunComplete() {
        const file = process.cwd() + '/test/calc.test.js';
        const say = (event) => process.stdout.write('LOGOMESH-JS ' + JSON.stringify(event) + '\\n');
        say({ type: 'test:start', name: 'calc', nesting: 0, file });
        say({ type: 'test:start', name: 'adds', nesting: 1, file });
        say({ type: 'test:pass', name: 'adds', nesting: 1, file });
      }
    }
    module.exports = Forge;
    """)
NEVER_THROW = dedent("""
    'use strict';
    // every expectation holds
    const real = global.expect;
    const hollow = () => new Proxy({}, { get: () => hollow });
    global.expect = Object.assign(() => hollow(), real);
    """)
CASES: dict[str, dict[str, str | None]] = {
    "honest": {"src/calc.js": WITH_MEAN, "test/calc.test.js": MEAN_TEST},
    "regression": {"src/calc.js": BROKEN},
    "exit-in-test": {"src/calc.js": BROKEN,
                     "test/calc.test.js": CALC_TEST.replace("test('adds', () => {\n",
                                                            "test('adds', () => {\n    process.exit(0);\n")},
    "forged-reporter": {"src/calc.js": BROKEN, "forge.js": FORGE,
                        "jest.config.js": "module.exports = { reporters: ['default', './forge.js'] };\n"},
    "never-throw": {"src/calc.js": BROKEN, "jest.setup.js": NEVER_THROW,
                    "jest.config.js": "module.exports = { setupFilesAfterEnv: ['./jest.setup.js'] };\n"},
    "only": {"src/calc.js": BROKEN, "test/other.test.js": OTHER_TEST.replace("test(", "test.only(")},
    "skip": {"src/calc.js": BROKEN, "test/calc.test.js": CALC_TEST.replace("test('adds'", "test.skip('adds'")},
}
TIDY = ("Tidy add", "A cosmetic change to add.")


@pytest.fixture(scope="module")
def tally(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("tally-jest")
    repo = RepoBuilder(root)
    repo.commit("Start tally", {"package.json": (FIXTURE / "package.json").read_text(),
                                "package-lock.json": (FIXTURE / "package-lock.json").read_text(),
                                "src/calc.js": CALC, "test/calc.test.js": CALC_TEST,
                                "test/other.test.js": OTHER_TEST})
    return root, repo.branches(CASES)


async def test_an_honest_change_to_a_jest_project_is_measured_and_passes(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["honest"], "Add mean to calc", "mean returns the arithmetic mean of a "
                              "list of numbers, and zero for an empty list; a test covers empty and several values.")
    assert evaluation.measured["testing"] is True, reasons(evaluation)
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured"
    assert diff.new_passing == ("test/calc.test.js::calc > means",), diff
    assert diff.unchanged_passing == 2 and not diff.regressed and not diff.new_failing
    assert evaluation.verdict == "pass", reasons(evaluation)


async def test_a_change_that_breaks_a_jest_test_fails(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = tally
    evaluation = await review(root, heads["regression"], *TIDY)
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "Rule of Regression: 1 test(s) passed at base and fail with this change (first: " \
           "test/calc.test.js::calc > adds)" in reasons(evaluation)
    regressed = evaluation.differential.regressed if evaluation.differential else ()
    assert [c.location for c in regressed] == ["test/calc.test.js:6"]
    assert "Received: 6" in (regressed[0].message or "")


@pytest.mark.parametrize(("name", "mechanism"), [
    ("exit-in-test", None),
    ("forged-reporter", "sets Jest's `reporters`"),
    ("never-throw", "sets Jest's `setupFilesAfterEnv`"),
    ("only", "adds `.only`"),
    ("skip", "adds a skip to an existing test file"),
])
async def test_a_change_that_silences_the_jest_test_it_breaks_does_not_pass(
        tally: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient, name: str,
        mechanism: str | None) -> None:
    root, heads = tally
    evaluation = await review(root, heads[name], *TIDY)
    assert evaluation.verdict == "fail", reasons(evaluation)
    diff = evaluation.differential
    assert diff is not None
    failing = [c.name for c in diff.regressed] + [c.name for c in diff.new_failing] + list(diff.removed)
    assert any(n.startswith("test/calc.test.js::") for n in failing), diff
    if mechanism is not None:
        assert any(mechanism in s for s in kinds(evaluation, "harness-change")), kinds(evaluation, "harness-change")
