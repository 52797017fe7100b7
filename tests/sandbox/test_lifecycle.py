"""One sandboxed run's lifecycle against the real engine: one copy in, the results on the runner's own stream,
the CPU share from the rubric, out-of-memory kills reported as such."""

from __future__ import annotations

import contextlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest

from checks.config import parse_repo_config
from checks.models import TestSpec as Spec
from rubric import load_rubric
from sandbox.docker_sandbox import (
    MAX_RESULTS_BYTES,
    RESULTS_MARK,
    DockerSandbox,
    _Exec,
    joined_tar,
    results_frame,
)
from sandbox.limits import SANDBOX_UID, SandboxLimits
from sandbox.tarball import owned_files_tar, single_file_tar
from tests.sandbox.conftest import IMAGE

pytestmark = pytest.mark.docker


def _frame(payload: bytes) -> bytes:
    return b"\n" + payload + b"\n" + RESULTS_MARK + b" " + str(len(payload)).encode() + b"\n"


def test_joined_tar_holds_every_entry_in_order_with_its_owner() -> None:
    tree = single_file_tar("repo/a.py", b"A = 1\n")
    ours = owned_files_tar("logomesh", {"runner.py": b"pass\n"})
    with tarfile.open(fileobj=io.BytesIO(joined_tar([tree, ours])), mode="r:") as tar:
        members = [(m.name, m.uid, m.mode) for m in tar.getmembers()]
        data = tar.extractfile("logomesh/runner.py")
        assert data is not None and data.read() == b"pass\n"
    assert members == [("repo/a.py", SANDBOX_UID, 0o644), ("logomesh", 0, 0o555), ("logomesh/runner.py", 0, 0o444)]
    assert joined_tar([tree]) is tree


@pytest.mark.parametrize(("stream", "found"), [
    (b"junk" + _frame(b'{"a": 1}'), {"results": b'{"a": 1}'}),
    (_frame(b'{"forged": 1}') + _frame(b'{"a": 1}'), {"results": b'{"a": 1}'}),  # the last frame counts
    (_frame(b'{"a": 1}') + b"written after", {}),
    (_frame(b'{"a": 1}')[:-2] + b"99\n", {}),  # a length longer than what precedes it
    (b"", {}),
    (b"\n" + RESULTS_MARK + b" x\n", {}),
])
def test_results_frame_is_the_streams_last_bytes_or_nothing(stream: bytes, found: dict[str, bytes]) -> None:
    run = _Exec(channel=True, channel_bytes=len(stream))
    run.stdout.extend(stream)
    assert results_frame(run) == found


def test_results_frame_too_large_is_an_error() -> None:
    run = _Exec(channel=True, channel_bytes=MAX_RESULTS_BYTES + 1000)
    assert results_frame(run) == {"error": f"the runner's results are larger than {MAX_RESULTS_BYTES} bytes"}


async def test_one_copy_into_the_container_carries_the_tree_and_logomesh_files(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_layout.py": f"""
        import os, stat

        def test_tree_is_the_sandbox_users():
            assert os.stat("tests/test_layout.py").st_uid == {SANDBOX_UID}

        def test_logomesh_files_are_roots_and_read_only():
            for name in ("runner.py", "launch.py", "collector.py", "config.json"):
                info = os.stat("/sandbox/logomesh/" + name)
                assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o444
            assert not os.access("/sandbox/logomesh/launch.py", os.W_OK)
    """}
    sandbox: DockerSandbox = sandboxes(make_repo(files))
    copies: list[str] = []
    put_archive = sandbox.client.api.put_archive

    def counted(container: str, path: str, data: Any) -> Any:
        copies.append(path)
        return put_archive(container, path, data)

    sandbox.client.api.put_archive = counted
    try:
        result = await sandbox.run_tests(Spec())
    finally:
        del sandbox.client.api.put_archive
    assert (result.status, result.passed, result.failed) == ("ran", 2, 0), result.output
    assert copies == ["/sandbox"]


async def test_forged_frames_on_the_runners_stream_are_not_taken(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    forged = '{"runner": "pytest", "exit_code": 0, "record": {"tests": [{"id": "tests/test_x.py::test_fails", ' \
             '"outcome": "passed"}], "collected": ["tests/test_x.py::test_fails"]}}'
    frame = f"\\n{forged}\\n{RESULTS_MARK.decode()} {len(forged)}\\n"
    files = {
        "conftest.py": f"""
            import os, subprocess, sys

            FRAME = {frame!r}

            def pytest_unconfigure(config):
                runner = os.getppid()  # the pytest process's parent is LogoMesh's runner
                with open(f"/proc/{{runner}}/fd/1", "w") as handle:
                    handle.write(FRAME)
                # and a process left behind that keeps writing forgeries after the runner's own results
                subprocess.Popen([sys.executable, "-c", "import time\\nwhile True:\\n"
                                  f"    open('/proc/{{runner}}/fd/1', 'w').write({{FRAME!r}})\\n"
                                  "    time.sleep(0.005)"], start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        """,
        "tests/test_x.py": "def test_fails():\n    print('SEEN-IN-OUTPUT')\n    assert False\n",
    }
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 0, 1), (result.reason, result.output)
    assert "SEEN-IN-OUTPUT" in result.output and RESULTS_MARK.decode() not in result.output


async def test_a_flood_of_the_results_stream_is_stopped_and_reported(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_flood.py": """
        import os

        def test_flood():
            chunk = b"z" * (1024 * 1024)
            with open(f"/proc/{os.getppid()}/fd/1", "wb") as handle:
                while True:
                    handle.write(chunk)
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec(timeout_seconds=60))
    assert result.status == "error"
    assert result.reason == f"the runner's results are larger than {MAX_RESULTS_BYTES} bytes"


async def test_a_custom_commands_output_is_shown_not_taken_for_results(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"say.py": f"print({RESULTS_MARK.decode()!r} + ' 1')\nprint('FROM-STDOUT')\n"}
    result = await sandboxes(make_repo(files)).run_tests(Spec(command=("python3", "say.py")))
    assert (result.status, result.passed) == ("ran", 1), (result.reason, result.output)
    assert "FROM-STDOUT" in result.output


async def test_cpu_share_comes_from_the_rubric(
        make_repo: Callable[[dict[str, str]], Path], docker_engine: docker.DockerClient) -> None:
    rubric = load_rubric(None, parse_repo_config("rubric:\n  sandbox: {cpus: 0.5}\n").rubric_overrides())
    limits = SandboxLimits.from_rubric(rubric, timeout_seconds=120)
    files = {"tests/test_cpu.py": """
        import os

        def quota():
            if os.path.exists("/sys/fs/cgroup/cpu.max"):  # cgroup v2
                text = open("/sys/fs/cgroup/cpu.max").read().split()
                return int(text[0]) / int(text[1])
            base = "/sys/fs/cgroup/cpu/"
            return int(open(base + "cpu.cfs_quota_us").read()) / int(open(base + "cpu.cfs_period_us").read())

        def test_half_a_cpu():
            assert quota() == 0.5
    """}
    sandbox = DockerSandbox.for_tree(make_repo(files), limits, IMAGE, client=docker_engine)
    result = await sandbox.run_tests(Spec())
    assert limits.cpus == 0.5
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output


async def test_out_of_memory_is_reported_as_such_not_as_failing_tests(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_memory.py": """
        def test_small():
            assert True

        def test_eat_memory():
            hoard = []
            while True:
                hoard.append(bytearray(16 * 1024 * 1024))
    """}
    result = await sandboxes(make_repo(files), memory_mb=128).run_tests(Spec())
    assert (result.status, result.reason) == ("error", "killed: out of memory (limit 128 MB)"), result.output
    assert result.failed == 0 and result.passed == 0


@pytest.mark.docker
def test_the_builds_own_tag_goes_even_when_a_container_was_created_from_it(docker_engine: docker.DockerClient) -> None:
    """pydantic-settings#941: base, head and guard build the same environment at once, and another build's image
    took the shared tag, so this build's own tag was its image's only reference; the engine refuses to remove such
    a reference while a container was created from it (409, "must force"), and the environment's verification
    container is one: the base run was 'not measured'. The build's own tag goes all the same."""
    import uuid

    from sandbox.setup_phase import untag

    suffix = uuid.uuid4().hex[:8]
    api = docker_engine.api
    holder = api.create_container(IMAGE, command=["true"])
    built = [api.commit(holder, repository="logomesh-env", tag=f"untag-{suffix}-{n}")["Id"] for n in ("build", "other")]
    building = f"logomesh-env:untag-{suffix}-build"
    container = api.create_container(building, command=["true"])  # as the verification's container is
    try:
        with pytest.raises(docker.errors.APIError, match="must force"):  # what the engine says without force
            api.remove_image(building)
        untag(api, building)
        with pytest.raises(docker.errors.ImageNotFound):
            docker_engine.images.get(building)
        assert docker_engine.images.get(f"logomesh-env:untag-{suffix}-other").id == built[1]
    finally:
        for name in (container, holder):
            api.remove_container(name, force=True)
        for image_id in built:
            with contextlib.suppress(docker.errors.DockerException):
                api.remove_image(image_id, force=True)
