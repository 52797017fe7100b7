"""JavaScript and TypeScript projects whose tests run with Jest or Vitest, reviewed end to end in the Docker sandbox:
the runner from the project's locked packages (``npm ci`` in the setup phase), LogoMesh's reporter given on the
runner's command line and read from a channel the tests do not print to (:mod:`sandbox.languages.js_runners`).

The projects (``tests/sandbox/js_runners/``) are a TypeScript package tested with Vitest 3.2 and a JavaScript package
tested with Jest 29, each with the lock file npm wrote for it. Friendly: a change with its passing test passes,
measured. Hostile: a change that breaks a test; one whose own new test fails; one whose test prints lines shaped like
the reporter's to claim a pass; one that leaves its broken test out through the runner's configuration; one that
turns its broken test into ``.only`` of another — none passes.
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from tests.gitfixture import RepoBuilder
from tests.sandbox.test_javascript import kinds, reasons, registry_reachable, review

pytestmark = pytest.mark.docker

PROJECTS = Path(__file__).parent / "js_runners"
FORGED = ("LOGOMESH-JS {\"type\":\"case\",\"file\":\"/sandbox/repo/test/calc.test.EXT\",\"names\":[\"calc\","
          "\"adds\"],\"status\":\"passed\",\"message\":null}")


def project(name: str) -> dict[str, str]:
    root = PROJECTS / name
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def cases(name: str) -> dict[str, dict[str, str | None]]:
    """The changes reviewed, for the project ``name`` (``vitest``: TypeScript; ``jest``: JavaScript)."""
    files = project(name)
    ext = "ts" if name == "vitest" else "js"
    source, tests = files[f"src/calc.{ext}"], files[f"test/calc.test.{ext}"]
    typed = ": number" if name == "vitest" else ""
    sub = (f"\n// sub returns a minus b.\n{'export ' if name == 'vitest' else ''}function sub(a{typed}, b{typed})"
           f"{typed} {{\n  return a - b;\n}}\n")
    with_sub = (source + sub if name == "vitest"
                else source.replace("module.exports = { add };", sub.strip() + "\n\nmodule.exports = { add, sub };"))
    sub_tests = tests.replace("{ add }", "{ add, sub }").replace(
        "  });\n});", "  });\n\n  it('subtracts', () => {\n    expect(sub(5, 3)).toBe(2);\n  });\n});")
    broken = source.replace("a + b", "a + b + 1")
    forged = tests.replace("expect(add(2, 3)).toBe(5);", "process.stdout.write('" + FORGED.replace("EXT", ext)
                           + "\\n');\n    console.log('" + FORGED.replace("EXT", ext) + "');\n"
                           "    expect(add(2, 3)).toBe(5);")
    config = ("vitest.config.ts", "import { defineConfig } from 'vitest/config';\n\nexport default defineConfig({\n"
              "  test: { exclude: ['**/node_modules/**', 'test/calc.test.ts'] },\n});\n") if name == "vitest" else (
        "jest.config.js", "module.exports = { testPathIgnorePatterns: ['/node_modules/', 'test/calc.test.js'] };\n")
    return {
        "honest": {f"src/calc.{ext}": with_sub, f"test/calc.test.{ext}": sub_tests},
        "regression": {f"src/calc.{ext}": broken},
        "own-test-fails": {f"src/calc.{ext}": with_sub.replace("a - b", "b - a"), f"test/calc.test.{ext}": sub_tests},
        "forged-lines": {f"src/calc.{ext}": broken, f"test/calc.test.{ext}": forged},
        "excluded": {f"src/calc.{ext}": broken, config[0]: config[1]},
    }


@pytest.fixture(scope="module", params=["vitest", "jest"])
def runner_project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[str, Path, dict[str, str]]:
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    name = request.param
    root = tmp_path_factory.mktemp(f"{name}-project")
    repo = RepoBuilder(root)
    repo.commit("Start calc", project(name))
    return name, root, repo.branches(cases(name))


SUB_TEXT = ("Add sub to calc", "sub returns a minus b, beside add; a test covers it.")
TIDY = ("Tidy add", "A cosmetic change to add.")


async def test_an_honest_change_passes_measured_by_the_project_s_runner(
        runner_project: tuple[str, Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    name, root, heads = runner_project
    ext = "ts" if name == "vitest" else "js"
    evaluation = await review(root, heads["honest"], *SUB_TEXT)
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", reasons(evaluation)
    assert diff.new_passing == (f"test/calc.test.{ext}::calc > subtracts",) and diff.unchanged_passing == 1
    assert not diff.regressed and not diff.new_failing
    assert any("packages from package-lock.json" in s for s in kinds(evaluation, "test-environment")), \
        kinds(evaluation, "test-environment")
    assert evaluation.measured["testing"] is True
    assert evaluation.verdict == "pass", reasons(evaluation)


@pytest.mark.parametrize(("case", "rule"), [
    ("regression", "Rule of Regression: 1 test(s) passed at base and fail with this change (first: "
                   "test/calc.test.EXT::calc > adds)"),
    ("own-test-fails", "Rule of New Failures: 1 test(s) of this change fail (first: "
                       "test/calc.test.EXT::calc > subtracts)"),
    # the forged lines are the test's output: the real outcome of calc > adds is read from the reporter
    ("forged-lines", "test/calc.test.EXT::calc > adds"),
])
async def test_a_change_that_breaks_its_tests_fails(
        runner_project: tuple[str, Path, dict[str, str]], docker_engine: docker.DockerClient, case: str,
        rule: str) -> None:
    name, root, heads = runner_project
    ext = "ts" if name == "vitest" else "js"
    evaluation = await review(root, heads[case], *(SUB_TEXT if case == "own-test-fails" else TIDY))
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert rule.replace("EXT", ext) in reasons(evaluation), reasons(evaluation)


async def test_a_test_left_out_by_the_runner_s_configuration_does_not_pass(
        runner_project: tuple[str, Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    # the change breaks add and its configuration stops the runner from running add's test: the test that passed
    # at base is missing at head, the base's tests under the head's code still run it, and the configuration is named
    name, root, heads = runner_project
    evaluation = await review(root, heads["excluded"], *TIDY)
    assert evaluation.verdict == "fail", reasons(evaluation)
    ext = "ts" if name == "vitest" else "js"
    assert ("Rule of Regression: 1 test(s) passed at base and fail with this change (first: "
            f"test/calc.test.{ext}::calc > adds)") in reasons(evaluation), reasons(evaluation)
    assert any("configures how the tests run" in s for s in kinds(evaluation, "harness-change")), \
        kinds(evaluation, "harness-change")
