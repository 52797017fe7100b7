"""The JavaScript plug-in's pure parts: test paths, the harness inventory, the plan from package.json, the
reporter's lines read.

The lines are what LogoMesh's reporter writes for node's runner: a suite with a passing, a failing and a skipped test
(the suite's own failure only says its tests failed), a forged line a test printed, a file that throws at its top,
and a file whose test ended its process early (its file passes with no test reported).
"""

from __future__ import annotations

import json

import pytest

from checks.languages import GO, JAVASCRIPT, PYTHON, javascript, language_of_test, languages_of
from checks.models import Case, ChangedFile
from checks.testpaths import is_environment_path, is_harness_path, is_test_path
from sandbox.languages.javascript import (
    MARK,
    JavaScriptPlan,
    offered_version,
    plan_javascript,
    read_events,
    runner_argv,
    satisfies,
)
from sandbox.languages.js_runners import read_cases


def line(kind: str, name: str, nesting: int = 0, file: str = "test/calc.test.js", **more: object) -> bytes:
    event = {"type": kind, "name": name, "nesting": nesting, "file": f"/sandbox/repo/{file}", "skip": False,
             "todo": False, "failure": None, "message": None, **more}
    return (MARK + json.dumps(event)).encode()


STREAM = b"\n".join([
    line("test:start", "calc"),
    line("test:start", "adds", 1),
    line("test:pass", "adds", 1),
    line("test:start", "subtracts", 1),
    line("test:fail", "subtracts", 1, failure="testCodeFailure",
         message="AssertionError [ERR_ASSERTION]: 1 == 2\n    at TestContext.<anonymous> "
                 "(/sandbox/repo/test/calc.test.js:7:12)"),
    line("test:start", "later", 1),
    line("test:pass", "later", 1, skip=True),
    line("test:fail", "calc", 0, failure="subtestsFailed", message="1 subtest failed"),
    b'ok 1 - subtracts',  # a test's own text: not the reporter's
    b'{"type": "test:pass", "name": "subtracts", "nesting": 1}',  # unmarked: not the reporter's
    (MARK + '{"type": "test:pass", "name": "torn"').encode(),  # a torn line: dropped
    line("test:start", "/sandbox/repo/test/broken.test.js", 0, "test/broken.test.js"),
    line("test:fail", "/sandbox/repo/test/broken.test.js", 0, "test/broken.test.js", failure="testCodeFailure",
         message="Error: boom at load"),
    line("test:start", "/sandbox/repo/test/exits.test.js", 0, "test/exits.test.js"),
    line("test:pass", "/sandbox/repo/test/exits.test.js", 0, "test/exits.test.js"),
    line("test:pass", "elsewhere", 0, "../outside.test.js"),  # not the tree's
])


def test_outcomes_come_from_the_reporter_lines_only() -> None:
    tests, errors, cut = read_events(STREAM)
    got = {t.name: t.outcome for t in tests}
    assert got == {"test/calc.test.js::calc > adds": "passed", "test/calc.test.js::calc > subtracts": "failed",
                   "test/calc.test.js::calc > later": "skipped"}
    failing = next(t for t in tests if t.outcome == "failed")
    assert failing.location == "test/calc.test.js:7" and "1 == 2" in (failing.message or "")
    assert [(e.name, e.message) for e in errors] == [("test/broken.test.js::(file)", "Error: boom at load")]
    assert cut == 0  # the file that ended early reported no test: its tests are missing, never passed


def test_the_same_id_twice_keeps_the_worse_outcome() -> None:
    forged = b"\n".join([line("test:start", "adds"), line("test:fail", "adds", message="boom"),
                         line("test:start", "adds"), line("test:pass", "adds")])
    tests, _errors, _cut = read_events(forged)
    assert [(t.name, t.outcome) for t in tests] == [("test/calc.test.js::adds", "failed")]


def test_test_paths_environment_and_harness_files() -> None:
    for path in ("test/calc.js", "src/calc.test.js", "lib/calc.spec.ts", "__tests__/a.tsx", "test.js",
                 "test-calc.mjs", "calc_test.cjs"):
        assert javascript.is_test_path(path) and is_test_path(path), path
    for path in ("src/calc.js", "node_modules/x/test/a.js", "src/testing.js", "test/data.json"):
        assert not javascript.is_test_path(path), path
    assert all(is_environment_path(p) for p in ("package.json", "package-lock.json", "web/.nvmrc", "yarn.lock"))
    assert all(is_harness_path(p) for p in ("jest.config.js", "vitest.config.ts", ".mocharc.yml", "jest.setup.js"))
    assert not is_harness_path("src/settings.js")
    assert language_of_test("test/calc.test.js::calc > adds") == JAVASCRIPT
    assert language_of_test("test/broken.test.js::(file)") == JAVASCRIPT
    assert language_of_test("tests/test_a.py::test_x") == PYTHON
    assert language_of_test("calc/calc_test.go::TestAdd") == GO


def _case(paths: tuple[str, ...]) -> Case:
    return Case(base_sha="a" * 40, head_sha="b" * 40, diff="", head_paths=paths,
                files=tuple(ChangedFile(path=p, status="modified") for p in paths[:1]))


def test_a_node_project_with_tests_is_run_and_one_without_is_not() -> None:
    assert languages_of(_case(("src/calc.js", "package.json", "test/calc.test.js"))) == (JAVASCRIPT,)
    assert languages_of(_case(("src/calc.js", "package.json"))) == (PYTHON,)  # no test: nothing of it to run
    mixed = _case(("app/main.py", "package.json", "web/a.test.js", "tests/test_main.py"))
    assert languages_of(mixed) == (PYTHON, JAVASCRIPT)


@pytest.mark.parametrize(("text", "status", "added", "removed", "expected"), [
    ("test('a', () => {});\ntest.only('b', () => {});\n", "modified", [(2, "test.only('b', () => {});")], [],
     [("only", 2, "high")]),
    ("it.skip('a', () => {});\n", "modified", [(1, "it.skip('a', () => {});")], ["it('a', () => {});"],
     [("skip", 1, "medium")]),
    ("test('a', () => {});\n", "modified", [], ["test('b', () => {});"], [("deleted-test", None, "medium")]),
    (None, "removed", [], ["test('a', () => {});"], [("deleted-test", None, "medium")]),
    ("test('a', { skip: true }, () => {});\n", "added", [(1, "test('a', { skip: true }, () => {});")], [], []),
    ("test('a', () => {});\ntest('b', () => {});\n", "modified", [(2, "test('b', () => {});")], [], []),
])
def test_the_harness_inventory(text: str | None, status: str, added: list[tuple[int, str]], removed: list[str],
                               expected: list[tuple[str, int | None, str]]) -> None:
    found = javascript.harness_changes("test/a.test.js", status, text, added, removed)
    assert [(mechanism, number, severity) for mechanism, number, _summary, severity in found] == expected


def test_a_runner_configuration_is_named() -> None:
    found = javascript.harness_changes("jest.config.js", "added", "module.exports = {};", [], [])
    assert [f[0] for f in found] == ["runner-config"]


def plan(files: dict[str, str], offered: str | None = "18.19.0") -> tuple[str | None, tuple[str, ...]]:
    planned = plan_javascript(files.get, sorted(files), offered)
    return planned.toolchain.error, planned.files


def test_the_plan_names_what_the_sandbox_lacks() -> None:
    tests = {"test/a.test.js": "", "src/a.js": "", "test/fixtures/data.js": ""}
    assert plan({"package.json": "{}", **tests}) == (None, ("test/a.test.js",))
    error, _ = plan({"package.json": '{"engines": {"node": ">=20"}}', **tests})
    assert error == "the project asks for Node.js >=20; the sandbox image offers Node.js 18.19.0"
    error, _ = plan({"package.json": "{}", ".nvmrc": "v22.1.0\n", **tests})
    assert error == "the project asks for Node.js 22.1.0; the sandbox image offers Node.js 18.19.0"
    assert plan({"package.json": '{"engines": {"node": "^18.17 || >=20"}}', ".nvmrc": "18", **tests})[0] is None
    with_lock = plan_javascript({"package.json": '{"dependencies": {"ms": "^2.1.3"}}', "package-lock.json": "{}",
                                 **tests}.get, ["package-lock.json", "package.json", *tests], "18")
    assert with_lock.toolchain.error is None and with_lock.lock == "package-lock.json"  # npm ci installs them
    error, _ = plan({"package.json": '{"dependencies": {"ms": "^2.1.3"}}', **tests})
    assert error == ("the project's npm packages (ms) cannot be installed: there is no package-lock.json, "
                     "pnpm-lock.yaml or yarn.lock, and LogoMesh installs from a lock file only")
    error, _ = plan({"package.json": '{"dependencies": {"ms": "^2.1.3"}}', "yarn.lock": "", **tests})
    assert error is not None and "yarn.lock was written by a yarn release LogoMesh does not know" in error
    error, _ = plan({"package.json": '{"dependencies": {"ms": "^2.1.3"}}', "bun.lockb": "", **tests})
    assert error is not None and "bun.lockb is not supported yet" in error
    error, _ = plan({"package.json": '{"scripts": {"test": "jest --coverage"}}', **tests})
    assert error == ("the project's tests run with jest (package.json's test script), which is not among "
                     "package.json's dependencies")
    error, _ = plan({"package.json": '{"scripts": {"test": "node --test"}}', ".mocharc.yml": "", **tests})
    assert error == ("the project's tests run with mocha (.mocharc.yml), which is not among package.json's "
                     "dependencies")
    error, _ = plan({"package.json": '{"scripts": {"test": "ava"}, "devDependencies": {"ava": "6"}}',
                     "package-lock.json": "{}", **tests})
    assert error == ("the project's tests run with ava (package.json's test script); LogoMesh runs tests with node's "
                     "own runner (node --test), Jest, Vitest and Mocha, not yet with that runner")
    assert plan({"package.json": '{"scripts": {"test": "node --test test/"}}', **tests})[0] is None
    error, _ = plan({"package.json": "{}", "test/a.test.ts": ""})
    assert error is not None and "TypeScript" in error and "node's own runner needs a compiler" in error
    error, _ = plan({"package.json": "{", **tests})
    assert error is not None and error.startswith("package.json does not parse")
    assert plan({"package.json": "{", "src/a.js": ""}) == (None, ())  # no test: nothing to hold against it
    assert plan({"package.json": "{}", **tests}, offered=None)[0] is not None


@pytest.mark.parametrize(("wanted", "expected"), [
    (">=18", True), (">=18.17", True), (">=20", False), ("^18.17", True), ("^20", False), ("18.x", True),
    ("~18.19", True), ("~18.20", False), (">=16 <21", True), ("16 - 18", True), ("14 - 16", False), ("*", True),
    (">18", False), ("<=18", True), ("<18", False), ("lts/*", True)])
def test_engines_ranges(wanted: str, expected: bool) -> None:
    assert satisfies((18, 19, 0), wanted) is expected


def test_the_oldest_line_the_project_allows_is_chosen_among_the_image_s() -> None:
    from sandbox.languages.javascript import node_env, node_home, offered_lines

    assert offered_lines("22,18") == ("18", "22") and offered_lines("") == () and offered_lines(None) == ()
    files = {"test/a.test.js": ""}

    def chosen(package: str, *extra: tuple[str, str]) -> tuple[str | None, str | None]:
        planned = plan_javascript({"package.json": package, **files, **dict(extra)}.get,
                                  sorted({"package.json", *files, *dict(extra)}), "18,22")
        return planned.toolchain.version, planned.toolchain.error

    assert chosen("{}") == ("18", None)  # no range: the oldest line
    assert chosen('{"engines": {"node": ">=20"}}') == ("22", None)
    assert chosen('{"engines": {"node": "^18.17 || >=20"}}') == ("18", None)
    assert chosen("{}", (".nvmrc", "v22\n")) == ("22", None)
    assert chosen('{"engines": {"node": ">=18"}}', (".nvmrc", "22")) == ("22", None)  # both must hold
    assert chosen('{"engines": {"node": ">=24"}}') == (
        None, "the project asks for Node.js >=24; the sandbox image offers Node.js 18, 22")
    assert plan_javascript({"package.json": "{}", **files}.get, ["package.json", *files], "18,22"
                           ).toolchain.offered == ("18", "22")
    # the chosen line's node runs the tests, and is the first node on the tests' PATH
    assert node_home("22") == "/opt/logomesh/node-22" and node_home("18.19.0") == "/opt/logomesh/node-18"
    assert node_env("22")["PATH"].startswith("/opt/logomesh/node-22/bin:")


def test_a_major_only_label_is_that_line_s_latest_release() -> None:
    assert offered_version("18") == (18, 99, 99) and offered_version("18.19.1") == (18, 19, 1)
    assert plan({"package.json": '{"engines": {"node": "^18.17"}}', "test/a.test.js": ""}, "18")[0] is None
    error = plan({"package.json": '{"engines": {"node": "18.19.0"}}', "test/a.test.js": ""}, "18")[0]
    assert error == "the project asks for Node.js 18.19.0; the sandbox image offers Node.js 18"


def test_jest_and_vitest_run_the_project_s_tests_typescript_too() -> None:
    locked = {"package-lock.json": "{}", "src/a.ts": "", "test/a.test.ts": "", "test/b.test.js": ""}

    def planned(package: str, *extra: str) -> JavaScriptPlan:
        files = {"package.json": package, **locked, **{name: "" for name in extra}}
        return plan_javascript(files.get, sorted(files), "18,22")

    jest = planned('{"scripts": {"test": "jest"}, "devDependencies": {"jest": "29.7.0"}}')
    assert jest.toolchain.error is None and jest.runner == "jest" and jest.lock == "package-lock.json"
    assert jest.files == ("test/a.test.ts", "test/b.test.js")  # TypeScript too: the runner compiles it
    assert jest.toolchain.runner == "jest" and jest.toolchain.covers == ("TypeScript",)
    assert planned('{"jest": {"testEnvironment": "node"}, "devDependencies": {"jest": "29"}}').runner == "jest"
    # vitest named by a configuration file, or by a Vite configuration beside its dependency
    assert planned('{"devDependencies": {"vitest": "3"}}', "vitest.config.ts").runner == "vitest"
    assert planned('{"devDependencies": {"vitest": "3", "vite": "6"}}', "vite.config.ts").runner == "vitest"
    node = planned('{"devDependencies": {"vite": "6"}}', "vite.config.ts")
    assert node.runner == "node" and node.toolchain.runner == "node --test" and node.toolchain.covers == ()
    # the command: LogoMesh's reporter on descriptor 3, the runner's own output on standard error
    argv = runner_argv(jest, jest.files, rerun=False)
    assert argv[:2] == ["sh", "-c"] and "exec 3>&1 1>&2" in argv[2]
    assert argv[5:] == ["node_modules/jest/bin/jest.js", "--ci", "--reporters=/sandbox/logomesh/jest.cjs",
                        "--no-watchman", "--cacheDirectory=/tmp/jest-cache", "--coverage=false", "--passWithNoTests",
                        "--forceExit"]
    assert runner_argv(jest, ("test/a.test.ts",), rerun=True)[-2:] == ["--runTestsByPath", "test/a.test.ts"]
    mocha = planned('{"scripts": {"test": "mocha"}, "devDependencies": {"mocha": "10"}}')
    assert mocha.toolchain.error is None and mocha.runner == "mocha"
    assert runner_argv(mocha, ("test/b.test.js",), rerun=True)[5:] == [
        "node_modules/mocha/bin/_mocha", "--reporter=/sandbox/logomesh/mocha.cjs", "--exit", "--no-color",
        "test/b.test.js"]
    vitest = planned('{"scripts": {"test": "vitest run"}, "devDependencies": {"vitest": "3"}}')
    assert runner_argv(vitest, ("test/a.test.ts",), rerun=True)[5:] == [
        "node_modules/vitest/vitest.mjs", "run", "--reporter=/sandbox/logomesh/vitest.mjs", "--pool=forks",
        "--coverage.enabled=false", "--passWithNoTests", "test/a.test.ts"]


def case_line(file: str = "test/calc.test.ts", names: object = ("calc", "adds"), status: str = "passed",
              **more: object) -> bytes:
    names = list(names) if isinstance(names, tuple) else names
    return (MARK + json.dumps({"type": "case", "file": f"/sandbox/repo/{file}", "names": names, "status": status,
                               **more})).encode()


def test_the_npm_runners_reporter_lines_are_read() -> None:
    stream = b"\n".join([
        case_line(),
        case_line(names=("calc", "subtracts"), status="failed",
                  message="AssertionError: expected 1 to be 2\n    at /sandbox/repo/test/calc.test.ts:9:23"),
        case_line(names=("calc", "later"), status="skipped"),
        case_line(names=("calc", "odd"), status="strange"),  # not a pass
        case_line(names=("calc", "subtracts"), status="passed"),  # the same id again: the worse outcome stands
        case_line(names=[1, 2]), case_line(names=[]),  # not names
        case_line(file="../elsewhere.test.ts"),  # outside the tree
        b'{"type": "case", "file": "/sandbox/repo/test/x.test.ts", "names": ["forged"], "status": "passed"}',
        (MARK + '{"type": "case", "file": "/sandbox/repo/test/torn.test.ts"').encode(),
        (MARK + json.dumps({"type": "file-error", "file": "/sandbox/repo/test/broken.test.ts",
                            "message": "Error: Cannot find module '../src/missing'"})).encode(),
    ])
    tests, errors, cut, ended = read_cases(stream)
    assert {t.name: t.outcome for t in tests} == {
        "test/calc.test.ts::calc > adds": "passed", "test/calc.test.ts::calc > subtracts": "failed",
        "test/calc.test.ts::calc > later": "skipped", "test/calc.test.ts::calc > odd": "failed"}
    failing = next(t for t in tests if t.name.endswith("subtracts"))
    assert failing.location == "test/calc.test.ts:9" and "expected 1 to be 2" in (failing.message or "")
    assert [(e.name, e.outcome) for e in errors] == [("test/broken.test.ts::(file)", "error")]
    assert cut == 0 and ended is False  # no end of run: the runner stopped before it reported it all
    assert read_cases(stream + b"\n" + (MARK + '{"type": "done"}').encode())[3] is True


def test_the_package_manager_comes_from_the_lock_file_and_package_json() -> None:
    from sandbox.languages.js_packages import PackageManager, choose, pnpm_line

    pnpm9 = "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n"
    locks = {"pnpm-lock.yaml": pnpm9}.get
    assert pnpm_line(pnpm9) == "9" and pnpm_line("lockfileVersion: 5.4\n") == "7" and pnpm_line("x: 1") is None
    assert choose({}, ["package-lock.json"], locks) == (PackageManager("npm", "package-lock.json"), "")
    assert choose({}, ["pnpm-lock.yaml"], locks) == (PackageManager("pnpm", "pnpm-lock.yaml", "9"), "")
    # package.json's packageManager names the release, and which lock counts when there are several
    declared = {"packageManager": "pnpm@9.15.0+sha512.76e2379760a4328ec4415815bcd6628dee727af3779aaa4c914e3944156c4299"}
    assert choose(declared, ["package-lock.json", "pnpm-lock.yaml"], locks)[0] == PackageManager(
        "pnpm", "pnpm-lock.yaml", "9.15.0")
    assert choose({}, ["package-lock.json", "pnpm-lock.yaml"], locks)[0] == PackageManager("npm", "package-lock.json")
    assert choose({"packageManager": "yarn@4.5.0"}, ["package-lock.json", "yarn.lock"], locks)[0] == PackageManager(
        "yarn", "yarn.lock", "4.5.0")
    manager, why = choose({}, ["pnpm-lock.yaml", "pnpm-workspace.yaml"], locks)
    assert manager is None and why == "a pnpm workspace (pnpm-workspace.yaml) is not supported yet"
    manager, why = choose({}, ["pnpm-lock.yaml"], {"pnpm-lock.yaml": "lockfileVersion: '42.0'\n"}.get)
    assert manager is None and why == "pnpm-lock.yaml was written by a pnpm release LogoMesh does not know"
    assert choose({}, ["yarn.lock"], {"yarn.lock": "{}"}.get)[0] is None
    # the install never runs a package's script, and pnpm's own release comes from the registry first
    script = PackageManager("pnpm", "pnpm-lock.yaml", "9").script()
    assert script.startswith("npm install --global --prefix /tmp/logomesh-pm --ignore-scripts")
    assert "pnpm.cjs install --frozen-lockfile --ignore-scripts" in script
    assert PackageManager("npm", "package-lock.json").script().startswith("npm ci --ignore-scripts")
    planned = plan_javascript({"package.json": '{"devDependencies": {"vitest": "3"}, "scripts": {"test": "vitest"}}',
                               "pnpm-lock.yaml": pnpm9, "test/a.test.ts": ""}.get,
                              ["package.json", "pnpm-lock.yaml", "test/a.test.ts"], "18,22")
    assert planned.toolchain.error is None and planned.lock == "pnpm-lock.yaml" and planned.runner == "vitest"
    assert planned.manager == PackageManager("pnpm", "pnpm-lock.yaml", "9")


CLASSIC_LOCK = '''# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
# yarn lockfile v1


ms@^2.1.3:
  version "2.1.3"
  resolved "https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz#574c8138ce1d2b5861f0b44579dbadd60c6615b2"
  integrity sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==

left-pad@1.3.0:
  version "1.3.0"
  resolved "https://npm.example.com/left-pad/-/left-pad-1.3.0.tgz"
'''
BERRY_LOCK = '''# This file is generated by running "yarn install" inside your project.

__metadata:
  version: 8
  cacheKey: 10c0

"ms@npm:^2.1.3":
  version: 2.1.3
  resolution: "ms@npm:2.1.3"
'''


def test_yarn_classic_and_berry_are_told_apart_by_their_lock() -> None:
    from sandbox.languages.js_packages import PackageManager, choose, lock_for_install, yarn_line

    # Berry: the release that writes exactly this version (a later one refreshes the lock, which --immutable refuses)
    assert yarn_line(CLASSIC_LOCK) == "1.22" and yarn_line(BERRY_LOCK) == "4.12.0"
    assert yarn_line(BERRY_LOCK.replace("version: 8", "version: 6")) == "3.8.7"
    assert yarn_line(BERRY_LOCK.replace("version: 8", "version: 10")) == "4.18.1"
    assert yarn_line(BERRY_LOCK.replace("version: 8", "version: 99")) is None and yarn_line("") is None
    assert choose({}, ["yarn.lock"], {"yarn.lock": CLASSIC_LOCK}.get) == (PackageManager("yarn", "yarn.lock",
                                                                                          "1.22"), "")
    berry, _ = choose({}, ["yarn.lock"], {"yarn.lock": BERRY_LOCK}.get)
    assert berry == PackageManager("yarn", "yarn.lock", "4.12.0") and berry.berry
    declared = {"packageManager": "yarn@1.22.19+sha1.4e3a4a9d3c3e"}
    classic, _ = choose(declared, ["yarn.lock"], {"yarn.lock": BERRY_LOCK}.get)
    assert classic == PackageManager("yarn", "yarn.lock", "1.22.19") and not classic.berry
    manager, why = choose({"workspaces": ["packages/*"]}, ["yarn.lock"], {"yarn.lock": CLASSIC_LOCK}.get)
    assert manager is None and why == "a Yarn workspace (package.json's `workspaces`) is not supported yet"
    # never a script, never the tree's own Yarn release: classic from `yarn`, Berry from `@yarnpkg/cli-dist`
    assert classic.script().startswith("npm install --global --prefix /tmp/logomesh-pm --ignore-scripts")
    assert "yarn@1.22.19 && node /tmp/logomesh-pm/lib/node_modules/yarn/bin/yarn.js install --frozen-lockfile " \
           "--ignore-scripts" in classic.script()
    assert "@yarnpkg/cli-dist@4.12.0 && node /tmp/logomesh-pm/lib/node_modules/@yarnpkg/cli-dist/bin/yarn.js install " \
           "--immutable" in berry.script()
    settings = berry.environment("https://registry.example/npm/", "http://10.0.0.1:3128")
    assert settings["YARN_ENABLE_SCRIPTS"] == "false" and settings["YARN_NODE_LINKER"] == "node-modules"
    assert settings["YARN_NPM_REGISTRY_SERVER"] == "https://registry.example/npm"
    assert settings["YARN_HTTPS_PROXY"] == "http://10.0.0.1:3128" and classic.environment("r", "p") == {}
    assert all(name.startswith("YARN_") for name in settings)  # Berry refuses a setting it does not know
    # classic fetches the URL its lock records: the public registries' become the operator's, no other changes
    pointed = lock_for_install(classic, CLASSIC_LOCK, "https://registry.example/npm/")
    assert 'resolved "https://registry.example/npm/ms/-/ms-2.1.3.tgz#574c8138' in pointed
    assert 'resolved "https://npm.example.com/left-pad/-/left-pad-1.3.0.tgz"' in pointed
    assert pointed.count("integrity sha512-6FlzubTLZG3J2a") == 1
    assert lock_for_install(classic, CLASSIC_LOCK, "https://registry.yarnpkg.com") == CLASSIC_LOCK
    assert lock_for_install(berry, BERRY_LOCK, "https://registry.example/npm/") == BERRY_LOCK
