"""Go's tests in the sandbox: the plan from ``go.mod``, ``go test -json`` in the container, its events read.

**Plan** (:func:`plan_go`): every module of the tree (a directory with ``go.mod``, ``vendor`` and ``testdata`` left
out) runs ``go test ./...`` at its root. The toolchain is the oldest one of the sandbox image (its
``org.logomesh.go`` label) that the highest ``go`` line of those ``go.mod`` files allows; none fits → ``env_error``
naming both. No Go module proxy is reachable from the sandbox: a module's requirements must be vendored
(``vendor/modules.txt``, run with ``-mod=vendor``) or replaced by a directory of the tree; otherwise the run is an
``env_error`` naming the missing modules (the environment's gap, never the change's failure).

**Run** (:func:`run_go`): the tree in the sandbox's container (no network, the rubric's limits), the toolchain's
warm build cache copied into the work dir, then per module ``go test -json -count=1 -vet=off -p 1 ./...`` with
``GOPROXY=off``, ``GOTOOLCHAIN=local``, ``GOWORK=off``, ``CGO_ENABLED=0`` and ``GOFLAGS`` set by LogoMesh alone.
The head's run, when it has mutants, also writes a cover profile outside the tree (:func:`cover_flags`), which spares
the mutants of lines no test ran (:mod:`sandbox.languages.coverage`).

**Outcomes** (:func:`read_events`) come only from the ``go`` command's standard output, the ``test2json`` event
stream: since Go 1.20 the test binary frames its own reports, so a test that prints ``--- PASS: TestX`` is output,
not an outcome. A test's id is its file and name (``calc/calc_test.go::TestAdd``, subtests ``…/case``); a package
that fails outside any test (a build failure, a ``TestMain`` that exits non-zero) is one error,
``calc::(package)``, with the compiler's message from standard error.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from checks.languages import go as court_go
from checks.models import MutantResult, ProbeResult, TestCaseResult, TestRunResult, TestSpec, ToolchainPlan
from sandbox.languages import coverage, mutants
from sandbox.languages.coverage import LineCoverage
from sandbox.limits import SandboxLimits
from sandbox.redact import clean_output, clean_test_output, redact, stable_text
from sandbox.tarball import owned_files_tar

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Exec
    from sandbox.trees import Tree

GO_LABEL = "org.logomesh.go"
GO_LINE = re.compile(r"^go\s+(\d+)\.(\d+)(?:\.\d+)?(?:\s*//.*)?\s*$", re.MULTILINE)
MODULE_LINE = re.compile(r"^module\s+(\S+)", re.MULTILINE)
REQUIRE_BLOCK = re.compile(r"^require\s*\((.*?)^\)", re.MULTILINE | re.DOTALL)
REQUIRE_LINE = re.compile(r"^require\s+([^\s(]+)\s+(\S+)", re.MULTILINE)
REPLACE_LOCAL = re.compile(r"^\s*(?:replace\s+)?(\S+)(?:\s+\S+)?\s+=>\s+(\.{1,2}/\S*|/\S*)", re.MULTILINE)
LOCATION = re.compile(r"^\s+([\w.\-/]+\.go):(\d+):", re.MULTILINE)
FRAMING = re.compile(r"^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP):)")
MAX_TESTS = 20_000
MAX_NAME = 300
MAX_MESSAGE = 2000
MAX_EVENTS_LINE = 1 << 20
WORK = "/sandbox"
REPO = "/sandbox/repo"
GO_BUILD_SECONDS = 90  # a Go probe's build (the package and its tests) before its test's own clock
PROBE_TEST = re.compile(r"^func TestZz(\w{10})\(", re.MULTILINE)


@dataclass(frozen=True)
class GoModule:
    dir: str  # "" = the tree's root
    path: str
    go: tuple[int, int] | None
    requires: tuple[str, ...]  # "path version", those no local replacement provides
    vendored: bool


def parse_go_mod(directory: str, text: str, vendored: bool) -> GoModule:
    module = MODULE_LINE.search(text)
    go_line = GO_LINE.search(text)
    text_no_comments = re.sub(r"//[^\n]*", "", text)
    required: list[tuple[str, str]] = []
    for block in REQUIRE_BLOCK.findall(text_no_comments):
        for line in block.splitlines():
            fields = line.split()
            if len(fields) >= 2:
                required.append((fields[0], fields[1]))
    required += REQUIRE_LINE.findall(text_no_comments)
    local = {m.group(1) for m in REPLACE_LOCAL.finditer(text_no_comments)}
    requires = tuple(sorted({f"{path} {version}" for path, version in required if path not in local}))
    return GoModule(dir=directory, path=module.group(1) if module else "", vendored=vendored,
                    go=(int(go_line.group(1)), int(go_line.group(2))) if go_line else None, requires=requires)


def _version(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def choose_toolchain(wanted: tuple[int, int] | None, offered: tuple[str, ...]) -> str | None:
    """The oldest offered toolchain at least as new as ``wanted`` (any, the oldest, when nothing is asked)."""
    usable = sorted((v for v in offered if re.fullmatch(r"\d+\.\d+", v)), key=_version)
    for version in usable:
        if wanted is None or _version(version) >= wanted:
            return version
    return None


def plan_go(read: Callable[[str], str | None], paths: list[str], offered: tuple[str, ...]) -> tuple[
        ToolchainPlan, tuple[GoModule, ...]]:
    """The toolchain and modules for the tree's Go tests (module docstring)."""
    present = set(paths)
    modules = []
    for directory in court_go.modules(paths):
        prefix = f"{directory}/" if directory else ""
        text = read(f"{prefix}go.mod") or ""
        modules.append(parse_go_mod(directory, text, f"{prefix}vendor/modules.txt" in present))
    wanted = max((m.go for m in modules if m.go is not None), default=None)
    wanted_text = f"{wanted[0]}.{wanted[1]}" if wanted else None
    version = choose_toolchain(wanted, offered)
    missing = tuple(f"{req}" for m in modules if not m.vendored for req in m.requires)
    sources = tuple(f"{m.dir + '/' if m.dir else ''}go.mod" + (" (vendored)" if m.vendored else "") for m in modules)
    error = None
    if not offered:
        error = "the sandbox image offers no Go toolchain (build it with `logomesh sandbox build-image --force`)"
    elif version is None:
        error = f"go.mod asks for Go {wanted_text}; the sandbox image offers Go {', '.join(offered)}"
    elif missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        error = (f"the Go module(s) {shown} are not available in the sandbox: no Go module proxy is reachable "
                 "and go.mod's requirements are not vendored (`go mod vendor` on the base branch makes them "
                 "available)")
    plan = ToolchainPlan(language=court_go.NAME, version=version, wanted=wanted_text, offered=offered,
                         modules=tuple(m.dir for m in modules), vendored=any(m.vendored for m in modules),
                         missing=missing, sources=sources, error=error)
    return plan, tuple(modules)


def go_env(version: str, vendored: bool) -> dict[str, str]:
    return {
        "PATH": f"/usr/lib/go-{version}/bin:/usr/bin:/bin", "HOME": "/tmp",  # noqa: S108 - the container's tmpfs
        "GOCACHE": f"{WORK}/gocache", "GOTMPDIR": f"{WORK}/gotmp", "GOPATH": f"{WORK}/gopath",
        "GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GOWORK": "off", "GOENV": "off",
        "CGO_ENABLED": "0", "GOFLAGS": "-mod=vendor" if vendored else "-mod=readonly", "GOTELEMETRY": "off",
    }


# --- reading the event stream -----------------------------------------------------------------------------


@dataclass
class _Reported:
    """What the events said of one package or one test: its last outcome and its output."""

    outcome: str | None = None
    output: list[str] = field(default_factory=list)


OUTCOMES: dict[str, Literal["passed", "failed", "skipped"]] = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def _text(value: str, limit: int) -> str:
    return stable_text(redact(value[-limit:]))


def package_dir(module: GoModule, package: str) -> str | None:
    """The tree path of an import path of ``module`` (None: not the module's)."""
    if package == module.path:
        return module.dir
    if module.path and package.startswith(module.path + "/"):
        rest = package[len(module.path) + 1:]
        return f"{module.dir}/{rest}" if module.dir else rest
    return None


def test_files(read: Callable[[str], str | None], paths: list[str], directory: str) -> dict[str, str]:
    """``{test function: its _test.go file}`` for one package directory."""
    found: dict[str, str] = {}
    for path in paths:
        parent = str(PurePosixPath(path).parent)
        if path.endswith(court_go.TEST_SUFFIX) and (parent == directory or (parent == "." and not directory)):
            for name in court_go.test_functions(read(path) or ""):
                found.setdefault(name, path)
    return found


def _stderr_for(stderr: str, package: str) -> str:
    """The blocks of the ``go`` command's standard error about ``package`` (``# example.com/calc`` …)."""
    blocks: list[str] = []
    current: list[str] = []
    keep = False
    for line in stderr.splitlines():
        if line.startswith("# "):
            if keep:
                blocks.append("\n".join(current))
            current, keep = [line], line[2:].split(" ", 1)[0] == package
        else:
            current.append(line)
    if keep:
        blocks.append("\n".join(current))
    return "\n".join(blocks)


def read_events(stream: bytes, stderr: str, module: GoModule, read: Callable[[str], str | None],
                paths: list[str]) -> tuple[list[TestCaseResult], list[TestCaseResult], int]:
    """``(tests, package errors, tests past the cap)`` from one module's ``go test -json`` standard output."""
    packages: dict[str, _Reported] = {}
    tests: dict[tuple[str, str], _Reported] = {}
    for raw in stream.splitlines():
        if len(raw) > MAX_EVENTS_LINE:
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        action, package, test = event.get("Action"), event.get("Package"), event.get("Test")
        if not isinstance(action, str) or not isinstance(package, str) or (test is not None
                                                                           and not isinstance(test, str)):
            continue
        output = event.get("Output") if isinstance(event.get("Output"), str) else None
        target = (packages.setdefault(package, _Reported()) if not test
                  else tests.setdefault((package, test[:MAX_NAME]), _Reported()))
        if action == "output" and output is not None and sum(map(len, target.output)) < 64 * 1024:
            target.output.append(output)
        elif action in ("pass", "fail", "skip"):
            target.outcome = action
    files: dict[str, dict[str, str]] = {}
    results: list[TestCaseResult] = []
    failing_packages = set()
    past_cap = 0
    for (package, name), state in sorted(tests.items()):
        directory = package_dir(module, package)
        if directory is None:
            continue
        if directory not in files:
            files[directory] = test_files(read, paths, directory)
        top = name.split("/", 1)[0]
        file = files[directory].get(top) or directory or "."
        outcome = OUTCOMES.get(state.outcome or "", "failed")
        if outcome == "failed":
            failing_packages.add(package)
        if len(results) >= MAX_TESTS:
            past_cap += 1
            continue
        message = location = None
        if outcome != "passed":
            shown = "".join(line for line in state.output if not FRAMING.match(line)).strip()
            if state.outcome is None:
                shown = (shown + "\nthe test did not report an outcome (the package's run stopped)").strip()
            message = _text(shown, MAX_MESSAGE) or None
            found = LOCATION.search("".join(state.output))
            if found:
                at = f"{directory}/{found.group(1)}" if directory else found.group(1)
                location = f"{at}:{found.group(2)}"
        results.append(TestCaseResult(name=court_go.node_id(file, name), outcome=outcome, message=message,
                                      location=location))
    errors: list[TestCaseResult] = []
    for package, state in sorted(packages.items()):
        directory = package_dir(module, package)
        if directory is None or state.outcome != "fail" or package in failing_packages:
            continue
        said = "".join(state.output).strip()
        built = _stderr_for(stderr, package)
        message = _text("\n".join(part for part in (built, said) if part), MAX_MESSAGE)
        errors.append(TestCaseResult(name=f"{directory or '.'}{court_go.PACKAGE_ID}", outcome="error",
                                     message=message or "the package failed outside any test"))
    return results, errors, past_cap


# --- the run ----------------------------------------------------------------------------------------------


def image_go_versions(sandbox: DockerSandbox) -> tuple[str, ...]:
    labels = sandbox.client.images.get(sandbox.image).labels or {}
    return tuple(v.strip() for v in labels.get(GO_LABEL, "").split(",") if v.strip())


def _rerun_selection(names: tuple[str, ...]) -> tuple[list[str], str]:
    """``(package directories, -run pattern)`` for re-running ``names``."""
    directories, tests = set(), set()
    for name in names:
        file, _, test = name.partition("::")
        if not test or test.startswith("("):
            continue
        directories.add(str(PurePosixPath(file).parent) if file.endswith(".go") else file)
        tests.add(re.escape(test.split("/", 1)[0]))
    return sorted(directories), "^(" + "|".join(sorted(tests)) + ")$"


async def run_go(sandbox: DockerSandbox, spec: TestSpec, tree: Tree, limits: SandboxLimits,
                 run: Any) -> TestRunResult:
    """Run the tree's Go tests (module docstring); ``run`` holds the Docker objects the caller removes."""
    import asyncio

    from sandbox.docker_sandbox import MAX_CHANNEL_BYTES

    paths = await asyncio.to_thread(tree.paths)
    offered = await asyncio.to_thread(image_go_versions, sandbox)
    plan, modules = await asyncio.to_thread(plan_go, tree.read, paths, offered)
    base: dict[str, Any] = {"tree": spec.tree, "image": sandbox.image, "toolchains": (plan,)}
    if plan.error or plan.version is None:
        return TestRunResult(status="env_error", reason=plan.error, **base)
    version = plan.version
    env = go_env(version, plan.vendored)
    mutating = spec.tree == "head" and not spec.rerun and bool(spec.mutants)
    extra = (owned_files_tar(mutants.HERE.rsplit("/", 1)[1], mutants.files(spec.mutants, tree.read)) if mutating
             else None)
    await sandbox._thread(run, sandbox._start, run, sandbox.image, extra, tree, None)
    if not await _prepare_cache(sandbox, run, version, limits):
        return TestRunResult(status="not_measured", reason="the Go build cache could not be prepared in the sandbox",
                             **base)
    selected: tuple[list[str], str] | None = _rerun_selection(spec.rerun) if spec.rerun else None
    tests: list[TestCaseResult] = []
    errors: list[TestCaseResult] = []
    outputs: list[str] = []
    past_cap = 0
    status, reason = "ran", None
    clock = mutants.tests_limits(limits, spec).timeout_seconds
    durations: dict[str, float] = {}
    profiled: set[str] = set()  # the modules whose tests all passed: their cover profiles are read
    async with sandbox.test_slot():  # the tests' wall clock starts with them (sandbox/cpu_slots.py)
        started = time.monotonic()
        for module in modules:
            remaining = clock - (time.monotonic() - started)
            if remaining <= 1:
                status, reason = "timeout", f"killed: wall-clock timeout after {clock:g} s"
                break
            targets = ["./..."]
            if selected is not None:
                prefix = f"{module.dir}/" if module.dir else ""
                targets = ["./" + d[len(prefix):] if d != module.dir else "." for d in selected[0]
                           if d == module.dir or (d.startswith(prefix) if prefix else True)]
                if not targets:
                    continue
            argv = ["go", "test", "-json", "-count=1", "-vet=off", "-p", "1", f"-timeout={max(1, int(remaining))}s",
                    *(["-run", selected[1]] if selected is not None else []),
                    *(cover_flags(modules.index(module)) if mutating else []), *targets]
            done: _Exec = await sandbox._exec_in(run.container, argv, limits.with_timeout(remaining), env=env, run=run,
                                                 workdir=f"{REPO}/{module.dir}" if module.dir else REPO, channel=True)
            stderr = bytes(done.stderr).decode("utf-8", "replace")
            outputs.append(clean_test_output(bytes(done.stderr), limits.output_bytes))
            if done.channel_bytes > MAX_CHANNEL_BYTES:
                status, reason = "error", f"go test's event stream is larger than {MAX_CHANNEL_BYTES} bytes"
                break
            durations[module.dir] = done.duration
            if mutating and done.exit_code == 0 and not done.timed_out:
                profiled.add(module.dir)
            found, failed, cut = await asyncio.to_thread(read_events, bytes(done.stdout), stderr, module, tree.read,
                                                         paths)
            tests += found
            errors += failed
            past_cap += cut
            if done.timed_out:
                status, reason = "timeout", f"killed: wall-clock timeout after {clock:g} s"
                break
            if done.oom_killed:
                status, reason = "error", f"killed: out of memory (limit {limits.memory_mb} MB)"
                break
            if done.output_overflow:
                status, reason = "error", f"killed: output exceeded {limits.output_kill_bytes} bytes"
                break
            if done.exit_code not in (0, 1) and not found and not failed:
                # the go command itself failed (a malformed go.mod, a missing toolchain): nothing was measured
                tail = "\n".join(stderr.strip().splitlines()[-8:])
                status, reason = "error", f"go test ended (exit code {done.exit_code}) without running a test: {tail}"
                break
    if status == "ran" and not tests and not errors:
        status = "no_tests"
    mutated: list[MutantResult] = []
    if mutating and status == "ran":
        covered = await _read_coverage(sandbox, run, modules, profiled, limits)
        mutated = await _run_mutants(sandbox, run, spec, modules, tests, errors, durations, env, limits, tree.read,
                                     paths, covered)
    return TestRunResult(
        status=status, reason=reason, collected=len(tests) + past_cap, collection_errors=tuple(errors),
        passed=sum(t.outcome == "passed" for t in tests), failed=sum(t.outcome == "failed" for t in tests),
        errored=len(errors), skipped=sum(t.outcome == "skipped" for t in tests), tests=tuple(tests),
        past_cap=past_cap, output="\n".join(o for o in outputs if o)[-limits.output_bytes:],
        mutants=tuple(mutated), **base)


async def _prepare_cache(sandbox: DockerSandbox, run: Any, version: str, limits: SandboxLimits) -> bool:
    """The image's build cache of the standard library copied where the run builds (a writable tmpfs)."""
    from sandbox.image import go_cache

    prepared = await sandbox._exec(run, ["sh", "-c", f"cp -r {go_cache(version)} {WORK}/gocache 2>/dev/null "
                                         f"|| mkdir -p {WORK}/gocache; mkdir -p {WORK}/gotmp {WORK}/gopath"],
                                   limits.with_timeout(60))
    return bool(prepared.exit_code == 0)


async def run_probe(sandbox: DockerSandbox, tree: Tree, code: str, beside: str, timeout_seconds: float,
                    run: Any) -> ProbeResult:
    """Run the Red Agent's Go probe ``code``, a test file of the package of the Go file ``beside``: put in that
    package's folder and run alone there (``go test -v -run``) with the toolchain, modules and settings of the
    head's Go tests; the build gets its own time, the test ``timeout_seconds``. ``run`` holds the Docker objects the
    caller removes."""
    import asyncio

    from checks.red.probes import go_probe_file

    paths = await asyncio.to_thread(tree.paths)
    offered = await asyncio.to_thread(image_go_versions, sandbox)
    plan, modules = await asyncio.to_thread(plan_go, tree.read, paths, offered)
    module = module_of(beside, modules)
    if plan.version is None or module is None:
        why = plan.error or f"{beside} is in no Go module"
        return ProbeResult(exit_code=None, stderr=f"the Go probe could not run: {why}")
    name = PROBE_TEST.search(code)
    if name is None:
        return ProbeResult(exit_code=None, stderr="the Go probe names no test function")
    nonce = name.group(1)
    file = go_probe_file(nonce)
    folder = str(PurePosixPath(beside).parent)
    package = "./" + (folder[len(module.dir) + 1:] if module.dir else folder) if folder not in ("", ".", module.dir) \
        else "."
    files = owned_files_tar(mutants.HERE.rsplit("/", 1)[1], {file: code.encode("utf-8", "surrogatepass")})
    await sandbox._thread(run, sandbox._start, run, sandbox.image, files, tree, None)
    if not await _prepare_cache(sandbox, run, plan.version, sandbox.limits):
        return ProbeResult(exit_code=None, stderr="the Go build cache could not be prepared in the sandbox")
    destination = f"{REPO}/{folder}/{file}" if folder not in ("", ".") else f"{REPO}/{file}"
    argv = ["sh", "-c", f'cp {mutants.HERE}/{file} {destination} && exec "$@"', "go", "go", "test", "-v", "-count=1",
            "-vet=off", "-run", f"^TestZz{nonce}$", f"-timeout={max(1, int(timeout_seconds))}s", package]
    limits = sandbox.limits.with_timeout(timeout_seconds + GO_BUILD_SECONDS)
    done: _Exec = await sandbox._exec_in(run.container, argv, limits, env=go_env(plan.version, plan.vendored),
                                         run=run, workdir=f"{REPO}/{module.dir}" if module.dir else REPO)
    return ProbeResult(exit_code=None if done.timed_out else done.exit_code,
                       stdout=clean_output(bytes(done.stdout), limits.output_bytes),
                       stderr=clean_output(bytes(done.stderr), limits.output_bytes),
                       timed_out=done.timed_out, oom_killed=done.oom_killed, duration=round(done.duration, 3))


def cover_flags(number: int) -> list[str]:
    """The head's coverage, when it has mutants: every package of the module instrumented for every test binary, the
    merged profile written outside the tree."""
    return [f"-coverprofile={cover_profile(number)}", "-coverpkg=./..."]


def cover_profile(number: int) -> str:
    return f"{WORK}/cover-{number}.out"


async def _read_coverage(sandbox: DockerSandbox, run: Any, modules: Sequence[GoModule], profiled: set[str],
                         limits: SandboxLimits) -> LineCoverage:
    """The lines the head's tests ran, from the cover profiles of the modules whose tests all passed (a package
    that stopped early wrote none, and its lines would look unrun)."""
    import asyncio

    from sandbox.docker_sandbox import MAX_CHANNEL_BYTES

    found = LineCoverage()
    for number, module in enumerate(modules):
        if module.dir not in profiled:
            continue
        done = await sandbox._exec_in(run.container, ["cat", cover_profile(number)],
                                      limits.with_timeout(60), run=run, channel=True)
        if done.exit_code != 0 or done.channel_bytes > MAX_CHANNEL_BYTES:
            continue
        text = bytes(done.stdout).decode("utf-8", "replace")
        read = await asyncio.to_thread(coverage.read_go_profile, text, coverage.go_tree_path(module.path, module.dir))
        found = found.merged(read)
    return found


def module_of(path: str, modules: Sequence[GoModule]) -> GoModule | None:
    """The module whose folder holds ``path`` (the deepest)."""
    holding = [m for m in modules if not m.dir or path.startswith(m.dir + "/")]
    return max(holding, key=lambda m: len(m.dir), default=None)


async def _run_mutants(sandbox: DockerSandbox, run: Any, spec: TestSpec, modules: Sequence[GoModule],
                       tests: list[TestCaseResult], errors: list[TestCaseResult], durations: dict[str, float],
                       env: dict[str, str], limits: SandboxLimits, read: Callable[[str], str | None],
                       paths: list[str], covered: LineCoverage) -> list[MutantResult]:
    """The head's mutants, each against its module's tests (:mod:`sandbox.languages.mutants`); a mutant that does
    not build is not run, nor one on a line ``covered`` says no test ran."""
    results: list[MutantResult] = []
    started = time.monotonic()
    for module in modules:
        own = [m for m in spec.mutants if module_of(m.path, modules) is module]
        if not own or module.dir not in durations:
            results += [mutants.result(m, "not_run") for m in own]
            continue
        mine = [t for t in tests if module_of(t.name.split("::", 1)[0], modules) is module]
        failing = [e for e in errors if module_of(e.name.split("::", 1)[0], modules) is module]

        def outcome(ran: _Exec, module: GoModule = module) -> mutants.Outcome:
            stdout = bytes(ran.stdout)
            unbuilt = any(mark in stdout for mark in (b"[build failed]", b'"FailedBuild"', b"[setup failed]"))
            found, failed, _cut = read_events(stdout, bytes(ran.stderr).decode("utf-8", "replace"), module, read,
                                              paths)
            return mutants.Outcome(found, failed, unbuilt=unbuilt)

        workdir = f"{REPO}/{module.dir}" if module.dir else REPO
        number = modules.index(module)
        argv = ["go", "test", "-json", "-count=1", "-vet=off", "-p", "1", *cover_flags(number), "./..."]
        async with sandbox.test_slot():
            results += await mutants.run_mutants(
                sandbox, run, own, spec.mutation_seconds - (time.monotonic() - started), durations[module.dir],
                mine, failing, (argv, workdir), env, limits, outcome, covered, scratch=(cover_profile(number),))
    return results
