"""Escape and abuse attempts from PR code, each against the real Docker sandbox.

Most attacks are written as tests *inside* the fixture repository that assert the defence holds; the host then
checks they passed. Had a defence been missing, the in-container test would fail and so would this one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from checks.models import TestSpec as Spec
from sandbox.docker_sandbox import DockerSandbox
from sandbox.janitor import sweep
from tests.sandbox.attacks import FORK_BOMB_TEST
from tests.sandbox.conftest import leftovers

pytestmark = pytest.mark.docker


async def test_fork_bomb_hits_the_pid_limit(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_fork.py": FORK_BOMB_TEST}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 1, 0), result.output


async def test_memory_bomb_is_killed_and_reported(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_memory.py": """
        def test_eat_memory():
            hoard = []
            while True:
                hoard.append(bytearray(16 * 1024 * 1024))
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert result.status == "error"
    assert result.reason is not None and result.reason.startswith("killed: out of memory")


async def test_disk_fill_is_capped(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_disk.py": """
        import errno, os
        import pytest

        @pytest.mark.parametrize("where", [".", "/tmp"])
        def test_fill(where):
            written = 0
            chunk = b"x" * (1024 * 1024)
            names = []
            try:
                with pytest.raises(OSError) as caught:
                    for i in range(10_000):
                        names.append(os.path.join(where, f"fill{i}"))
                        with open(names[-1], "wb") as handle:
                            handle.write(chunk)
                        written += len(chunk)
            finally:
                for name in names:  # leave room for the JUnit report
                    if os.path.exists(name):
                        os.remove(name)
            assert caught.value.errno in (errno.ENOSPC, errno.EFBIG)
            assert written <= 256 * 1024 * 1024

        def test_single_huge_file_hits_the_file_size_limit():
            import signal
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            with pytest.raises(OSError):
                with open("/tmp/huge", "wb") as handle:
                    for _ in range(100):
                        handle.write(b"y" * (1024 * 1024))
            os.remove("/tmp/huge")
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed, result.errored) == ("ran", 3, 0, 0), result.output


async def test_network_is_off_by_name_and_by_ip(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_net.py": """
        import os, socket
        import pytest

        def test_dns_fails():
            with pytest.raises(OSError):
                socket.getaddrinfo("deb.debian.org", 80)

        @pytest.mark.parametrize("ip", ["1.1.1.1", "172.17.0.1", "10.0.0.1"])
        def test_ip_fails(ip):
            with pytest.raises(OSError):
                socket.create_connection((ip, 80), timeout=3)

        def test_only_loopback():
            assert sorted(os.listdir("/sys/class/net")) == ["lo"]

        def test_a_local_server_by_the_name_localhost():  # requests' test server binds and dials 'localhost'
            server = socket.create_server(("localhost", 0))
            with socket.create_connection(("localhost", server.getsockname()[1]), timeout=3):
                pass
            server.close()
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 6, 0), result.output


async def test_writing_outside_the_work_dir_fails(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_write.py": """
        import os
        import pytest

        @pytest.mark.parametrize("path", ["/etc/evil", "/usr/lib/evil", "/evil", "/home/sandbox/evil",
                                          "/var/tmp/evil", "/root/evil", "/sandbox/repo/../../evil"])
        def test_outside(path):
            with pytest.raises(OSError):
                with open(path, "w") as handle:
                    handle.write("x")

        def test_inside_and_tmp_work():
            with open("ok.txt", "w") as handle:
                handle.write("x")
            with open("/tmp/ok.txt", "w") as handle:
                handle.write("x")

        def test_not_root_and_no_capabilities():
            assert os.getuid() == 10001 and os.geteuid() == 10001
            status = open("/proc/self/status").read()
            assert "CapEff:\\t0000000000000000" in status
            assert "NoNewPrivs:\\t1" in status
            assert "Seccomp:\\t2" in status
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 9, 0), result.output


async def test_host_environment_and_secret_files_are_absent(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET-CANARY-7f3a\n")
    monkeypatch.setenv("LOGOMESH_CANARY_TOKEN", "ENV-CANARY-91bc")
    files = {"tests/test_secrets.py": f"""
        import os
        import pytest

        def test_no_host_environment():
            assert "LOGOMESH_CANARY_TOKEN" not in os.environ
            assert not any("CANARY" in value for value in os.environ.values())

        def test_no_host_files():
            assert not os.path.exists({str(secret)!r})
            assert not os.path.exists("/var/run/docker.sock")
            assert not os.path.exists("/run/docker.sock")
            with pytest.raises(OSError):
                open("/etc/shadow").read()
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 2, 0), result.output
    assert "CANARY-7f3a" not in result.output and "91bc" not in result.output


async def test_symlink_to_a_host_file_is_not_followed(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox], tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET-CANARY-d00d\n")
    root = make_repo({"tests/test_link.py": """
        import os
        import pytest

        def test_link_stays_a_dangling_link():
            assert os.path.islink("leak.txt")
            with pytest.raises(FileNotFoundError):
                open("leak.txt").read()

        def test_dir_link_is_empty_here():
            assert os.path.islink("leakdir")
            assert not os.path.exists("leakdir/host-secret.txt")
    """})
    os.symlink(secret, root / "leak.txt")
    os.symlink(tmp_path, root / "leakdir")
    result = await sandboxes(root).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 2, 0), result.output
    assert "d00d" not in result.output


@pytest.mark.parametrize("target", ["/etc/passwd", "HOST"])
async def test_a_results_file_forged_in_the_out_dir_is_never_read(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox], tmp_path: Path,
        target: str) -> None:
    """The results travel on the runner's output (tests/sandbox/test_lifecycle.py forges that channel); nothing in
    ``/sandbox/out`` — a forged file, a symlink to a host or container file, one swapped in late — is taken or
    followed by the host."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("root:x:HOST-SECRET-CANARY-beef\n")
    link_to = str(secret) if target == "HOST" else target
    forged = '{"runner": "pytest", "exit_code": 0, "record": {"tests": [{"id": "tests/test_x.py::test_fails", ' \
             '"outcome": "passed"}], "collected": ["tests/test_x.py::test_fails"]}}'
    files = {
        "conftest.py": f"""
            import os, subprocess, sys

            def pytest_unconfigure(config):
                out = "/sandbox/out/results.json"
                with open("/sandbox/out/forged.json", "w") as handle:
                    handle.write({forged!r})
                os.symlink({link_to!r}, out)
                # and a process left behind to put the forgery in place after the runner has written
                subprocess.Popen([sys.executable, "-c", "import os, time\\nfor _ in range(200):\\n"
                                  "    time.sleep(0.01)\\n    os.replace('/sandbox/out/forged.json', "
                                  "'/sandbox/out/results.json') if os.path.exists('/sandbox/out/forged.json') "
                                  "else None"], start_new_session=True)
        """,
        "tests/test_x.py": "def test_fails():\n    assert False\n",
    }
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 0, 1), (result.reason, result.output)
    assert "beef" not in result.model_dump_json() and "root:x:0" not in result.model_dump_json()


async def test_endless_output_is_capped(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    sandbox = sandboxes(make_repo({"spam.py": "while True:\n    print('y' * 1000)\n"}), output_kb=8,
                        output_kill_kb=1024)
    result = await sandbox.run_tests(Spec(command=("python3", "spam.py"), timeout_seconds=60))
    assert result.status == "error"
    assert result.reason == f"killed: output exceeded {1024 * 1024} bytes"
    assert len(result.output) <= 8 * 1024 + 100


async def test_a_runner_stopped_by_the_tests_reports_nothing(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    forged = '{"runner": "pytest", "exit_code": 0, "record": {"tests": [{"id": "t", "outcome": "passed"}]}}'
    files = {"tests/test_kill.py": f"""
        import os, signal

        def test_kill_the_runner():
            with open("/sandbox/out/results.json", "w") as handle:
                handle.write({forged!r})
            os.kill(os.getppid(), signal.SIGKILL)  # the pytest process's parent is LogoMesh's runner
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert result.status == "error" and result.passed == 0
    assert "runner was stopped" in (result.reason or "")


async def test_container_removed_when_the_job_is_cancelled(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox],
        docker_engine: docker.DockerClient) -> None:
    sandbox = sandboxes(make_repo({"tests/test_sleep.py": "import time\n\ndef test_s():\n    time.sleep(600)\n"}))
    task = asyncio.create_task(sandbox.run_tests(Spec(timeout_seconds=300)))
    for _ in range(600):  # wait (bounded) until the container exists, so the cancellation hits a live run
        if leftovers(docker_engine, sandbox)[0]:
            break
        await asyncio.sleep(0.1)
    assert leftovers(docker_engine, sandbox)[0], "the run never started a container"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert leftovers(docker_engine, sandbox) == ([], [])


def test_janitor_removes_only_old_orphans(docker_engine: docker.DockerClient) -> None:
    api = docker_engine.api
    from sandbox.docker_sandbox import LABEL, LABEL_CREATED
    from sandbox.image import DEFAULT_TAG

    def orphan(created: int) -> str:
        container: str = api.create_container(DEFAULT_TAG, command=["true"],
                                              labels={LABEL: "1", LABEL_CREATED: str(created)})["Id"]
        return container

    old, young = orphan(1), orphan(2**40)
    try:
        swept = sweep(docker_engine, older_than_seconds=3600)
        assert swept.containers >= 1
        ids = {c["Id"] for c in api.containers(all=True, filters={"label": LABEL})}
        assert old not in ids and young in ids
    finally:
        for container in (old, young):
            with contextlib.suppress(Exception):  # the janitor may have removed it already
                api.remove_container(container, force=True)


async def test_probe_memory_bomb_reports_oom(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    probe = await sandboxes(make_repo({"a.py": "A = 1\n"})).run_probe(
        "hoard = []\nwhile True:\n    hoard.append(bytearray(16 * 1024 * 1024))\n", 60)
    assert probe.oom_killed and not probe.timed_out and probe.exit_code == 137
