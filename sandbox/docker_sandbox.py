"""DockerSandbox: runs a repository's tests (and red-team probes) in a locked-down, throw-away container.

One run is: a size-capped tmpfs volume for ``/sandbox`` → a container (read-only root, no network, non-root,
``cap_drop=ALL``, ``no-new-privileges``, the default seccomp profile, memory/CPU/PID limits, ulimits, tini as
PID 1 holding it open) → the tree copied in as a tar with ``put_archive`` → the runner exec'd with a wall-clock
timeout and an output cap → the JUnit report read back with ``get_archive`` while the volume still holds it →
container and volume removed in ``finally``, even when the job is cancelled. Nothing is bind-mounted.

An optional setup phase (``test.setup`` in the base branch's ``.logomesh.yml``) runs first in its own
container *with* the network, is committed to a temporary image, and the tests then run from that image with
the network off.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import tarfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import LogConfig, Mount, Ulimit

from checks.models import ProbeResult, TestCaseResult, TestRunResult, TestSpec
from sandbox.errors import SandboxError, SandboxUnavailable
from sandbox.junit import JUnitError, parse_junit
from sandbox.limits import SANDBOX_UID, SandboxLimits
from sandbox.redact import clean_output
from sandbox.tarball import pack_directory, pack_git_tree, repack_archive, single_file_tar

LABEL = "org.logomesh.sandbox"
LABEL_OWNER = "org.logomesh.sandbox.owner"
LABEL_CREATED = "org.logomesh.sandbox.created"
MOUNT = "/sandbox"
WORKDIR = "/sandbox/repo"
MAX_RESULTS_BYTES = 16 * 1024 * 1024
# exit codes of a SIGKILLed process: 137 directly, 247 when the runner passes on its child's -9
SIGKILLED = (137, 247)
ENV = {
    "HOME": "/tmp",  # noqa: S108 - the container's own tmpfs
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONUSERBASE": "/home/sandbox/.local",
    "PIP_BREAK_SYSTEM_PACKAGES": "1",
    "LOGOMESH_JUNIT_XML": "/sandbox/out/junit.xml",
}


def docker_client(timeout: int = 60) -> docker.DockerClient:
    """A client for the local engine, or SandboxUnavailable saying why there is none."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except DockerException as exc:
        raise SandboxUnavailable(f"no Docker engine answers ({exc.__class__.__name__})") from exc
    return client


def require_image(client: docker.DockerClient, image: str) -> None:
    try:
        client.images.get(image)
    except ImageNotFound as exc:
        raise SandboxUnavailable(
            f"the sandbox image {image} is missing; build it with `logomesh sandbox build-image`", image
        ) from exc
    except DockerException as exc:
        raise SandboxUnavailable(f"cannot inspect the sandbox image {image}: {exc}", image) from exc


@dataclass
class _Exec:
    exit_code: int | None = None
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
    # blocking steps still running in worker threads; cleanup waits for them so nothing is created after it
    pending: set[asyncio.Future[Any]] = field(default_factory=set)


class DockerSandbox:
    """The :class:`~checks.protocols.Sandbox` for one repository tree (the head commit of a change)."""

    def __init__(self, client: docker.DockerClient, tree_tar: bytes, limits: SandboxLimits, image: str, *,
                 allow_setup: bool = True, setup_timeout_seconds: float = 600.0) -> None:
        self.client = client
        self.tree_tar = tree_tar
        self.limits = limits
        self.image = image
        self.allow_setup = allow_setup
        self.setup_timeout_seconds = setup_timeout_seconds
        self.owner = uuid.uuid4().hex

    # --- construction -----------------------------------------------------------------------------------

    @classmethod
    def for_tree(cls, path: Path, limits: SandboxLimits, image: str, client: docker.DockerClient | None = None,
                 **options: Any) -> DockerSandbox:
        """A sandbox for a directory tree (its symlinks are packed as links, never followed)."""
        client = client or docker_client()
        require_image(client, image)
        buf = io.BytesIO()
        pack_directory(Path(path), buf, limits.work_mb * 1024 * 1024)
        return cls(client, buf.getvalue(), limits, image, **options)

    @classmethod
    def for_git(cls, git_bytes: Any, head_sha: str, limits: SandboxLimits, image: str,
                client: docker.DockerClient | None = None, **options: Any) -> DockerSandbox:
        """A sandbox for the tree of ``head_sha`` read from git's object store (``GitRepo.git_bytes``)."""
        client = client or docker_client()
        require_image(client, image)
        buf = io.BytesIO()
        pack_git_tree(git_bytes, head_sha, buf, limits.work_mb * 1024 * 1024)
        return cls(client, buf.getvalue(), limits, image, **options)

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

    # --- the Sandbox protocol -----------------------------------------------------------------------------

    async def run_tests(self, spec: TestSpec) -> TestRunResult:
        limits = self.limits.with_timeout(spec.timeout_seconds)
        started = time.monotonic()
        run = _Run()
        try:
            image = self.image
            if spec.setup_command:
                if not self.allow_setup:
                    return TestRunResult(status="not_measured", image=self.image,
                                         reason="the repository asks for a setup phase, which this server forbids")
                prepared: tuple[str, TestRunResult | None] = await self._thread(
                    run, self._setup, run, spec.setup_command)
                image, failure = prepared
                if failure is not None:
                    return failure
            await self._thread(run, self._start, run, image, None)
            config = json.dumps({"command": list(spec.command) if spec.command else None})
            source = resources.files("sandbox").joinpath("runner.py").read_text(encoding="utf-8")
            result = await self._exec(run, ["python3", "-c", source, config], limits)
            files = await self._thread(run, self._read_results, run)
            return self._test_result(result, files, spec, limits, time.monotonic() - started)
        except (SandboxError, DockerException) as exc:
            # a failure of LogoMesh itself must not cost the PR points: T is "not measured", with the reason
            why = exc.reason if isinstance(exc, SandboxError) else f"Docker failed: {exc}"
            return TestRunResult(status="not_measured", reason=f"the sandbox failed: {why}", image=self.image)
        finally:
            await asyncio.shield(self._cleanup(run))

    async def run_probe(self, code: str, timeout_seconds: float) -> ProbeResult:
        limits = self.limits.with_timeout(timeout_seconds)
        run = _Run()
        try:
            probe = single_file_tar("out/probe.py", code.encode("utf-8", "surrogatepass"))
            await self._thread(run, self._start, run, self.image, probe)
            # ``-c`` puts the working directory (the repository) first on sys.path, as the red agent expects
            launcher = "import runpy; runpy.run_path('/sandbox/out/probe.py', run_name='__main__')"
            result = await self._exec(run, ["python3", "-c", launcher], limits)
            cap = limits.output_bytes
            return ProbeResult(exit_code=None if result.timed_out else result.exit_code,
                               stdout=clean_output(bytes(result.stdout), cap),
                               stderr=clean_output(bytes(result.stderr), cap),
                               timed_out=result.timed_out, oom_killed=result.oom_killed,
                               duration=round(result.duration, 3))
        except (SandboxError, DockerException) as exc:
            # no marker on stdout, so a probe oracle sees "nothing found"; stderr says why
            why = exc.reason if isinstance(exc, SandboxError) else f"Docker failed: {exc}"
            return ProbeResult(exit_code=None, stderr=f"logomesh: the sandbox failed: {why}")
        finally:
            await asyncio.shield(self._cleanup(run))

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
        return {LABEL: "1", LABEL_OWNER: self.owner, LABEL_CREATED: str(int(time.time()))}

    def _host_config(self, *, network: bool, read_only: bool, mounts: list[Mount]) -> dict[str, Any]:
        lim = self.limits
        config: dict[str, Any] = self.client.api.create_host_config(
            mem_limit=f"{lim.memory_mb}m",
            memswap_limit=f"{lim.memory_mb}m",
            nano_cpus=int(lim.cpus * 1e9),
            pids_limit=lim.pids,
            network_mode="bridge" if network else "none",
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
        )
        return config

    def _create(self, run: _Run, image: str, *, network: bool, read_only: bool, mounts: list[Mount]) -> Any:
        api = self.client.api
        created = api.create_container(
            image, command=["sleep", "infinity"], user=f"{SANDBOX_UID}:{SANDBOX_UID}", environment=ENV,
            working_dir="/", labels=self._labels(), network_disabled=not network,
            host_config=self._host_config(network=network, read_only=read_only, mounts=mounts),
        )
        return created["Id"]

    def _start(self, run: _Run, image: str, extra_tar: bytes | None) -> None:
        lim = self.limits
        try:
            run.volume = self.client.volumes.create(
                name=f"logomesh-sandbox-{uuid.uuid4().hex}", driver="local", labels=self._labels(),
                driver_opts={"type": "tmpfs", "device": "tmpfs",
                             "o": f"size={lim.work_mb}m,uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0755,nosuid,nodev"},
            ).name
            run.container = self._create(run, image, network=False, read_only=True,
                                         mounts=[Mount(MOUNT, run.volume, type="volume")])
            self.client.api.start(run.container)
            # the volume is a tmpfs: it only holds data while the container runs, so copy in after start
            self.client.api.put_archive(run.container, MOUNT, self.tree_tar)
            if extra_tar is not None:
                self.client.api.put_archive(run.container, MOUNT, extra_tar)
        except ImageNotFound as exc:
            raise SandboxUnavailable(f"the sandbox image {image} is missing", image) from exc
        except DockerException as exc:
            raise SandboxError(f"the sandbox could not start: {exc}") from exc

    def _setup(self, run: _Run, command: tuple[str, ...]) -> tuple[str, TestRunResult | None]:
        """The opt-in setup phase: network on, its own timeout, committed to a temporary image."""
        try:
            helper = self._create(run, self.image, network=True, read_only=False, mounts=[])
            run.helpers.append(helper)
            self.client.api.put_archive(helper, MOUNT, self.tree_tar)
            self.client.api.start(helper)
        except DockerException as exc:
            raise SandboxError(f"the setup container could not start: {exc}") from exc
        limits = self.limits.with_timeout(self.setup_timeout_seconds)
        result = asyncio.run(self._exec_in(helper, list(command), limits, env={"HOME": "/home/sandbox"}))
        if result.timed_out or result.exit_code != 0:
            why = (f"killed: setup timeout after {limits.timeout_seconds:g} s" if result.timed_out
                   else "killed: out of memory" if result.oom_killed
                   else f"setup command failed with exit code {result.exit_code}")
            return self.image, TestRunResult(status="error", reason=why, image=self.image,
                                             output=clean_output(bytes(result.combined), self.limits.output_bytes),
                                             duration=round(result.duration, 3))
        tag = f"logomesh-prepared:{uuid.uuid4().hex[:16]}"
        try:
            self.client.api.kill(helper)
            repo, _, version = tag.partition(":")
            self.client.api.commit(helper, repository=repo, tag=version,
                                   conf={"Labels": self._labels(), "User": f"{SANDBOX_UID}:{SANDBOX_UID}"})
        except DockerException as exc:
            raise SandboxError(f"the prepared image could not be committed: {exc}") from exc
        run.images.append(tag)
        return tag, None

    async def _exec(self, run: _Run, argv: list[str], limits: SandboxLimits) -> _Exec:
        return await self._exec_in(run.container, argv, limits, run=run)

    async def _exec_in(self, container: str, argv: list[str], limits: SandboxLimits,
                       env: dict[str, str] | None = None, run: _Run | None = None) -> _Exec:
        api = self.client.api
        since = int(time.time()) - 1

        def create() -> str:
            created: dict[str, str] = api.exec_create(
                container, argv, stdout=True, stderr=True, user=f"{SANDBOX_UID}:{SANDBOX_UID}", workdir=WORKDIR,
                environment={**ENV, **(env or {})})
            return created["Id"]

        exec_id: str = await (self._thread(run, create) if run is not None else asyncio.to_thread(create))
        result = _Exec()
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

    def _read_results(self, run: _Run) -> dict[str, bytes | str]:
        """``/sandbox/out`` through the Docker API: regular files by name; anything else is reported."""
        try:
            stream, _stat = self.client.api.get_archive(run.container, f"{MOUNT}/out")
        except (NotFound, APIError):
            return {}
        buf = bytearray()
        for chunk in stream:
            buf.extend(chunk)
            if len(buf) > MAX_RESULTS_BYTES:
                return {"error": f"the results directory is larger than {MAX_RESULTS_BYTES} bytes"}
        files: dict[str, bytes | str] = {}
        with tarfile.open(fileobj=io.BytesIO(bytes(buf)), mode="r:") as tar:
            for member in tar.getmembers():
                name = member.name.split("/", 1)[1] if "/" in member.name else ""
                if name not in ("junit.xml", "meta.json"):
                    continue
                if not member.isreg():
                    files[name] = "not a regular file (a symlink or a special file); refusing to read it"
                    continue
                handle = tar.extractfile(member)
                files[name] = handle.read() if handle is not None else b""
        return files

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

    # --- results --------------------------------------------------------------------------------------------

    def _test_result(self, run: _Exec, files: dict[str, bytes | str], spec: TestSpec, limits: SandboxLimits,
                     elapsed: float) -> TestRunResult:
        output = clean_output(bytes(run.combined), limits.output_bytes)
        base: dict[str, Any] = {"output": output, "image": self.image, "duration": round(elapsed, 3)}
        if run.timed_out:
            return TestRunResult(status="timeout", reason=f"killed: wall-clock timeout after "
                                 f"{limits.timeout_seconds:g} s", **base)
        if run.oom_killed:
            return TestRunResult(status="error", reason=f"killed: out of memory (limit {limits.memory_mb} MB)",
                                 **base)
        if run.output_overflow:
            return TestRunResult(status="error", reason=f"killed: output exceeded {limits.output_kill_bytes} "
                                 "bytes", **base)
        meta: dict[str, Any] = {}
        raw_meta = files.get("meta.json")
        if isinstance(raw_meta, bytes) and len(raw_meta) < 4096:
            try:
                loaded = json.loads(raw_meta)
                meta = loaded if isinstance(loaded, dict) else {}
            except ValueError:
                meta = {}
        junit = files.get("junit.xml")
        if isinstance(junit, str):
            return TestRunResult(status="error", reason=f"the JUnit report is {junit}", **base)
        if "error" in files:
            return TestRunResult(status="error", reason=str(files["error"]), **base)
        if junit is None:
            if spec.command and meta.get("runner") == "custom" and run.exit_code is not None:
                outcome = "passed" if run.exit_code == 0 else "failed"
                name = " ".join(spec.command)[:300]
                case = TestCaseResult(name=name, outcome=outcome,
                                      message=None if outcome == "passed" else f"exit code {run.exit_code}")
                return TestRunResult(status="ran", passed=int(outcome == "passed"), failed=int(outcome != "passed"),
                                     tests=(case,), **base)
            return TestRunResult(status="error", reason=f"the test run wrote no JUnit report "
                                 f"(exit code {run.exit_code})", **base)
        try:
            report = parse_junit(junit)
        except JUnitError as exc:
            return TestRunResult(status="error", reason=f"unreadable JUnit report: {exc}", **base)
        counts = {"passed": report.count("passed"), "failed": report.count("failed"),
                  "errored": report.count("error"), "skipped": report.count("skipped")}
        executed = counts["passed"] + counts["failed"] + counts["errored"]
        status = "ran" if executed else "no_tests"
        reason = "the report was cut at its test-case limit" if report.truncated else None
        return TestRunResult(status=status, tests=report.tests, reason=reason, **counts, **base)
