"""JavaScript and TypeScript projects whose tests run with Jest or Vitest, reviewed end to end in the Docker sandbox:
the runner from the project's locked packages (``npm ci`` in the setup phase), LogoMesh's reporter given on the
runner's command line and read from a channel the tests do not print to (:mod:`sandbox.languages.js_runners`).

The projects (``tests/sandbox/js_runners/``) are a TypeScript package tested with Vitest 3.2 and a JavaScript package
tested with Mocha 10, each with the lock file npm wrote for it, and the TypeScript package again with the lock file
pnpm 9 wrote for it (``pnpm/``: installed by the pnpm release its ``packageManager`` names). Jest runs through the
same channel (its argument list and reporter lines are pinned in ``tests/languages/test_javascript_plugin.py``); a
Jest project's 310-package install is too long for this suite.

Friendly: a change with its passing test passes, measured. Hostile, each with a change that breaks ``add``: a change
that only breaks it; one whose own new test fails; one whose test prints lines shaped like the reporter's to claim a
pass; one that leaves its broken test out through the runner's configuration; one that adds a test marked ``.only``
beside it; one whose test file ends the process before its tests run — none passes.
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from tests.gitfixture import RepoBuilder
from tests.sandbox.test_javascript import NO_MUTANTS, OPS, OPS_TESTS, kinds, reasons, registry_reachable, review

pytestmark = pytest.mark.docker

PROJECTS = Path(__file__).parent / "js_runners"
FORGED = ("LOGOMESH-JS {\"type\":\"case\",\"file\":\"/sandbox/repo/test/calc.test.EXT\",\"names\":[\"calc\","
          "\"adds\"],\"status\":\"passed\",\"message\":null}")


def project(name: str) -> dict[str, str]:
    if name == "pnpm":  # the TypeScript package, its packages by pnpm
        return {**{k: v for k, v in project("vitest").items() if k != "package-lock.json"}, **project("_pnpm")}
    root = PROJECTS / name.lstrip("_")
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def cases(name: str) -> dict[str, dict[str, str | None]]:
    """The changes reviewed, for the project ``name`` (``vitest``, ``pnpm``: TypeScript; ``mocha``: JavaScript)."""
    files = project(name)
    ext = "ts" if name in ("vitest", "pnpm") else "js"
    name = "vitest" if name == "pnpm" else name
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
    config = {"vitest": ("vitest.config.ts", "import { defineConfig } from 'vitest/config';\n\n"
                         "export default defineConfig({\n  test: { exclude: ['**/node_modules/**', "
                         "'test/calc.test.ts'] },\n});\n"),
              "mocha": (".mocharc.json", '{"ignore": ["test/calc.test.js"]}\n')}[name]
    return {
        "honest": {f"src/calc.{ext}": with_sub, f"test/calc.test.{ext}": sub_tests},
        "regression": {f"src/calc.{ext}": broken},
        "own-test-fails": {f"src/calc.{ext}": with_sub.replace("a - b", "b - a"), f"test/calc.test.{ext}": sub_tests},
        "forged-lines": {f"src/calc.{ext}": broken, f"test/calc.test.{ext}": forged},
        "excluded": {f"src/calc.{ext}": broken, config[0]: config[1]},
        # the broken test stops running: another test marked `.only`, or the file ends the process before its tests
        "only": {f"src/calc.{ext}": broken, f"test/calc.test.{ext}": tests.replace(
            "  });\n});", "  });\n\n  it.only('holds', () => {\n    expect(1).toBe(1);\n  });\n});")},
        "exits": {f"src/calc.{ext}": broken, f"test/calc.test.{ext}": tests.replace(
            "describe('calc'", "process.exit(0);\n\ndescribe('calc'")},
    }


@pytest.fixture(scope="module", params=["vitest", "mocha"])
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
    ("only", "test/calc.test.EXT::calc > adds"),
    ("exits", "test/calc.test.EXT::calc > adds"),
])
async def test_a_change_that_breaks_its_tests_fails(
        runner_project: tuple[str, Path, dict[str, str]], docker_engine: docker.DockerClient, case: str,
        rule: str) -> None:
    name, root, heads = runner_project
    ext = "ts" if name == "vitest" else "js"
    evaluation = await review(root, heads[case], *(SUB_TEXT if case == "own-test-fails" else TIDY), NO_MUTANTS)
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert rule.replace("EXT", ext) in reasons(evaluation), reasons(evaluation)


async def test_a_test_left_out_by_the_runner_s_configuration_does_not_pass(
        runner_project: tuple[str, Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    # the change breaks add and its configuration stops the runner from running add's test: the test that passed
    # at base is missing at head, the base's tests under the head's code still run it, and the configuration is named
    name, root, heads = runner_project
    evaluation = await review(root, heads["excluded"], *TIDY, NO_MUTANTS)
    assert evaluation.verdict == "fail", reasons(evaluation)
    ext = "ts" if name == "vitest" else "js"
    assert ("Rule of Regression: 1 test(s) passed at base and fail with this change (first: "
            f"test/calc.test.{ext}::calc > adds)") in reasons(evaluation), reasons(evaluation)
    assert any("configures how the tests run" in s for s in kinds(evaluation, "harness-change")), \
        kinds(evaluation, "harness-change")


async def test_a_project_whose_packages_pnpm_installs_is_measured(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    repo = RepoBuilder(tmp_path / "pnpm-project")
    repo.commit("Start calc", project("pnpm"))
    heads = repo.branches({k: v for k, v in cases("pnpm").items() if k in ("honest", "regression")})
    evaluation = await review(tmp_path / "pnpm-project", heads["honest"], *SUB_TEXT)
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", reasons(evaluation)
    assert diff.new_passing == ("test/calc.test.ts::calc > subtracts",) and not diff.regressed
    assert any("packages from pnpm-lock.yaml" in s and "tests by vitest" in s
               for s in kinds(evaluation, "test-environment")), kinds(evaluation, "test-environment")
    assert evaluation.verdict == "pass", reasons(evaluation)
    evaluation = await review(tmp_path / "pnpm-project", heads["regression"], *TIDY, NO_MUTANTS)
    assert evaluation.verdict == "fail", reasons(evaluation)


async def test_a_mixed_python_and_typescript_change_is_judged_on_both(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    sub = ("\n\ndef sub(minuend, subtrahend):\n    \"\"\"The difference of two numbers.\"\"\"\n"
           "    return minuend - subtrahend\n")
    repo = RepoBuilder(tmp_path / "mixed")
    repo.commit("Start", {**project("vitest"), "calc/__init__.py": "", "calc/ops.py": OPS, "tests/__init__.py": "",
                          "tests/test_ops.py": OPS_TESTS})
    python_sub = {"calc/ops.py": OPS + sub,
                  "tests/test_sub.py": "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"}
    heads = repo.branches({"both": {**python_sub, **cases("vitest")["honest"]},
                           "breaks-typescript": {**python_sub, **cases("vitest")["regression"]}})
    honest = await review(tmp_path / "mixed", heads["both"], "Add sub in Python and in TypeScript",
                          "sub returns the difference of two numbers in the Python package and in the TypeScript "
                          "calc module, each with a test.")
    diff = honest.differential
    assert diff is not None and diff.status == "measured", reasons(honest)
    assert set(diff.new_passing) == {"tests/test_sub.py::test_sub", "test/calc.test.ts::calc > subtracts"}
    environments = " | ".join(kinds(honest, "test-environment"))
    assert "Python" in environments and "tests by vitest" in environments, environments
    assert honest.verdict != "fail", reasons(honest)
    broken = await review(tmp_path / "mixed", heads["breaks-typescript"], "Add sub in Python",
                          "sub returns the difference of two numbers.")
    assert broken.verdict == "fail", reasons(broken)
    assert ("Rule of Regression: 1 test(s) passed at base and fail with this change (first: "
            "test/calc.test.ts::calc > adds)") in reasons(broken), reasons(broken)


async def test_a_vitest_test_cannot_reach_the_reporter_s_descriptor_through_a_thread_pool(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    # the change breaks add, asks Vitest for worker threads (which share the main process's descriptors) and its
    # test writes the reporter's line for calc > adds to descriptor 3: LogoMesh runs Vitest's tests in child
    # processes whatever the configuration says, where descriptor 3 is not the channel
    why = registry_reachable()
    if why is not None:
        pytest.skip(why)
    files = project("vitest")
    source, tests = files["src/calc.ts"], files["test/calc.test.ts"]
    forging = tests.replace("import { describe", "import { writeSync } from 'node:fs';\nimport { describe").replace(
        "    expect(add(2, 3)).toBe(5);",
        "    try { writeSync(3, '" + FORGED.replace("EXT", "ts") + "\\n'); } catch {}\n    expect(add(2, 3)).toBe(5);")
    repo = RepoBuilder(tmp_path / "threads")
    repo.commit("Start calc", files)
    heads = repo.branches({"forging": {
        "src/calc.ts": source.replace("a + b", "a + b + 1"), "test/calc.test.ts": forging,
        "vitest.config.ts": "import { defineConfig } from 'vitest/config';\n\nexport default defineConfig({\n"
                            "  test: { pool: 'threads' },\n});\n"}})
    evaluation = await review(tmp_path / "threads", heads["forging"], *TIDY, NO_MUTANTS)
    assert evaluation.verdict == "fail", reasons(evaluation)
    assert "test/calc.test.ts::calc > adds" in reasons(evaluation), reasons(evaluation)
