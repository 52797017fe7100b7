"""DockerSandbox: runs a repository's tests (and red-team probes) in a locked-down, throw-away container.

One run is: a size-capped tmpfs volume for ``/sandbox`` → a container (read-only root, no network, non-root,
``cap_drop=ALL``, ``no-new-privileges``, the default seccomp profile, memory/CPU/PID limits from the rubric,
ulimits, tini as PID 1 holding it open) → the tree and LogoMesh's runner (in ``/sandbox/logomesh``, root-owned,
read-only) copied in as one tar with one ``put_archive`` → the runner exec'd with ``python -I``, a wall-clock
timeout and an output cap; a test run's results arrive as the last bytes of the runner's standard output (the
tests' output comes on standard error) → container and volume removed in ``finally``, even when the job is
cancelled. Nothing is bind-mounted. An out-of-memory kill (the engine's ``oom`` event) is reported as such.

The project's environment (``sandbox/environment.py`` detects it) is built by the setup phase
(``sandbox/setup_phase.py``): a venv in its own container whose only network is the package index, committed
to a cached image; the tests then run from that image with the network off. Three trees can run: the head,
the base, and the guard tree (the head's code under the base's tests, ``sandbox/trees.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import io
import json
import logging
import re
import tarfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import LogConfig, Mount, Ulimit

from checks.languages.javascript import SUFFIXES as JS_SUFFIXES
from checks.models import DeclaredRequirement, EnvironmentPlan, ProbeResult, TestRunResult, TestSpec
from sandbox.cpu_slots import engine_cpus, slot_count, test_slot
from sandbox.env_registry import EnvRegistry
from sandbox.environment import lift_pins, plan_environment, plan_key
from sandbox.errors import RepositoryTooLarge, SandboxError, SandboxUnavailable
from sandbox.languages import javascript
from sandbox.languages.go import run_go
from sandbox.languages.go import run_probe as run_go_probe
from sandbox.languages.javascript import run_javascript
from sandbox.limits import SANDBOX_UID, SandboxLimits
from sandbox.redact import clean_output, clean_test_output
from sandbox.release_data import Fill, ReleaseIndex
from sandbox.release_data import fill as release_fill
from sandbox.release_data import wanted as wanted_release
from sandbox.resolve import tooling_before
from sandbox.results import read_results
from sandbox.runtime import DEFAULT_RUNTIME
from sandbox.setup_phase import Prepared, prepare_environment
from sandbox.tarball import files_tar, owned_files_tar, repack_archive
from sandbox.trees import DirTree, GitTree, TarTree, Tree, guard_tree, pytest_config, tar_of

log = logging.getLogger(__name__)

LABEL = "org.logomesh.sandbox"
LABEL_OWNER = "org.logomesh.sandbox.owner"
LABEL_CREATED = "org.logomesh.sandbox.created"
LABEL_WORKER = "org.logomesh.sandbox.worker"
MOUNT = "/sandbox"
WORKDIR = "/sandbox/repo"
HERE = "/sandbox/logomesh"  # LogoMesh's runner, outside the repository tree
# results of base commits' runs, by commit, image, runner and spec: the base of many changes runs once
BASE_CACHE_SIZE = 64
BASE_RESULTS: OrderedDict[str, TestRunResult] = OrderedDict()
# the version that setuptools-scm, hatch-vcs and pdm report for a tree without .git
PRETEND_VERSION = "0.0.0"
INSIDE = ("runner.py", "launch.py", "collector.py")  # sandbox/inside/: what runs next to the tests
MAX_RESULTS_BYTES = 16 * 1024 * 1024
# the runner's results come as the last bytes of its standard output: b"\n" JSON b"\n" RESULTS_MARK b" " length b"\n"
RESULTS_MARK = b"LOGOMESH-RESULTS"
MAX_CHANNEL_BYTES = MAX_RESULTS_BYTES + 64
SUBMODULE_PATH = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)
# exit codes of a SIGKILLed process: 137 directly, 247 when the runner passes on its child's -9
SIGKILLED = (137, 247)
PROBE_FILE = "case.py"  # beside the runner: a probe leaves no file in the repository
PROBE_TIMED_OUT = 124  # the runner's exit code when the probe overran its time
PROBE_INSTALL_SECONDS = 120  # the editable install before a probe, on top of the probe's own time
MUTATION_GRACE_SECONDS = 30  # the mutants' launcher past their budget (its start, the last mutant's kill, the control)
ENV = {
    "HOME": "/tmp",  # noqa: S108 - the container's own tmpfs
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONUSERBASE": "/home/sandbox/.local",
    "PIP_BREAK_SYSTEM_PACKAGES": "1",
}


def pytest_arguments(command: list[str] | None) -> list[str] | None:
    """The arguments of a pytest command (``pytest …``, ``python -m pytest …``); None for any other command."""
    if not command:
        return None
    first = command[0].rsplit("/", 1)[-1]
    if first in ("pytest", "py.test"):
        return command[1:]
    if first.startswith("python") and command[1:3] in (["-m", "pytest"], ["-m", "py.test"]):
        return command[3:]
    return None


def results_frame(run: _Exec) -> dict[str, bytes | str]:
    """The runner's results from the end of its standard output, as ``{"results": bytes}``; ``{}`` when the
    stream does not end with a whole frame (the runner did not finish), an ``error`` when it was too large."""
    if run.channel_bytes > MAX_CHANNEL_BYTES:
        return {"error": f"the runner's results are larger than {MAX_RESULTS_BYTES} bytes"}
    data = bytes(run.stdout)
    if not data.endswith(b"\n"):
        return {}
    head, _, last = data[:-1].rpartition(b"\n")
    mark, _, length = last.partition(b" ")
    if mark != RESULTS_MARK or not length.isdigit() or int(length) > min(len(head), MAX_RESULTS_BYTES):
        return {}
    return {"results": head[len(head) - int(length):]}


def joined_tar(archives: list[bytes]) -> bytes:
    """One tar holding every entry of ``archives``, in order: each one's end-of-archive blocks are cut."""
    if len(archives) == 1:
        return archives[0]
    pieces = []
    for archive in archives[:-1]:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
            tar.getmembers()
            end = tar.offset  # where the last entry's data ends and the zero blocks begin
        pieces.append(archive[:end])
    return b"".join([*pieces, archives[-1]])


def _inside_files() -> dict[str, bytes]:
    files = {name: resources.files("sandbox").joinpath(f"inside/{name}").read_bytes() for name in INSIDE}
    files["sightings.py"] = resources.files("checks.red").joinpath("sightings.py").read_bytes()
    return files


def image_pythons(client: docker.DockerClient, image: str) -> tuple[str, ...]:
    """The interpreter versions an image offers (its ``org.logomesh.python`` label)."""
    from sandbox.image import PYTHON_LABEL

    try:
        labels = client.images.get(image).labels or {}
    except ImageNotFound as exc:
        raise SandboxUnavailable(f"the sandbox image {image} is missing", image) from exc
    return tuple(v.strip() for v in labels.get(PYTHON_LABEL, "").split(",") if v.strip())


def interpreter_images(client: docker.DockerClient, image: str) -> dict[str, str]:
    """Interpreter version → the image that offers it: the main ``image``'s versions, then those of its companions
    (``<image>-python<version>``, :func:`sandbox.image.companion_tag`) that exist with the current layout. The
    main image wins a version both offer."""
    from sandbox.image import IMAGE_VERSION, PYTHON_LABEL, SUITES, VERSION_LABEL, companion_tag

    offered = {version: image for version in image_pythons(client, image)}
    for version in SUITES.values():
        tag = companion_tag(image, version)
        if version in offered or tag == image:
            continue
        try:
            labels = client.images.get(tag).labels or {}
        except DockerException:
            continue  # not built: that interpreter is not offered
        if labels.get(VERSION_LABEL) != IMAGE_VERSION:
            continue  # an older layout is never run
        for offered_version in (v.strip() for v in labels.get(PYTHON_LABEL, "").split(",")):
            if offered_version:
                offered.setdefault(offered_version, tag)
    return offered


def docker_client(timeout: int = 60) -> docker.DockerClient:
    """A client for the local engine, or SandboxUnavailable saying why there is none."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except DockerException as exc:
        raise SandboxUnavailable(f"no Docker engine answers ({exc.__class__.__name__}); start the Docker engine, "
                                 "or set DOCKER_HOST to one that runs") from exc
    return client


def outdated_layout(labels: dict[str, str] | None) -> str | None:
    """Why an image with these labels lacks the layout the runner expects (:data:`sandbox.image.IMAGE_VERSION`);
    None when it has it."""
    from sandbox.image import IMAGE_VERSION, VERSION_LABEL

    version = (labels or {}).get(VERSION_LABEL)
    return None if version == IMAGE_VERSION else f"has an older layout (version {version or '1'}, need {IMAGE_VERSION})"


def require_image(client: docker.DockerClient, image: str) -> None:
    """The image must exist and have the layout the runner expects (its tools venv, its labels)."""
    try:
        labels = client.images.get(image).labels or {}
    except ImageNotFound as exc:
        raise SandboxUnavailable(
            f"the sandbox image {image} is missing; build it with `logomesh sandbox build-image`", image
        ) from exc
    except DockerException as exc:
        raise SandboxUnavailable(f"cannot inspect the sandbox image {image} ({exc.__class__.__name__}); check that "
                                 "the Docker engine runs, or rebuild the image with `logomesh sandbox build-image`",
                                 image) from exc
    outdated = outdated_layout(labels)
    if outdated is not None:
        raise SandboxUnavailable(
            f"the sandbox image {image} {outdated}; rebuild it with `logomesh sandbox build-image --force`", image)


@dataclass
class _Exec:
    exit_code: int | None = None
    # with a results channel, standard output is the runner's results stream: kept apart, its tail only
    channel: bool = False
    channel_bytes: int = 0
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    combined: bytearray = field(default_factory=bytearray)
    total: int = 0
    timed_out: bool = False
    output_overflow: bool = False
    oom_killed: bool = False
    duration: float = 0.0


@dataclass
class _Run:
    """The Docker objects of one run, removed together."""

    container: Any = None
    volume: Any = None
    images: list[str] = field(default_factory=list)
    helpers: list[Any] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    # blocking steps still running in worker threads; cleanup waits for them so nothing is created after it
    pending: set[asyncio.Future[Any]] = field(default_factory=set)


@dataclass(frozen=True)
class SetupOptions:
    """The operator's settings for the setup phase (network to the package index only)."""

    allow: bool = True
    timeout_seconds: float = 600.0
    index_url: str = "https://pypi.org/simple"
    extra_hosts: tuple[str, ...] = ()
    ca_bundle: Path | None = None
    npm_registry: str = "https://registry.npmjs.org/"  # where ``npm ci`` fetches a Node project's packages
    cache_mb: int = 4096
    memory_mb: int = 1024
    pids: int = 512
    # whose environments these are (the repository): cached environments are never shared across scopes
    scope: str = ""
    # where verified environments are pushed and pulled by digest (sandbox/env_registry.py); None: this engine only
    registry: EnvRegistry | None = None
    # where the worker itself reads a project's release for the data its git leaves out (sandbox/release_data.py);
    # None: index_url
    release_index_url: str | None = None


def _mutation_clock(spec: TestSpec) -> float:
    """What a run's mutants add to its wall clock: their budget and the launcher's grace, or nothing."""
    return spec.mutation_seconds + MUTATION_GRACE_SECONDS if spec.mutants else 0.0


class DockerSandbox:
    """The :class:`~checks.protocols.Sandbox` for one change: the head tree, and the base tree when known."""

    def __init__(self, client: docker.DockerClient, tree: Tree | bytes, limits: SandboxLimits, image: str, *,
                 base: Tree | None = None, setup: SetupOptions | None = None, worker: str = "",
                 runtime: str = DEFAULT_RUNTIME) -> None:
        self.client = client
        self.runtime = runtime  # the OCI runtime of every container this sandbox creates (sandbox/runtime.py)
        self.worker = worker  # the worker process that owns this sandbox's objects (swept once it is gone)
        self.head: Tree = tree if not isinstance(tree, bytes) else TarTree(tree)
        self.base = base
        self.limits = limits
        self.image = image
        self.setup = setup or SetupOptions()
        self.owner = uuid.uuid4().hex
        self._tars: dict[str, bytes] = {}
        # the head's test request, once the court has made it: probes use its environment settings
        self.head_spec = TestSpec()
        self._probe_env: tuple[Prepared, dict[str, Any]] | None = None
        self._probe_lock = asyncio.Lock()
        self._images: dict[str, str] | None = None
        self._slots: int | None = None
        self._release: Fill | None = None
        self._release_lock = threading.Lock()

    @contextlib.asynccontextmanager
    async def test_slot(self) -> AsyncIterator[None]:
        """Wait for a share of the engine's CPUs before a test run starts (:mod:`sandbox.cpu_slots`)."""
        if self._slots is None:
            self._slots = slot_count(await asyncio.to_thread(engine_cpus, self.client), self.limits.cpus)
        async with test_slot(str(getattr(self.client.api, "base_url", "")), self._slots):
            yield

    @property
    def images(self) -> dict[str, str]:
        """Interpreter version → image, read once per sandbox (:func:`interpreter_images`)."""
        if self._images is None:
            self._images = interpreter_images(self.client, self.image)
        return self._images

    def image_for(self, python: str | None) -> str:
        """The image whose interpreter a plan chose (the main image when it chose none)."""
        return self.images.get(python or "", self.image)

    @property
    def tree_tar(self) -> bytes:
        return self._tar(self.head)

    def _tar(self, tree: Tree) -> bytes:
        if tree.name not in self._tars:
            self._tars[tree.name] = tar_of(tree, self.limits.work_mb * 1024 * 1024)
        return self._tars[tree.name]

    # --- construction -----------------------------------------------------------------------------------

    @classmethod
    def for_tree(cls, path: Path, limits: SandboxLimits, image: str, client: docker.DockerClient | None = None,
                 base: Path | None = None, **options: Any) -> DockerSandbox:
        """A sandbox for a directory tree (its symlinks are packed as links, never followed)."""
        client = client or docker_client()
        require_image(client, image)
        sandbox = cls(client, DirTree(Path(path)), limits, image,
                      base=DirTree(Path(base), "base") if base is not None else None, **options)
        sandbox.tree_tar  # noqa: B018 - packed now, so an oversized tree fails here, not mid-review
        return sandbox

    @classmethod
    def for_git(cls, git_bytes: Any, head_sha: str, limits: SandboxLimits, image: str,
                client: docker.DockerClient | None = None, base_sha: str | None = None,
                **options: Any) -> DockerSandbox:
        """A sandbox for the tree of ``head_sha`` (and ``base_sha``) read from git's object store."""
        client = client or docker_client()
        require_image(client, image)
        base = GitTree(git_bytes, base_sha, "base") if base_sha else None
        sandbox = cls(client, GitTree(git_bytes, head_sha, "head"), limits, image, base=base, **options)
        if base is None:
            sandbox.tree_tar  # noqa: B018 - packed now, so an oversized tree fails here, not mid-review
        return sandbox

    @classmethod
    def for_archive(cls, archive: Path, limits: SandboxLimits, image: str,
                    client: docker.DockerClient | None = None, **options: Any) -> DockerSandbox:
        """A sandbox for a tar such as ``git archive`` writes (re-packed entry by entry)."""
        client = client or docker_client()
        require_image(client, image)
        buf = io.BytesIO()
        with open(archive, "rb") as source:
            repack_archive(source, buf, limits.work_mb * 1024 * 1024)
        return cls(client, buf.getvalue(), limits, image, **options)

    def tree_for(self, which: str) -> Tree | None:
        if which == "head":
            return self.head
        if self.base is None:
            return None
        if which == "base":
            return self.base
        if isinstance(self.head, GitTree) and isinstance(self.base, GitTree):
            return guard_tree(self.head, self.base)
        return None

    def _absent_submodules(self, tree: Tree) -> tuple[str, ...]:
        """The git submodules the base declares (``.gitmodules``) that have no file in this tree: a clone never
        holds them. The base's declaration, never the change's: a change cannot name its own failures after one."""
        declared = self.base.read(".gitmodules") if self.base is not None else tree.read(".gitmodules")
        if not declared:
            return ()
        paths = [m.strip().strip("/") for m in SUBMODULE_PATH.findall(declared)]
        present = tree.paths()
        return tuple(sorted(p for p in set(paths) if p and not any(f.startswith(p + "/") for f in present)))[:50]

    # --- the Sandbox protocol -----------------------------------------------------------------------------

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        """Run one tree's tests; a base commit's result is cached for the process (same base, many changes)."""
        if spec.tree == "head":
            self.head_spec = spec.model_copy(update={"mutants": (), "mutation_seconds": 0.0})
        key = self._cache_key(spec)
        if key is not None and key in BASE_RESULTS:
            BASE_RESULTS.move_to_end(key)
            return BASE_RESULTS[key]
        result = await self._run_tests(spec)
        if key is not None and result.status in ("ran", "no_tests", "env_error"):
            BASE_RESULTS[key] = result
            while len(BASE_RESULTS) > BASE_CACHE_SIZE:
                BASE_RESULTS.popitem(last=False)
        return result

    def _cache_key(self, spec: TestSpec) -> str | None:
        if spec.tree != "base" or not isinstance(self.base, GitTree) or spec.mutants or spec.rerun:
            return None  # a re-run exists to run again: never answered from the cache
        try:
            image_id = ",".join(self.client.images.get(image).id for image in sorted(set(self.images.values())))
        except DockerException:
            return None
        runner = b"".join(_inside_files().values())
        material = [self.base.sha, image_id, spec.model_dump_json(), repr(self.limits), repr(self.setup),
                    hashlib.sha256(runner).hexdigest()]
        return hashlib.sha256(repr(material).encode()).hexdigest()

    async def _run_tests(self, spec: TestSpec) -> TestRunResult:
        # the mutants have their own budget, after the tests: it never eats the suite's clock
        limits = self.limits.with_timeout(spec.timeout_seconds).extended(_mutation_clock(spec))
        started = time.monotonic()
        run = _Run()
        tree = self.tree_for(spec.tree)
        if tree is None:
            return TestRunResult(status="not_measured", tree=spec.tree, image=self.image,
                                 reason=f"the {spec.tree} tree is not available to this sandbox")
        try:
            if spec.language == "go":
                return await run_go(self, spec, tree, limits, run)
            if spec.language == "javascript":
                return await run_javascript(self, spec, tree, limits, run)
            plan = await asyncio.to_thread(self._plan, tree, spec)
            release = await asyncio.to_thread(self.release_data)
            if release.note is not None and not spec.setup_command:
                plan = plan.model_copy(update={"sources": (*plan.sources, release.note)})
            base: dict[str, Any] = {"tree": spec.tree, "environment": plan, "image": self.image_for(plan.python),
                                    "absent_submodules": await asyncio.to_thread(self._absent_submodules, tree)}
            if plan.error:
                return TestRunResult(status="env_error", reason=plan.error, **base)
            prepared: Prepared = await self._thread(run, prepare_environment, self, run, plan, tree, spec)
            base["setup"] = prepared.report
            if prepared.failure is not None:
                return TestRunResult(status="env_error", reason=prepared.failure, output=prepared.output,
                                     **base)
            config = self._runner_config(spec, plan, prepared)
            extra, left_out = await asyncio.to_thread(self._with_release_data, self._logomesh_files(spec, config),
                                                      tree, prepared)
            if release.wheel is not None and prepared.copy_from is None:  # what went into this tree, or why not
                update = ({"release_data": release.wheel} if left_out is None
                          else {"sources": (*plan.sources, left_out)})
                base["environment"] = plan = plan.model_copy(update=update)
            await self._thread(run, self._start, run, prepared.image, extra, tree, prepared.copy_from)
            python = prepared.python
            async with self.test_slot():
                result = await self._exec(run, [python, "-I", "-S", f"{HERE}/runner.py", f"{HERE}/config.json"],
                                          limits, env=prepared.env, channel=True)
            return self._test_result(result, results_frame(result), spec, limits, time.monotonic() - started,
                                     base)
        except RepositoryTooLarge as exc:
            if spec.tree != "base" and self._fits(self.base):
                # the change made the tree too large: its own doing, not an opt-out from being measured
                return TestRunResult(status="error", tree=spec.tree, image=self.image, reason=(
                    f"the change makes the tree too large to test: {exc.size} bytes, over the work dir's "
                    f"{exc.limit} (the base fits)"))
            return TestRunResult(status="not_measured", tree=spec.tree, reason=f"the sandbox failed: {exc.reason}",
                                 image=self.image)
        except (SandboxError, DockerException) as exc:
            # a failure of LogoMesh itself must not cost the PR points: T is "not measured", with the reason
            why = exc.reason if isinstance(exc, SandboxError) else f"Docker failed: {exc}"
            return TestRunResult(status="not_measured", tree=spec.tree, reason=f"the sandbox failed: {why}",
                                 image=self.image)
        except (RuntimeError, OSError) as exc:  # e.g. git cannot read a commit a shallow clone lacks
            return TestRunResult(status="not_measured", tree=spec.tree, image=self.image,
                                 reason=f"the {spec.tree} tree could not be read: {exc}")
        finally:
            await asyncio.shield(self._cleanup(run))

    def release_data(self) -> Fill:
        """The release data every Python run of this change gets (:mod:`sandbox.release_data`), read once: a change
        with a base commit, read by git, with the setup phase allowed its index."""
        with self._release_lock:
            if self._release is None:
                base, head = self.base, self.head
                if self.setup.allow and isinstance(base, GitTree) and isinstance(head, GitTree) and base.mtime:
                    self._release = self._read_release(base, head)
                else:
                    self._release = Fill()
            return self._release

    def _read_release(self, base: GitTree, head: GitTree) -> Fill:
        try:
            want = wanted_release(base.read, base.paths())
            if want is None:  # the base ignores no data of its packages
                return Fill()

            def changed() -> dict[str, tuple[str | None, str | None]]:
                ours, theirs = base.entries(), head.entries()
                return {path: (base.read(path), head.read(path))
                        for path in sorted(set(ours) | set(theirs)) if ours.get(path) != theirs.get(path)}

            before = datetime.datetime.fromtimestamp(base.mtime, datetime.UTC).isoformat()
            index = ReleaseIndex(self.setup.release_index_url or self.setup.index_url, self.setup.ca_bundle)
            return release_fill(want, base.read, base.paths(), before, index, changed)
        except (RuntimeError, OSError, ValueError) as exc:  # git could not read a tree
            return Fill(note=f"release data not read: {type(exc).__name__}: {exc}"[:300])

    def _with_release_data(self, extra: bytes, tree: Tree, prepared: Prepared) -> tuple[bytes, str | None]:
        """``extra`` and, after it, the release data this run's tree lacks (none into a prepared tree: a
        repository's own setup command made that one); with why the data was left out when it was."""
        release = self.release_data()
        if prepared.copy_from is not None or not release.files:
            return extra, None
        files = release.for_tree(tree.paths())
        if not files:
            return extra, "release data left out: the tree has its own"
        room = self.limits.work_mb * 1024 * 1024 - len(self._tar(tree))
        try:
            data = files_tar(files, tree.mtime if isinstance(tree, GitTree) else 0, room)
        except RepositoryTooLarge:
            return extra, "release data left out: the tree and it outgrow the work dir"
        return joined_tar([extra, data]), None

    def _fits(self, tree: Tree | None) -> bool:
        if tree is None:
            return False
        try:
            self._tar(tree)
        except RepositoryTooLarge:
            return False
        return True

    def _probe_tree(self) -> Tree:
        """The head for probes: when the whole tree is too large, its code (Python, JavaScript, TypeScript, Go) and
        small files are enough."""
        if self._fits(self.head) or not isinstance(self.head, GitTree):
            return self.head
        head = self.head
        entries = {p: e for p, e in head.entries().items()
                   if p.endswith((".py", ".toml", ".cfg", ".ini", ".txt", ".json", ".yaml", ".lock", ".go", ".mod",
                                  ".sum", *JS_SUFFIXES))}
        return GitTree(head.git_bytes, head.sha, name="probe", entries=entries, mtime=head.mtime)

    def _plan(self, tree: Tree, spec: TestSpec) -> EnvironmentPlan:
        offered = tuple(self.images)  # the main image's versions first
        preferred = spec.python if spec.python in offered else (offered[0] if offered else None)
        plan = plan_environment(tree.read, tree.paths(), offered, preferred=preferred)
        if spec.unpinned:  # pytest's own stack at today's releases (checks/dependency_drift.py broken_tooling)
            lifted = lift_pins(plan.requirements, spec.unpinned)
            plan = plan.model_copy(update={
                "requirements": lifted, "key": plan_key(plan.python, lifted),
                "sources": (*plan.sources, f"pins lifted: {', '.join(spec.unpinned)}")})
        if spec.dependencies_as_of:  # releases of the base commit's day (checks/dependency_drift.py)
            undated_before = tooling_before(plan.python, spec.dependencies_as_of) if spec.unpinned else None
            plan = plan.model_copy(update={"uploaded_before": spec.dependencies_as_of, "undated": spec.unpinned,
                                           "undated_before": undated_before,
                                           "key": plan_key(plan.python, plan.requirements, spec.dependencies_as_of,
                                                           spec.unpinned, undated_before)})
        override = spec.environment
        if override is None:
            return plan
        changes: dict[str, Any] = {"overridden": True}
        if override.requirements is not None:
            changes["requirements"] = override.requirements
            changes["sources"] = (".logomesh.yml test.environment.requirements",)
            changes["declared"] = tuple(DeclaredRequirement(requirement=r, source=changes["sources"][0])
                                        for r in override.requirements)
        if override.install_project is not None:
            changes["install_project"] = override.install_project
        if override.import_roots is not None:
            changes["import_roots"] = override.import_roots
        if override.python is not None:
            chosen = override.python if override.python in offered else None
            changes["python"] = chosen
            changes["error"] = None if chosen else (f".logomesh.yml asks for Python {override.python}; the "
                                                    f"sandbox image offers {', '.join(offered)}")
        updated = plan.model_copy(update=changes)
        return updated.model_copy(update={"key": plan_key(updated.python, updated.requirements,
                                                          updated.uploaded_before, updated.undated,
                                                          updated.undated_before)})

    def _guard_config(self, spec: TestSpec) -> tuple[str, str] | None:
        """For a guard run, ``(file name under /sandbox/logomesh, text)`` of the base's pytest configuration."""
        if spec.tree != "guard" or self.base is None:
            return None
        name, text = pytest_config(self.base.read) or ("pytest.ini", "[pytest]\n")
        return f"guard-{name.lstrip('.')}", text

    def _logomesh_files(self, spec: TestSpec, config: dict[str, Any], more: dict[str, bytes] | None = None) -> bytes:
        files = {**_inside_files(), **(more or {})}
        guard = self._guard_config(spec)
        if guard is not None:
            files[guard[0]] = guard[1].encode("utf-8", "surrogatepass")
        files["config.json"] = json.dumps(config).encode()  # a file: mutants' sources outgrow an argument
        return owned_files_tar(HERE.lstrip("/").split("/", 1)[1], files)

    def _runner_config(self, spec: TestSpec, plan: EnvironmentPlan, prepared: Prepared) -> dict[str, Any]:
        args = ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", "-o", "console_output_style=classic"]
        guard = self._guard_config(spec)
        if guard is not None:
            args += ["-c", f"{HERE}/{guard[0]}", "--rootdir", WORKDIR]
        mutants = [m.model_dump() for m in spec.mutants]
        command = list(spec.command) if spec.command else None
        pytest_rest = pytest_arguments(command)
        if spec.rerun:
            # a re-run of failing tests: only their node ids, under the same configuration; the command's own
            # arguments would select more (its paths) or stop early (-x), and a node id never passes as an option
            pytest_rest = [node for node in spec.rerun if not node.startswith("-")]
        if pytest_rest is not None:  # a pytest command runs through LogoMesh's runner, with its arguments
            args += pytest_rest
            command = None
        return {
            "command": command,
            "install_project": plan.install_project and prepared.has_env,
            "import_roots": list(plan.import_roots),
            "pytest_args": args,
            "coverage_paths": sorted({m.path for m in spec.mutants}),
            # only the mutated lines' tests are asked for: every line of a file 7,500 tests run outgrows the record
            "coverage_lines": {path: sorted({m.line for m in spec.mutants if m.path == path})
                               for path in sorted({m.path for m in spec.mutants})},
            "mutants": mutants,
            "mutation_seconds": spec.mutation_seconds,
            "mutation_grace": MUTATION_GRACE_SECONDS,
            "unittest": not spec.rerun,
            "env": {"SETUPTOOLS_SCM_PRETEND_VERSION": PRETEND_VERSION, "PDM_BUILD_SCM_VERSION": PRETEND_VERSION,
                    "HATCH_BUILD_HOOK_VCS_VERSION": PRETEND_VERSION},
        }

    async def run_probe(self, code: str, timeout_seconds: float, runtime: str = "python",
                        beside: str | None = None) -> ProbeResult:
        """Run one probe in the head's test environment, started exactly as the project's tests are.

        The same image (the project's environment), interpreter, variables, working directory, editable install
        and launcher as the head's test run: only pytest is absent, so code that behaves differently when it is
        probed behaves differently in production too. The runner gives the probe ``timeout_seconds`` after the
        install and reports an overrun as exit code 124. ``runtime="node"``: a node program, in the environment of
        the head's JavaScript tests (:func:`sandbox.languages.javascript.run_probe`), killed after
        ``timeout_seconds``; ``runtime="go"``: a test file put in the package of ``beside`` and run there with the
        head's Go toolchain (:func:`sandbox.languages.go.run_probe`), its test given ``timeout_seconds`` after the
        build.
        """
        run = _Run()
        try:
            tree = await asyncio.to_thread(self._probe_tree)
            if runtime == "node":
                return await javascript.run_probe(self, tree, code, self.limits.with_timeout(timeout_seconds), run)
            if runtime == "go":
                return await run_go_probe(self, tree, code, beside or "", timeout_seconds, run)
            prepared, config = await self._probe_environment(tree)
            config = {**config, "probe": f"{HERE}/{PROBE_FILE}", "probe_timeout": timeout_seconds}
            files = self._logomesh_files(TestSpec(), config, {PROBE_FILE: code.encode("utf-8", "surrogatepass")})
            files, _left_out = await asyncio.to_thread(self._with_release_data, files, tree, prepared)
            await self._thread(run, self._start, run, prepared.image, files, tree, prepared.copy_from)
            limits = self.limits.with_timeout(timeout_seconds + PROBE_INSTALL_SECONDS)
            result = await self._exec(run, [prepared.python, "-I", "-S", f"{HERE}/runner.py", f"{HERE}/config.json"],
                                      limits, env=prepared.env)
            cap = limits.output_bytes
            timed_out = result.timed_out or result.exit_code == PROBE_TIMED_OUT
            return ProbeResult(exit_code=None if timed_out else result.exit_code,
                               stdout=clean_output(bytes(result.stdout), cap),
                               stderr=clean_output(bytes(result.stderr), cap),
                               timed_out=timed_out, oom_killed=result.oom_killed,
                               duration=round(result.duration, 3))
        except (SandboxError, DockerException) as exc:
            # no marker on stdout, so a probe oracle sees "nothing found"; stderr says why
            why = exc.reason if isinstance(exc, SandboxError) else f"Docker failed: {exc}"
            return ProbeResult(exit_code=None, stderr=f"logomesh: the sandbox failed: {why}")
        finally:
            await asyncio.shield(self._cleanup(run))

    async def _probe_environment(self, tree: Tree) -> tuple[Prepared, dict[str, Any]]:
        """The head's prepared environment and runner configuration, made once per sandbox for all probes.

        A repository whose environment needs its own setup command (never cached) or cannot be built is probed
        with LogoMesh's tools only, as before the setup phase existed."""
        async with self._probe_lock:
            if self._probe_env is None:
                spec = self.head_spec
                plan = await asyncio.to_thread(self._plan, tree, spec)
                prepared = Prepared(image=self.image_for(plan.python))
                if not plan.error and not spec.setup_command:
                    run = _Run()
                    try:
                        built: Prepared = await self._thread(run, prepare_environment, self, run, plan, tree, spec)
                        prepared = built if built.failure is None else prepared
                    finally:
                        await asyncio.shield(self._cleanup(run))
                config = self._runner_config(spec, plan, prepared)
                config.update(mutants=[], coverage_paths=[], unittest=False, pytest_args=[])
                self._probe_env = (prepared, config)
            return self._probe_env

    async def _thread(self, run: _Run, fn: Any, *args: Any) -> Any:
        """Run a blocking step in a thread; a cancelled caller leaves it running for ``_cleanup`` to await."""
        future = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        run.pending.add(future)
        future.add_done_callback(run.pending.discard)
        return await asyncio.shield(future)

    async def _cleanup(self, run: _Run) -> None:
        for container in [run.container, *run.helpers]:
            if container is not None:
                await asyncio.to_thread(self._kill, container)
        if run.pending:
            await asyncio.wait(set(run.pending))
        await asyncio.to_thread(self._remove, run)

    # --- Docker plumbing (blocking: called in worker threads) ---------------------------------------------

    def _labels(self) -> dict[str, str]:
        labels = {LABEL: "1", LABEL_OWNER: self.owner, LABEL_CREATED: str(int(time.time()))}
        if self.worker:
            labels[LABEL_WORKER] = self.worker
        return labels

    def _host_config(self, *, network: str | None, read_only: bool, mounts: list[Mount],
                     limits: SandboxLimits | None = None) -> dict[str, Any]:
        lim = limits or self.limits
        config: dict[str, Any] = self.client.api.create_host_config(
            mem_limit=f"{lim.memory_mb}m",
            memswap_limit=f"{lim.memory_mb}m",
            nano_cpus=int(lim.cpus * 1e9),
            pids_limit=lim.pids,
            network_mode=network or "none",
            read_only=read_only,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            init=True,
            tmpfs={"/tmp": f"size={lim.tmp_mb}m,mode=1777,nosuid,nodev"},  # noqa: S108
            mounts=mounts,
            ulimits=[Ulimit(name="nofile", soft=lim.nofile, hard=lim.nofile),
                     Ulimit(name="fsize", soft=lim.fsize_mb << 20, hard=lim.fsize_mb << 20),
                     Ulimit(name="core", soft=0, hard=0)],
            log_config=LogConfig(type="none"),
            runtime=self.runtime,
        )
        return config

    def _create(self, run: _Run, image: str, *, network: str | None, read_only: bool, mounts: list[Mount],
                limits: SandboxLimits | None = None) -> Any:
        """A container holding still (``sleep``) until exec'd; ``network`` None means no network at all.

        No network is ``network_mode=none`` (a namespace of its own with only the loopback), never the engine's
        ``NetworkDisabled``, which isolates no more and leaves ``/etc/hosts`` empty: ``localhost`` would not
        resolve, and every test that starts a local server by that name (requests' test server) would fail.

        The holder runs as root (without capabilities) so that nothing exec'd as the sandbox user can stop it:
        the runner ends every process of that user before it writes its results, and the container stays up.
        """
        api = self.client.api
        created = api.create_container(
            image, command=["sleep", "infinity"], user="0:0", environment=ENV,
            working_dir="/", labels=self._labels(),
            host_config=self._host_config(network=network, read_only=read_only, mounts=mounts, limits=limits),
        )
        return created["Id"]

    def _start(self, run: _Run, image: str, extra_tar: bytes | None, tree: Tree | None = None,
               copy_from: str | None = None) -> None:
        lim = self.limits
        try:
            run.volume = self.client.volumes.create(
                name=f"logomesh-sandbox-{uuid.uuid4().hex}", driver="local", labels=self._labels(),
                driver_opts={"type": "tmpfs", "device": "tmpfs",
                             "o": f"size={lim.work_mb}m,uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755,nosuid,nodev"},
            ).name
            run.container = self._create(run, image, network=None, read_only=True,
                                         mounts=[Mount(MOUNT, run.volume, type="volume")])
            self.client.api.start(run.container)
            # the volume is a tmpfs: it only holds data while the container runs, so copy in after start, in one
            # archive (each copy costs the engine a helper process)
            parts = [self._tar(tree or self.head)] if copy_from is None else []
            parts += [extra_tar] if extra_tar is not None else []
            if parts:
                self.client.api.put_archive(run.container, MOUNT, joined_tar(parts))
        except ImageNotFound as exc:
            raise SandboxUnavailable(f"the sandbox image {image} is missing", image) from exc
        except DockerException as exc:
            raise SandboxError(f"the sandbox could not start: {exc}") from exc
        if copy_from is not None:
            # what a repository's own setup command wrote into its tree is kept: copy the prepared tree over
            copied = asyncio.run(self._exec_in(
                run.container, ["sh", "-c", f"cp -a {copy_from} {WORKDIR} && mkdir -p {MOUNT}/out"],
                self.limits.with_timeout(120), workdir="/"))
            if copied.exit_code != 0:
                raise SandboxError("the prepared tree could not be copied into the sandbox: "
                                   + clean_output(bytes(copied.combined), 2000))

    async def _exec(self, run: _Run, argv: list[str], limits: SandboxLimits,
                    env: dict[str, str] | None = None, channel: bool = False) -> _Exec:
        return await self._exec_in(run.container, argv, limits, env=env, run=run, channel=channel)

    async def _exec_in(self, container: str, argv: list[str], limits: SandboxLimits,
                       env: dict[str, str] | None = None, run: _Run | None = None,
                       workdir: str = WORKDIR, channel: bool = False) -> _Exec:
        api = self.client.api
        since = int(time.time()) - 1

        def create() -> str:
            created: dict[str, str] = api.exec_create(
                container, argv, stdout=True, stderr=True, user=f"{SANDBOX_UID}:{SANDBOX_UID}", workdir=workdir,
                environment={**ENV, **(env or {})})
            return created["Id"]

        exec_id: str = await (self._thread(run, create) if run is not None else asyncio.to_thread(create))
        result = _Exec(channel=channel)
        started = time.monotonic()
        drain = asyncio.ensure_future(asyncio.to_thread(self._drain, container, exec_id, result, limits))
        done, _pending = await asyncio.wait({drain}, timeout=limits.timeout_seconds)
        if not done:
            result.timed_out = True
            await asyncio.to_thread(self._kill, container)
            await drain
        else:
            drain.result()
        result.duration = time.monotonic() - started
        if not result.timed_out:
            inspected = await asyncio.to_thread(api.exec_inspect, exec_id)
            result.exit_code = inspected.get("ExitCode")
        result.oom_killed = await asyncio.to_thread(self._oom_since, container, since)
        if not result.oom_killed and result.exit_code in SIGKILLED:
            # the engine may see the exit before it has processed the kernel's OOM notice
            await asyncio.sleep(0.5)
            result.oom_killed = await asyncio.to_thread(self._oom_since, container, since)
        return result

    def _drain(self, container: str, exec_id: str, result: _Exec, limits: SandboxLimits) -> None:
        cap, kill_at = limits.output_bytes, limits.output_kill_bytes
        stream: Iterator[tuple[bytes | None, bytes | None]] = self.client.api.exec_start(
            exec_id, stream=True, demux=True)
        for out, err in stream:
            if result.channel and out:
                # the results stream: its own bound (the results' cap), never part of the output shown
                crossed = result.channel_bytes <= MAX_CHANNEL_BYTES < result.channel_bytes + len(out)
                result.channel_bytes += len(out)
                result.stdout.extend(out)
                del result.stdout[:-MAX_CHANNEL_BYTES]
                if crossed:  # more than any results: reported by ``results_frame``
                    self._kill(container)
                out = None
            for chunk, target in ((out, result.stdout), (err, result.stderr)):
                if not chunk:
                    continue
                result.total += len(chunk)
                if len(target) < cap:
                    target.extend(chunk[: cap - len(target)])
                if len(result.combined) < cap:
                    result.combined.extend(chunk[: cap - len(result.combined)])
            if result.total > kill_at and not result.output_overflow:
                result.output_overflow = True
                self._kill(container)

    def _kill(self, container: str) -> None:
        # already gone or already stopped: either way it no longer runs
        with contextlib.suppress(NotFound, APIError):
            self.client.api.kill(container)

    def _oom_since(self, container: str, since: int) -> bool:
        try:
            # a fractional "until" in the past returns at once; a whole second ahead would block until it passes
            events = self.client.api.events(since=since, until=f"{time.time():.6f}", decode=True,
                                            filters={"container": container, "event": "oom"})
            return any(True for _ in events)
        except DockerException:
            return False

    def _remove(self, run: _Run) -> None:
        api = self.client.api
        for container in [run.container, *run.helpers]:
            if container is None:
                continue
            # what cannot be removed now is left for the janitor, which finds it by label
            with contextlib.suppress(DockerException):
                api.remove_container(container, force=True, v=True)
        if run.volume is not None:
            with contextlib.suppress(DockerException):
                api.remove_volume(run.volume, force=True)
        for image in run.images:
            with contextlib.suppress(DockerException):
                api.remove_image(image, force=True)
        for network in run.networks:
            with contextlib.suppress(DockerException):
                api.remove_network(network)

    # --- results --------------------------------------------------------------------------------------------

    def _test_result(self, run: _Exec, files: dict[str, bytes | str], spec: TestSpec, limits: SandboxLimits,
                     elapsed: float, base: dict[str, Any]) -> TestRunResult:
        output = clean_test_output(bytes(run.combined), limits.output_bytes)
        # wall time goes to the log, never into the result: the same review must give the same bytes
        log.info("sandbox test run: %s tree, %.3f s, exit code %s", spec.tree, elapsed, run.exit_code)
        base = {**base, "output": output}
        if run.timed_out:
            share = _mutation_clock(spec)
            mutants = (f" ({limits.timeout_seconds - share:g} s for the tests, then {share:g} s for the mutants)"
                       if share else "")
            return TestRunResult(status="timeout", reason=f"killed: wall-clock timeout after "
                                 f"{limits.timeout_seconds:g} s{mutants}", **base)
        if run.oom_killed:
            return TestRunResult(status="error", reason=f"killed: out of memory (limit {limits.memory_mb} MB)",
                                 **base)
        if run.output_overflow:
            return TestRunResult(status="error", reason=f"killed: output exceeded {limits.output_kill_bytes} "
                                 "bytes", **base)
        if "error" in files:
            return TestRunResult(status="error", reason=str(files["error"]), **base)
        if run.exit_code != 0:
            # the runner exits 0 after writing; anything else means it was stopped, and the frame is not its own
            return TestRunResult(status="error", reason=f"LogoMesh's runner was stopped (exit code {run.exit_code}) "
                                 "before it could report", **base)
        raw = files.get("results")
        try:
            loaded = json.loads(raw) if isinstance(raw, bytes) and len(raw) <= MAX_RESULTS_BYTES else None
        except ValueError:
            loaded = None
        if not isinstance(loaded, dict):
            return TestRunResult(status="error", reason=f"the runner wrote no readable results (exit code "
                                 f"{run.exit_code})", **base)
        return read_results(loaded, spec, base)
