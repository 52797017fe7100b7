"""JavaScript's tests in the sandbox: the plan from ``package.json``, node's own runner in the container with a
reporter LogoMesh writes, its events read.

**Plan** (:func:`plan_javascript`): the tree's test files as node's runner finds them (``test/``, ``*.test.js``, …;
:func:`checks.languages.javascript.test_files`), never the project's ``test`` script. The Node.js of the sandbox
image (its ``org.logomesh.node`` label) must satisfy ``engines.node`` of ``package.json`` and ``.nvmrc`` /
``.node-version``; otherwise the run is an ``env_error`` naming both. The npm registry is not reachable from the
test container and packages are not installed yet: a project with dependencies (``dependencies``,
``devDependencies``: Jest, Vitest and Mocha among them) or with TypeScript tests (they need a compiler from those
dependencies) is an ``env_error`` naming what it needs — the environment's gap, never the change's failure.

**Run** (:func:`run_javascript`): ``node --test --test-reporter=<LogoMesh's reporter> --test-reporter-destination=
stdout <the test files>`` in the sandbox's container (no network, the rubric's limits). The reporter is a file
LogoMesh puts outside the tree, read-only; node's runner starts one child process per test file and reads the
child's events itself, so a test that prints ``ok 1 - …`` (TAP) prints output, not an outcome, and a test file cannot
reach the reporter, which runs in the parent process.

**Outcomes** (:func:`read_events`) come only from that reporter's lines on the parent's standard output. A test's id
is its file and its suites' and its own names (``test/calc.test.js::calc > adds``); a file that fails outside any
test (it does not load, it throws at its top) is one error, ``test/calc.test.js::(file)``. A test file that ends its
process early (``process.exit(0)``) leaves its tests without an outcome: missing at head, which the differential
compares with the base.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from checks.languages import javascript as court_js
from checks.models import TestCaseResult, TestRunResult, TestSpec, ToolchainPlan
from sandbox.limits import SandboxLimits
from sandbox.redact import clean_test_output, redact, stable_text

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Exec
    from sandbox.trees import Tree

NODE_LABEL = "org.logomesh.node"
REPO = "/sandbox/repo"
HERE = "/sandbox/logomesh"
REPORTER = "reporter.mjs"
MARK = "LOGOMESH-JS "
MAX_TESTS = 20_000
MAX_NAME = 300
MAX_MESSAGE = 2000
MAX_LINE = 1 << 20
DEPENDENCY_KEYS = ("dependencies", "devDependencies", "optionalDependencies")
# test runners that are npm packages: a project whose tests run with one needs its node_modules
RUNNERS = ("jest", "vitest", "mocha", "ava", "jasmine", "karma", "tap", "uvu", "playwright", "cypress")
RUNNER_WORD = re.compile(r"(?<![\w@/.-])(" + "|".join(RUNNERS) + r")(?![\w-])")
LOCATION = re.compile(r"\(?/sandbox/repo/([^\s():]+):(\d+):\d+\)?")
# node's runner hands LogoMesh's reporter every event of every file; the reporter writes one line per start and
# outcome, each marked, to the parent process's standard output (the channel the sandbox reads)
REPORTER_SOURCE = """\
const MARK = MARK_VALUE;
function message(error) {
  if (!error) return null;
  const cause = error.cause || error;
  let text;
  try { text = String((cause && (cause.stack || cause.message)) || cause); } catch { text = 'an error' }
  return text.slice(0, 8000);
}
export default async function* logomesh(source) {
  for await (const event of source) {
    const data = event.data || {};
    if (event.type === 'test:stderr') {
      yield MARK + JSON.stringify({ type: event.type, name: '', file: data.file ? String(data.file) : null,
                                    message: String(data.message).slice(0, 8000) }) + '\\n';
      continue;
    }
    if (event.type !== 'test:start' && event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const error = data.details && data.details.error;
    yield MARK + JSON.stringify({
      type: event.type, name: String(data.name), nesting: Number(data.nesting) || 0,
      file: data.file ? String(data.file) : null,
      skip: data.skip !== undefined && data.skip !== false, todo: data.todo !== undefined && data.todo !== false,
      failure: error ? String(error.failureType || '') : null, message: message(error),
    }) + '\\n';
  }
}
""".replace("MARK_VALUE", json.dumps(MARK))


# --- the plan -----------------------------------------------------------------------------------------------


def _major(text: str) -> int | None:
    found = re.match(r"\s*v?(\d+)", text)
    return int(found.group(1)) if found else None


def _comparator(version: tuple[int, int, int], token: str) -> bool:
    """Whether ``version`` satisfies one comparator of a semver range (``>=18``, ``^20.1``, ``~18.19``, ``18.x``)."""
    found = re.fullmatch(r"(>=|<=|>|<|=|\^|~)?v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(?:-\S*)?", token)
    if found is None:
        return True  # a comparator LogoMesh does not read constrains nothing it can check
    op, *parts = found.groups()
    numbers: list[int] = []
    for part in parts:
        if part is None or not part.isdigit():
            break
        numbers.append(int(part))
    if not numbers:
        return True  # ``*``, ``x``: any version
    given = len(numbers)
    wanted = _version(".".join(map(str, numbers)))
    if op in (None, "="):
        return version[:given] == wanted[:given]
    if op == "^":
        return version >= wanted and version[0] == wanted[0]
    if op == "~":
        return version >= wanted and version[:min(given, 2)] == wanted[:min(given, 2)]
    if op == ">=":
        return version >= wanted
    if op == "<":
        return version < wanted
    if op == ">":
        return version[:given] > wanted[:given]
    return version[:given] <= wanted[:given]  # "<="


def satisfies(version: tuple[int, int, int], wanted: str) -> bool:
    """Whether a Node.js version satisfies a range as ``engines`` writes it (``>=18 <21``, ``^18.17 || >=20``)."""
    for alternative in wanted.split("||"):
        text = re.sub(r"(>=|<=|>|<|=|\^|~)\s+", r"\1", alternative.strip())
        hyphen = re.fullmatch(r"(\S+)\s+-\s+(\S+)", text)
        tokens = [f">={hyphen.group(1)}", f"<={hyphen.group(2)}"] if hyphen else text.split()
        if all(_comparator(version, token) for token in tokens):
            return True
    return False


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch, *_ = [*(int(p) for p in re.findall(r"\d+", text)[:3]), 0, 0, 0]
    return major, minor, patch


def offered_version(label: str) -> tuple[int, int, int]:
    """The image's Node.js as a version: its label names the major version only (``18``), which stands for the
    suite's latest release of that line (bookworm's 18.19), so ``^18.17`` holds and an exact ``18.19.0`` does not."""
    major, minor, patch = _version(label)
    return (major, minor, patch) if re.fullmatch(r"\d+\.\d+(\.\d+)?", label.strip()) else (major, 99, 99)


@dataclass(frozen=True)
class JavaScriptPlan:
    toolchain: ToolchainPlan
    files: tuple[str, ...]


def plan_javascript(read: Callable[[str], str | None], paths: list[str], offered: str | None) -> JavaScriptPlan:
    """The Node.js and the test files for the tree's tests (module docstring)."""
    tests = court_js.test_files(paths)
    scripts = tuple(p for p in tests if p.endswith(court_js.SCRIPT_SUFFIXES))
    typed = tuple(p for p in tests if not p.endswith(court_js.SCRIPT_SUFFIXES))
    sources: list[str] = ["package.json"]
    wanted: list[str] = []
    error = None
    try:
        manifest = json.loads(read("package.json") or "{}")
    except ValueError as exc:
        manifest, error = {}, f"package.json does not parse: {exc}"
    if not isinstance(manifest, dict):
        manifest, error = {}, "package.json is not a JSON object"
    engines = manifest.get("engines")
    if isinstance(engines, dict) and isinstance(engines.get("node"), str) and engines["node"].strip():
        wanted.append(engines["node"].strip())
    for name in court_js.VERSION_FILES:
        text = (read(name) or "").strip() if name in paths else ""
        if text and _major(text) is not None:
            wanted.append(text.lstrip("v").split()[0])
            sources.append(name)
    dependencies = sorted({name for key in DEPENDENCY_KEYS if isinstance(manifest.get(key), dict)
                           for name in manifest[key]})
    locks = [name for name in court_js.LOCK_FILES if name in paths]
    scripts_field = manifest.get("scripts")
    test_script = scripts_field.get("test") if isinstance(scripts_field, dict) else None
    said = RUNNER_WORD.search(test_script) if isinstance(test_script, str) else None
    configured = sorted(p for p in paths if "/" not in p and court_js.is_harness_path(p)
                        and court_js.RUNNER_CONFIG.match(p))
    named = RUNNER_WORD.search(configured[0].lstrip(".").replace("rc", ".")) if configured else None
    runner = said.group(1) if said else (named.group(1) if named else configured[0]) if configured else None
    version = offered
    if not tests:
        error = None  # nothing to run: no plan to hold against the project
    elif error is not None:
        pass
    elif not offered:
        error = "the sandbox image offers no Node.js (build it with `logomesh sandbox build-image --force`)"
    elif any(not satisfies(offered_version(offered), w) for w in wanted):
        error = f"the project asks for Node.js {' and '.join(wanted)}; the sandbox image offers Node.js {offered}"
        version = None
    elif runner is not None:
        why = "package.json's test script" if said else configured[0]
        error = (f"the project's tests run with {runner} ({why}), an npm package LogoMesh does not install yet: "
                 "LogoMesh runs tests with node's own runner only")
    elif dependencies:
        shown = ", ".join(dependencies[:6]) + (f" and {len(dependencies) - 6} more" if len(dependencies) > 6 else "")
        error = (f"the project's npm packages ({shown}) are not installed in the sandbox: LogoMesh does not install "
                 "npm dependencies yet" + (f" (from {', '.join(locks)})" if locks else ""))
    elif typed and not scripts:
        error = (f"the project's tests are TypeScript ({', '.join(typed[:3])}): they need a compiler from its npm "
                 "dependencies, which LogoMesh does not install yet")
    plan = ToolchainPlan(language=court_js.NAME, version=version if not error else None,
                         wanted=" and ".join(wanted) or None, offered=(offered,) if offered else (), modules=("",),
                         missing=tuple(dependencies), sources=tuple(sources + locks), error=error)
    return JavaScriptPlan(toolchain=plan, files=scripts)


# --- reading the reporter's lines ---------------------------------------------------------------------------


OUTCOME_ORDER: dict[str, int] = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def _text(value: str, limit: int) -> str:
    return stable_text(redact(value[-limit:]))


def _relative(file: str | None) -> str | None:
    if file is None:
        return None
    if file.startswith("file://"):
        file = file[len("file://"):]
    file = posixpath.normpath(file)
    return file[len(REPO) + 1:] if file.startswith(REPO + "/") else None


def read_events(stream: bytes) -> tuple[list[TestCaseResult], list[TestCaseResult], int]:
    """``(tests, file errors, tests past the cap)`` from the reporter's lines of one run."""
    stacks: dict[str, list[str]] = {}
    found: dict[str, TestCaseResult] = {}
    errors: dict[str, TestCaseResult] = {}
    failing_files: set[str] = set()
    stderr: dict[str, list[str]] = {}
    for raw in stream.splitlines():
        if len(raw) > MAX_LINE or not raw.startswith(MARK.encode()):
            continue
        try:
            event = json.loads(raw[len(MARK):])
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("name"), str):
            continue
        file = _relative(event.get("file"))
        if file is None:
            continue
        level = event.get("nesting")
        nesting = level if isinstance(level, int) and 0 <= level < 1000 else 0
        name = str(event["name"])[:MAX_NAME]
        if event.get("type") == "test:stderr":  # what a test file wrote to its standard error: for its errors
            said = stderr.setdefault(file, [])
            if isinstance(event.get("message"), str) and sum(map(len, said)) < MAX_MESSAGE * 4:
                said.append(event["message"])
            continue
        stack = stacks.setdefault(file, [])
        whole_file = nesting == 0 and name in (f"{REPO}/{file}", file)
        if event.get("type") == "test:start":
            del stack[nesting:]
            stack.append(name)
            continue
        path = [*stack[:nesting], name] if len(stack) >= nesting else [name]
        failed = event.get("type") == "test:fail" and not event.get("todo")
        message = event.get("message") if isinstance(event.get("message"), str) else None
        if whole_file:
            if failed:
                errors[file] = TestCaseResult(name=f"{file}{court_js.FILE_ID}", outcome="error",
                                              message=_text(message or "the test file failed outside any test",
                                                            MAX_MESSAGE))
            continue
        if failed and event.get("failure") == "subtestsFailed":
            failing_files.add(file)
            continue  # a suite failing because its tests did: they are reported themselves
        outcome: Literal["passed", "failed", "skipped"] = (
            "failed" if failed else "skipped" if event.get("skip") or event.get("todo") else "passed")
        location = None
        shown = None
        if outcome == "failed":
            failing_files.add(file)
            shown = _text(message or "failed", MAX_MESSAGE)
            at = LOCATION.search(message or "")
            location = f"{at.group(1)}:{at.group(2)}" if at else None
        result = TestCaseResult(name=court_js.node_id(file, path), outcome=outcome, message=shown, location=location)
        earlier = found.get(result.name)
        if earlier is None or OUTCOME_ORDER[outcome] > OUTCOME_ORDER[earlier.outcome]:
            found[result.name] = result  # the same id twice: the worse outcome stands
    tests = list(found.values())
    past_cap = max(0, len(tests) - MAX_TESTS)
    kept_errors = [e.model_copy(update={"message": _text("".join(stderr[file]).strip(), MAX_MESSAGE)})
                   if file in stderr and "".join(stderr[file]).strip() else e
                   for file, e in sorted(errors.items()) if file not in failing_files]
    return tests[:MAX_TESTS], kept_errors, past_cap


# --- the run ------------------------------------------------------------------------------------------------


def image_node_version(sandbox: DockerSandbox) -> str | None:
    labels = sandbox.client.images.get(sandbox.image).labels or {}
    return labels.get(NODE_LABEL, "").strip() or None


def node_env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "NODE_ENV": "test", "NO_COLOR": "1",  # noqa: S108
            "NODE_OPTIONS": "", "NODE_PATH": ""}


def reporter_tar() -> bytes:
    from sandbox.tarball import owned_files_tar

    return owned_files_tar(HERE.rsplit("/", 1)[1], {REPORTER: REPORTER_SOURCE.encode()})


async def run_javascript(sandbox: DockerSandbox, spec: TestSpec, tree: Tree, limits: SandboxLimits,
                         run: Any) -> TestRunResult:
    """Run the tree's JavaScript tests (module docstring); ``run`` holds the Docker objects the caller removes."""
    import asyncio

    from sandbox.docker_sandbox import MAX_CHANNEL_BYTES

    paths = await asyncio.to_thread(tree.paths)
    offered = await asyncio.to_thread(image_node_version, sandbox)
    plan = await asyncio.to_thread(plan_javascript, tree.read, paths, offered)
    base: dict[str, Any] = {"tree": spec.tree, "image": sandbox.image, "toolchains": (plan.toolchain,)}
    if plan.toolchain.error:
        return TestRunResult(status="env_error", reason=plan.toolchain.error, **base)
    files = plan.files
    if spec.rerun:
        wanted = {name.split("::", 1)[0] for name in spec.rerun}
        files = tuple(f for f in files if f in wanted)
    if not files:
        return TestRunResult(status="no_tests", **{**base, "toolchains": ()})
    await sandbox._thread(run, sandbox._start, run, sandbox.image, reporter_tar(), tree, None)
    argv = ["node", "--test", f"--test-reporter={HERE}/{REPORTER}", "--test-reporter-destination=stdout",
            *[f"./{f}" for f in files]]
    done: _Exec = await sandbox._exec_in(run.container, argv, limits, env=node_env(), run=run, workdir=REPO,
                                         channel=True)
    output = clean_test_output(bytes(done.stderr), limits.output_bytes)
    status, reason = "ran", None
    if done.channel_bytes > MAX_CHANNEL_BYTES:
        return TestRunResult(status="error", reason=f"the test reporter's stream is larger than {MAX_CHANNEL_BYTES}"
                             " bytes", output=output, **base)
    tests, errors, past_cap = await asyncio.to_thread(read_events, bytes(done.stdout))
    if done.timed_out:
        status, reason = "timeout", f"killed: wall-clock timeout after {limits.timeout_seconds:g} s"
    elif done.oom_killed:
        status, reason = "error", f"killed: out of memory (limit {limits.memory_mb} MB)"
    elif done.output_overflow:
        status, reason = "error", f"killed: output exceeded {limits.output_kill_bytes} bytes"
    elif done.exit_code not in (0, 1) and not tests and not errors:
        tail = "\n".join(bytes(done.stderr).decode("utf-8", "replace").strip().splitlines()[-8:])
        status, reason = "error", f"node --test ended (exit code {done.exit_code}) without running a test: {tail}"
    if status == "ran" and not tests and not errors:
        status = "no_tests"
    return TestRunResult(
        status=status, reason=reason, collected=len(tests) + past_cap, collection_errors=tuple(errors),
        passed=sum(t.outcome == "passed" for t in tests), failed=sum(t.outcome == "failed" for t in tests),
        errored=len(errors), skipped=sum(t.outcome == "skipped" for t in tests), tests=tuple(tests),
        past_cap=past_cap, output=output, **base)
