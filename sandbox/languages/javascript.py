"""JavaScript's (and TypeScript's) tests in the sandbox: the plan from ``package.json``, node's own runner — or
the project's Jest, Vitest or Mocha (:mod:`sandbox.languages.js_runners`) — in the container with a reporter
LogoMesh writes, its lines read.

**Plan** (:func:`plan_javascript`): for node's runner, the tree's test files as node's runner finds them
(``test/``, ``*.test.js``, …; :func:`checks.languages.javascript.test_files`); Jest, Vitest and Mocha choose theirs
by the project's configuration; the project's ``test`` script never runs. The tests run with the oldest Node.js
line of the sandbox image (its ``org.logomesh.node`` label: ``18,22``) that satisfies ``engines.node`` of
``package.json`` and ``.nvmrc`` / ``.node-version``; when none does, the run is an ``env_error`` naming both. The
npm registry is not reachable from the test container: a project's packages are installed from its lock file in
the setup phase (:func:`prepare_npm`: ``npm ci --ignore-scripts``, or pnpm's or Yarn's frozen install,
:mod:`sandbox.languages.js_packages`); a project whose packages cannot be installed that way (no lock file, a Bun
lock or a workspace only), whose tests run with another npm runner (AVA, Jasmine…) or are TypeScript under node's
runner is an ``env_error`` naming what it needs — the environment's gap, never the change's failure.

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

import asyncio
import contextlib
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from docker.errors import DockerException, ImageNotFound

from checks.languages import javascript as court_js
from checks.models import (
    MutantResult,
    ProbeResult,
    SetupReport,
    TestCaseResult,
    TestRunResult,
    TestSpec,
    ToolchainPlan,
)
from sandbox.egress import allowed_for
from sandbox.errors import SandboxError
from sandbox.languages import coverage, js_packages, js_runners, mutants
from sandbox.languages.coverage import LineCoverage
from sandbox.limits import SANDBOX_UID, SandboxLimits
from sandbox.redact import clean_output, clean_test_output
from sandbox.setup_network import setup_network
from sandbox.tarball import owned_files_tar

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Exec, _Run
    from sandbox.trees import Tree

NODE_LABEL = "org.logomesh.node"
REPO = "/sandbox/repo"
HERE = "/sandbox/logomesh"
REPORTER = "reporter.mjs"
PROBE_SCRIPT = "main.cjs"  # a Red Agent's probe program, beside the tree like the reporters
MARK, MAX_TESTS, MAX_NAME = js_runners.MARK, js_runners.MAX_TESTS, js_runners.MAX_NAME
MAX_MESSAGE = js_runners.MAX_MESSAGE
DEPENDENCY_KEYS = ("dependencies", "devDependencies", "optionalDependencies")
NPM_LOCKS = js_packages.NPM_LOCKS
NPM_DIR = "/opt/logomesh/envs/node"  # the installed packages, in the environment's image
NPM_SETUP = "/opt/logomesh/envs/npm-setup"
NPM_LAYOUT = 1
# test runners that are npm packages: a project whose tests run with one needs its node_modules
RUNNERS = ("jest", "vitest", "mocha", "ava", "jasmine", "karma", "tap", "uvu", "playwright", "cypress")
RUNNER_WORD = re.compile(r"(?<![\w@/.-])(" + "|".join(RUNNERS) + r")(?![\w-])")
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


def offered_lines(label: str | None) -> tuple[str, ...]:
    """The Node.js lines of an image's label (``18,22`` → ``("18", "22")``), oldest first."""
    found = [part.strip() for part in (label or "").split(",") if _major(part.strip()) is not None]
    return tuple(sorted(found, key=offered_version))


def node_home(version: str) -> str:
    """Where the image keeps the line ``version``'s node (``/opt/logomesh/node-22``)."""
    from sandbox.image import NODE_HOME  # the image's layout (imported here: sandbox.image loads the sandbox)

    return NODE_HOME.format(major=_major(version))


@dataclass(frozen=True)
class JavaScriptPlan:
    toolchain: ToolchainPlan
    files: tuple[str, ...]
    lock: str | None = None  # the lock file the packages are installed from (None: nothing to install)
    runner: str = "node"  # node's own runner, or one of js_runners.RUNNERS
    manager: js_packages.PackageManager | None = None  # what installs the packages from ``lock``


def named_runner(manifest: dict[str, Any], paths: list[str], dependencies: list[str]) -> tuple[str | None, str]:
    """``(the npm test runner the project's tests run with, where that is said)``; ``(None, "")`` for node's own:
    its ``test`` script's runner, else a runner configuration file's, else Jest's ``jest`` field of
    ``package.json`` or a Vite configuration beside a ``vitest`` dependency."""
    scripts_field = manifest.get("scripts")
    test_script = scripts_field.get("test") if isinstance(scripts_field, dict) else None
    said = RUNNER_WORD.search(test_script) if isinstance(test_script, str) else None
    if said:
        return said.group(1), "package.json's test script"
    configured = sorted(p for p in paths if "/" not in p and court_js.is_harness_path(p)
                        and court_js.RUNNER_CONFIG.match(p))
    for name in configured:
        found = RUNNER_WORD.search(name.lstrip(".").replace("rc", "."))
        if found:
            return found.group(1), name
    if isinstance(manifest.get("jest"), dict):
        return "jest", "package.json's jest field"
    vite = next((name for name in configured if name.startswith("vite.")), None)
    if vite is not None and "vitest" in dependencies:
        return "vitest", vite
    return None, ""


def plan_javascript(read: Callable[[str], str | None], paths: list[str], offered: str | None) -> JavaScriptPlan:
    """The Node.js, the runner and the test files for the tree's tests (module docstring)."""
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
    manager, unsupported = (js_packages.choose(manifest, paths, read) if dependencies else (None, ""))
    runner, why = named_runner(manifest, paths, dependencies)
    known = js_runners.RUNNERS.get(runner or "")
    lines = offered_lines(offered)
    # the oldest line the project allows: the one its range was written for, not the newest the image has
    version = next((line for line in lines if all(satisfies(offered_version(line), w) for w in wanted)), None)
    if not tests:
        error = None  # nothing to run: no plan to hold against the project
    elif error is not None:
        pass
    elif not lines:
        error = "the sandbox image offers no Node.js (build it with `logomesh sandbox build-image --force`)"
    elif version is None:
        error = (f"the project asks for Node.js {' and '.join(wanted)}; the sandbox image offers Node.js "
                 f"{', '.join(lines)}")
    elif runner is not None and known is None:
        known_names = [r.name.capitalize() for r in js_runners.RUNNERS.values()]
        error = (f"the project's tests run with {runner} ({why}); LogoMesh runs tests with node's own runner "
                 f"(node --test), {', '.join(known_names[:-1])} and {known_names[-1]}, not yet with that runner")
    elif known is not None and known.package not in dependencies:
        error = (f"the project's tests run with {runner} ({why}), which is not among package.json's "
                 "dependencies")
    elif dependencies and manager is None:
        shown = ", ".join(dependencies[:6]) + (f" and {len(dependencies) - 6} more" if len(dependencies) > 6 else "")
        error = f"the project's npm packages ({shown}) cannot be installed: {unsupported}"
    elif typed and not scripts and known is None:
        error = (f"the project's tests are TypeScript ({', '.join(typed[:3])}): node's own runner needs a compiler "
                 "from its npm dependencies (LogoMesh runs TypeScript tests with Jest or Vitest)")
    plan = ToolchainPlan(language=court_js.NAME, version=version if not error else None,
                         wanted=" and ".join(wanted) or None, offered=lines, modules=("",),
                         missing=tuple(dependencies) if error else (),
                         sources=tuple(sources + ([manager.lock] if manager is not None else locks)), error=error,
                         runner=known.name if known is not None else "node --test",
                         covers=("TypeScript",) if known is not None else ())
    return JavaScriptPlan(toolchain=plan, files=tests if known is not None else scripts,
                          lock=manager.lock if manager is not None and not error else None,
                          runner=known.name if known is not None else "node", manager=manager if not error else None)


# --- reading the reporter's lines ---------------------------------------------------------------------------


_text, _relative = js_runners.text, js_runners.relative


def read_events(stream: bytes) -> tuple[list[TestCaseResult], list[TestCaseResult], int]:
    """``(tests, file errors, tests past the cap)`` from the reporter's lines of one run."""
    stacks: dict[str, list[str]] = {}
    found: dict[str, TestCaseResult] = {}
    errors: dict[str, TestCaseResult] = {}
    failing_files: set[str] = set()
    stderr: dict[str, list[str]] = {}
    for event in js_runners.marked_events(stream):
        if not isinstance(event.get("name"), str):
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
        if outcome == "failed":
            failing_files.add(file)
        js_runners.keep_worse(found, js_runners.case_result(file, path, outcome, message))
    tests = list(found.values())
    past_cap = max(0, len(tests) - MAX_TESTS)
    kept_errors = [e.model_copy(update={"message": _text("".join(stderr[file]).strip(), MAX_MESSAGE)})
                   if file in stderr and "".join(stderr[file]).strip() else e
                   for file, e in sorted(errors.items()) if file not in failing_files]
    return tests[:MAX_TESTS], kept_errors, past_cap


# --- the environment: npm ci in the setup phase -------------------------------------------------------------


def lock_key(lock_text: str) -> tuple[str, ...]:
    """What a ``package-lock.json`` pins: each package's path, version and integrity hash (lockfile versions 1-3),
    sorted; ``ValueError`` when it does not parse."""
    data = json.loads(lock_text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    pinned: list[str] = []
    packages = data.get("packages")
    if isinstance(packages, dict):
        for path, entry in packages.items():
            if path and isinstance(entry, dict):
                pinned.append(f"{path} {entry.get('version')} {entry.get('integrity') or entry.get('resolved')}")
    else:
        stack: list[tuple[str, Any]] = [("", data.get("dependencies"))]
        while stack:
            prefix, deps = stack.pop()
            if not isinstance(deps, dict):
                continue
            for name, entry in deps.items():
                if isinstance(entry, dict):
                    pinned.append(f"{prefix}{name} {entry.get('version')} {entry.get('integrity')}")
                    stack.append((f"{prefix}{name}/", entry.get("dependencies")))
    return tuple(sorted(pinned))


def npm_tag(sandbox: DockerSandbox, manifest: str, lock: str,
            manager: js_packages.PackageManager | None = None) -> str:
    """The environment cache's tag for these packages: the image, the registry, the scope, the package manager,
    ``package.json``'s dependency fields and the lock file's pinned integrity hashes (npm's, read; another manager's
    lock, its whole text)."""
    from sandbox.setup_phase import ENV_REPOSITORY

    try:
        image_id = sandbox.client.images.get(sandbox.image).id
    except DockerException:
        image_id = sandbox.image
    data = json.loads(manifest)
    fields = {key: data.get(key) for key in (*DEPENDENCY_KEYS, "peerDependencies", "overrides", "workspaces")}
    manager = manager or js_packages.PackageManager("npm", "package-lock.json")
    pinned = lock_key(lock) if manager.name == "npm" else hashlib.sha256(lock.encode()).hexdigest()
    material = [NPM_LAYOUT, image_id, sandbox.setup.npm_registry, sandbox.setup.scope,
                json.dumps(fields, sort_keys=True), pinned]
    if manager.name != "npm":
        material.append((manager.name, manager.version))
    return f"{ENV_REPOSITORY}:npm-{hashlib.sha256(repr(material).encode()).hexdigest()[:32]}"


def prepare_npm(sandbox: DockerSandbox, run: _Run, tree: Tree, lock: str,
                manager: js_packages.PackageManager | None = None) -> tuple[str | None, SetupReport]:
    """``(the environment's image, the report)``: the packages ``lock`` pins, installed by ``manager`` (``npm ci
    --ignore-scripts``, or pnpm's or Yarn's frozen install: :mod:`sandbox.languages.js_packages`) in a setup
    container whose only network is the egress proxy to the registry, committed to the environment cache (a hit is
    reused). The image is None when the install failed (the report says why)."""
    from sandbox.setup_phase import ENV_LABEL, REFUSED_LABEL, _lock_for, _refused_label, evict

    if not sandbox.setup.allow:
        return None, SetupReport(status="forbidden", reason="this server runs no setup phase "
                                 "(LOGOMESH_SANDBOX_ALLOW_SETUP=false): the project's npm packages are not installed")
    manifest, lock_text = tree.read("package.json") or "{}", tree.read(lock) or ""
    try:
        manager = manager or js_packages.PackageManager("npm", lock)
        tag = npm_tag(sandbox, manifest, lock_text, manager)
    except ValueError as exc:
        return None, SetupReport(status="failed", reason=f"{lock} does not parse: {exc}")
    api = sandbox.client.api
    with _lock_for(tag):  # head, base and guard start together: one installs, the others find it cached
        try:
            image = sandbox.client.images.get(tag)
            repository, _, version = tag.partition(":")
            with contextlib.suppress(DockerException):
                api.tag(tag, repository, version)  # dates the entry for the cache's LRU eviction
            return tag, SetupReport(status="installed", refused=_refused_label(image.labels))
        except ImageNotFound:
            pass
        options = sandbox.setup
        limits = replace(sandbox.limits, memory_mb=max(sandbox.limits.memory_mb, options.memory_mb),
                         pids=max(sandbox.limits.pids, options.pids), cpus=max(sandbox.limits.cpus, 1.0),
                         tmp_mb=max(sandbox.limits.tmp_mb, 1024), fsize_mb=max(sandbox.limits.fsize_mb, 1024),
                         nofile=max(sandbox.limits.nofile, 4096), timeout_seconds=options.timeout_seconds)
        with setup_network(sandbox, run, allowed_for([options.npm_registry])) as network:
            try:
                helper = sandbox._create(run, sandbox.image, network=network.name, read_only=False, mounts=[],
                                         limits=limits)
                run.helpers.append(helper)
                api.start(helper)
                network.watch(helper)
                saved = "package-lock.json" if manager.name == "npm" else lock
                files = {"package.json": manifest.encode(),
                         saved: js_packages.lock_for_install(manager, lock_text, options.npm_registry).encode()}
                if options.ca_bundle is not None:
                    files["ca.pem"] = options.ca_bundle.read_bytes()
                api.put_archive(helper, NPM_SETUP.rsplit("/", 1)[0], owned_files_tar(NPM_SETUP.rsplit("/", 1)[1],
                                                                                      files))
            except (DockerException, OSError) as exc:
                raise SandboxError(f"the setup container could not start: {exc}") from exc
            env = {"HTTP_PROXY": network.proxy_url, "HTTPS_PROXY": network.proxy_url,
                   "npm_config_proxy": network.proxy_url, "npm_config_https_proxy": network.proxy_url,
                   "npm_config_registry": options.npm_registry, "npm_config_ignore_scripts": "true",
                   "npm_config_audit": "false", "npm_config_fund": "false", "npm_config_update_notifier": "false",
                   "npm_config_cache": "/tmp/npm-cache", "HOME": "/tmp", "PATH": "/usr/bin:/bin",  # noqa: S108
                   "NO_COLOR": "1"}
            env.update(manager.environment(options.npm_registry, network.proxy_url))
            newest = offered_lines(image_node_version(sandbox))[-1:]
            if manager.name != "npm" and newest:  # a package manager from the registry: the newest Node.js runs it
                env["PATH"] = f"{node_home(newest[0])}/bin:{env['PATH']}"
            if options.ca_bundle is not None:
                env["npm_config_cafile"] = env["NODE_EXTRA_CA_CERTS"] = f"{NPM_SETUP}/ca.pem"
            # writable copies: Yarn 4 writes its own name into package.json's packageManager
            script = (f"mkdir -p {NPM_DIR} && cp {NPM_SETUP}/package.json {NPM_SETUP}/{saved} {NPM_DIR}/ "
                      f"&& cd {NPM_DIR} && chmod u+w package.json {saved} && {manager.script()}")
            done = asyncio.run(sandbox._exec_in(helper, ["sh", "-c", script], limits, env=env, workdir="/"))
            refused = network.refused()
        if done.timed_out or done.exit_code != 0:
            why = (f"{manager.command} timed out after {limits.timeout_seconds:g} s" if done.timed_out
                   else f"{manager.command} failed (exit code {done.exit_code})")
            text = clean_test_output(bytes(done.combined), 16000)
            last = [line for line in text.splitlines() if line.strip()][-3:]
            return None, SetupReport(status="failed", reason=why + (": " + " | ".join(last) if last else ""),
                                     refused=refused)
        labels = {"org.logomesh.image": "env", ENV_LABEL: tag, REFUSED_LABEL: json.dumps(list(refused))}
        repository, _, version = tag.partition(":")
        try:
            api.kill(helper)
            api.commit(helper, repository=repository, tag=version, conf={
                "Labels": labels, "User": f"{SANDBOX_UID}:{SANDBOX_UID}", "WorkingDir": REPO})
        except DockerException as exc:
            raise SandboxError(f"the environment could not be committed: {exc}") from exc
        evict(sandbox.client, options.cache_mb, keep=tag)
        return tag, SetupReport(status="installed", refused=refused)


# --- the run ------------------------------------------------------------------------------------------------


def image_node_version(sandbox: DockerSandbox) -> str | None:
    labels = sandbox.client.images.get(sandbox.image).labels or {}
    return labels.get(NODE_LABEL, "").strip() or None


def node_env(version: str | None = None) -> dict[str, str]:
    """The run's environment; the chosen line's node first on the PATH (a test that starts ``node`` gets it)."""
    first = f"{node_home(version)}/bin:" if version else ""
    return {"PATH": f"{first}/usr/bin:/bin", "HOME": "/tmp", "NODE_ENV": "test", "NO_COLOR": "1",  # noqa: S108
            "NODE_OPTIONS": "", "NODE_PATH": "", "CI": "true", "FORCE_COLOR": "0"}


def reporter_tar(extra: dict[str, bytes] | None = None) -> bytes:
    """node's runner's reporter and the npm runners' (read-only, beside the tree), with ``extra`` files (the
    mutants')."""
    return owned_files_tar(HERE.rsplit("/", 1)[1], {REPORTER: REPORTER_SOURCE.encode(),
                                                    coverage.V8_READER: coverage.v8_reader_source(),
                                                    **js_runners.reporter_sources(), **(extra or {})})


def link_packages(plan: JavaScriptPlan) -> str:
    """The shell step that gives the tree its installed packages: read-only in the image, linked one by one into the
    tree's own node_modules (unless the tree has one): a writable folder, where runners keep what they write (Vite's
    bundled configuration). Empty when nothing was installed."""
    installed = f"{NPM_DIR}/node_modules"
    return (f"[ -e node_modules ] || {{ mkdir node_modules && for entry in {installed}/* {installed}/.[!.]*; do "
            '[ -e "$entry" ] && ln -s "$entry" node_modules/; done; }; ' if plan.lock is not None else "")


def runner_argv(plan: JavaScriptPlan, files: tuple[str, ...], rerun: bool) -> list[str]:
    """The run's command: node's runner on LogoMesh's choice of files with its reporter on standard output; or the
    project's Jest / Vitest (its own choice of test files, ``files`` only for a re-run) with LogoMesh's reporter on
    file descriptor 3 and the runner's standard output moved to standard error (:mod:`sandbox.languages.js_runners`).
    """
    link = link_packages(plan)
    version = plan.toolchain.version
    node = f"{node_home(version)}/bin/node" if version else "node"
    runner = js_runners.RUNNERS.get(plan.runner)
    if runner is None:
        return ["sh", "-c", link + 'exec "$@"', "node", node, "--test", f"--test-reporter={HERE}/{REPORTER}",
                "--test-reporter-destination=stdout", *[f"./{f}" for f in files]]
    script = f"node_modules/{runner.script}"
    found = (f'[ -f {script} ] || {{ echo "{script} is not installed (the {runner.package} package of the lock '
             f'file)" >&2; exit 127; }}; ')
    return ["sh", "-c", link + found + f'exec {js_runners.CHANNEL_FD}>&1 1>&2; exec "$@"', "node", node, script,
            *runner.argv(f"{HERE}/{runner.reporter}", files if rerun else ())]


async def run_javascript(sandbox: DockerSandbox, spec: TestSpec, tree: Tree, limits: SandboxLimits,
                         run: Any) -> TestRunResult:
    """Run the tree's JavaScript tests (module docstring); ``run`` holds the Docker objects the caller removes."""
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
    image, setup = sandbox.image, None
    if plan.lock is not None:
        installed, setup = await sandbox._thread(run, prepare_npm, sandbox, run, tree, plan.lock, plan.manager)
        base["setup"] = setup
        if installed is None:  # the toolchain's plan carries why, so the verdict names it
            why = f"the project's npm packages could not be installed: {setup.reason}"
            base["toolchains"] = (plan.toolchain.model_copy(update={"error": why}),)
            return TestRunResult(status="env_error", reason=why, **base)
        image = installed
    mutating = spec.tree == "head" and not spec.rerun and bool(spec.mutants)
    extra = mutants.files(spec.mutants, tree.read) if mutating else None
    await sandbox._thread(run, sandbox._start, run, image, reporter_tar(extra), tree, None)
    version = plan.toolchain.version
    argv = runner_argv(plan, files, bool(spec.rerun))
    covering = mutating and plan.runner in coverage.V8_RUNNERS
    env = {**node_env(version), **({"NODE_V8_COVERAGE": coverage.V8_FOLDER} if covering else {})}
    async with sandbox.test_slot():
        done: _Exec = await sandbox._exec_in(run.container, argv, mutants.tests_limits(limits, spec),
                                             env=env, run=run, workdir=REPO, channel=True)
    output = clean_test_output(bytes(done.stderr), limits.output_bytes)
    status, reason = "ran", None
    if done.channel_bytes > MAX_CHANNEL_BYTES:
        return TestRunResult(status="error", reason=f"the test reporter's stream is larger than {MAX_CHANNEL_BYTES}"
                             " bytes", output=output, **base)
    shown = "node --test" if plan.runner == "node" else plan.runner
    ended = True
    if plan.runner == "node":
        tests, errors, past_cap = await asyncio.to_thread(read_events, bytes(done.stdout))
    else:
        tests, errors, past_cap, ended = await asyncio.to_thread(js_runners.read_cases, bytes(done.stdout))
    tail = "\n".join(bytes(done.stderr).decode("utf-8", "replace").strip().splitlines()[-8:])
    if done.timed_out:
        status, reason = "timeout", f"killed: wall-clock timeout after {limits.timeout_seconds:g} s"
    elif done.oom_killed:
        status, reason = "error", f"killed: out of memory (limit {limits.memory_mb} MB)"
    elif done.output_overflow:
        status, reason = "error", f"killed: output exceeded {limits.output_kill_bytes} bytes"
    elif done.exit_code not in (0, 1) and not tests and not errors:
        status, reason = "error", f"{shown} ended (exit code {done.exit_code}) without running a test: {tail}"
    elif not ended:
        status, reason = "error", (f"{shown} ended (exit code {done.exit_code}) before LogoMesh's reporter saw the "
                                   f"end of the run: {tail}")
    if status == "ran" and not tests and not errors:
        status = "no_tests"
    mutated: tuple[MutantResult, ...] = ()
    if mutating and status == "ran":
        def outcome(ran: _Exec) -> mutants.Outcome:
            if plan.runner == "node":
                found, failed, _cut = read_events(bytes(ran.stdout))
                return mutants.Outcome(found, failed, ended=ran.exit_code in (0, 1) or bool(found or failed))
            found, failed, _cut, ended = js_runners.read_cases(bytes(ran.stdout))
            return mutants.Outcome(found, failed, ended=ended)

        covered = (await _read_coverage(sandbox, run, version, spec, tree, limits)
                   if covering and done.exit_code == 0 else None)
        async with sandbox.test_slot():
            mutated = await mutants.run_mutants(
                sandbox, run, spec.mutants, spec.mutation_seconds, done.duration, tests, errors,
                (argv, REPO), env, limits, outcome, covered, scratch=(coverage.V8_FOLDER,) if covering else ())
    return TestRunResult(
        status=status, reason=reason, collected=len(tests) + past_cap, collection_errors=tuple(errors),
        passed=sum(t.outcome == "passed" for t in tests), failed=sum(t.outcome == "failed" for t in tests),
        errored=len(errors), skipped=sum(t.outcome == "skipped" for t in tests), tests=tuple(tests),
        past_cap=past_cap, output=output, mutants=mutated, **base)


async def _read_coverage(sandbox: DockerSandbox, run: Any, version: str | None, spec: TestSpec, tree: Tree,
                         limits: SandboxLimits) -> LineCoverage | None:
    """The mutated lines the head's tests ran, from V8's coverage of a run whose tests all passed (a process that
    was killed wrote none, and its lines would look unrun); None when it cannot be read."""
    from sandbox.docker_sandbox import MAX_CHANNEL_BYTES

    node = f"{node_home(version)}/bin/node" if version else "node"
    paths = sorted({m.path for m in spec.mutants})
    done = await sandbox._exec_in(run.container, [node, f"{HERE}/{coverage.V8_READER}", coverage.V8_FOLDER, *paths],
                                  limits.with_timeout(60), env=node_env(version), run=run, workdir=REPO, channel=True)
    if done.exit_code != 0 or done.channel_bytes > MAX_CHANNEL_BYTES:
        return None
    documents = coverage.parse_v8_lines(bytes(done.stdout))
    wanted: dict[str, set[int]] = {}
    for mutant in spec.mutants:
        wanted.setdefault(mutant.path, set()).add(mutant.line)
    return await asyncio.to_thread(coverage.read_v8, documents, tree.read, wanted)


# --- a probe of the Red Agent ---------------------------------------------------------------------------------


async def run_probe(sandbox: DockerSandbox, tree: Tree, code: str, limits: SandboxLimits, run: Any) -> ProbeResult:
    """Run the node program ``code`` as the head's tests run: the same image (its installed packages linked into the
    tree), Node.js line, variables and working directory; the newest line the image offers when the project names
    none its plan accepts. ``run`` holds the Docker objects the caller removes."""
    paths = await asyncio.to_thread(tree.paths)
    offered = await asyncio.to_thread(image_node_version, sandbox)
    plan = await asyncio.to_thread(plan_javascript, tree.read, paths, offered)
    lines = offered_lines(offered)
    version = plan.toolchain.version or (lines[-1] if lines else None)
    image = sandbox.image
    if plan.lock is not None:
        installed, _report = await sandbox._thread(run, prepare_npm, sandbox, run, tree, plan.lock, plan.manager)
        image = installed or image  # not installed: the module's own imports say so in the probe's output
    files = owned_files_tar(HERE.rsplit("/", 1)[1], {PROBE_SCRIPT: code.encode("utf-8", "surrogatepass")})
    await sandbox._thread(run, sandbox._start, run, image, files, tree, None)
    node = f"{node_home(version)}/bin/node" if version else "node"
    argv = ["sh", "-c", link_packages(plan) + 'exec "$@"', "node", node, f"{HERE}/{PROBE_SCRIPT}"]
    done: _Exec = await sandbox._exec_in(run.container, argv, limits, env=node_env(version), run=run, workdir=REPO)
    return ProbeResult(exit_code=None if done.timed_out else done.exit_code,
                       stdout=clean_output(bytes(done.stdout), limits.output_bytes),
                       stderr=clean_output(bytes(done.stderr), limits.output_bytes),
                       timed_out=done.timed_out, oom_killed=done.oom_killed, duration=round(done.duration, 3))
