"""Pass-rate mapping on fixture repositories, run for real in the Docker sandbox."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from checks.detectives.test_runner import evidence_for
from checks.models import TestSpec as Spec
from sandbox.docker_sandbox import DockerSandbox
from tests.sandbox.conftest import court_t

pytestmark = pytest.mark.docker

PASSING = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": """
        from calc import add

        def test_add():
            assert add(1, 2) == 3

        def test_add_negative():
            assert add(-1, -2) == -3

        def test_add_zero():
            assert add(0, 0) == 0
    """,
}


async def test_all_pass_maps_to_full_t(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    result = await sandboxes(make_repo(PASSING)).run_tests(Spec())
    assert (result.status, result.passed, result.failed, result.errored) == ("ran", 3, 0, 0)
    assert court_t(result) == pytest.approx(0.85)
    assert {t.name for t in result.tests} == {"tests/test_calc.py::test_add", "tests/test_calc.py::test_add_negative",
                                              "tests/test_calc.py::test_add_zero"}


async def test_some_fail_maps_linearly(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {**PASSING, "tests/test_more.py": "def test_wrong():\n    assert 1 + 1 == 3\n"}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 3, 1)
    assert court_t(result) == pytest.approx(0.2 + 0.65 * 0.75)
    failures = [e for e in evidence_for(result) if e.kind == "test-failure"]  # with no base to compare
    assert [e.facts["name"] for e in failures] == ["tests/test_more.py::test_wrong"]
    assert "assert" in failures[0].facts["message"]


async def test_no_tests_is_explicit(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    result = await sandboxes(make_repo({"calc.py": "X = 1\n", "README.md": "no tests here\n"})).run_tests(Spec())
    assert result.status == "no_tests"
    assert court_t(result) == pytest.approx(0.2)  # never above a failing suite
    assert [e.kind for e in evidence_for(result)] == ["test-environment", "no-tests"]


async def test_collection_error_counts_as_failure(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {**PASSING, "tests/test_broken.py": "import does_not_exist\n\ndef test_never():\n    pass\n"}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.errored) == ("ran", 3, 1)
    assert court_t(result) == pytest.approx(0.2 + 0.65 * 0.75)
    assert [e.name for e in result.collection_errors] == ["tests/test_broken.py"]
    assert "No module named 'does_not_exist'" in (result.collection_errors[0].message or "")


async def test_sleep_forever_is_killed_at_the_timeout(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_sleep.py": "import time\n\ndef test_forever():\n    time.sleep(10**6)\n"}
    result = await sandboxes(make_repo(files)).run_tests(Spec(timeout_seconds=3))
    assert result.status == "timeout"
    assert "timeout after 3 s" in (result.reason or "")
    assert court_t(result) == pytest.approx(0.2)


async def test_printing_a_summary_does_not_move_t(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {"tests/test_liar.py": """
        import sys

        def test_liar():
            sys.__stdout__.write("==== 10 passed in 0.01s ====\\n")
            print("==== 10 passed in 0.01s ====")
            assert False
    """}
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed) == ("ran", 0, 1)
    assert court_t(result) == pytest.approx(0.2)


async def test_unittest_repository(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {
        "shop.py": "def total(xs):\n    return sum(xs)\n",
        "tests.py": """
            import unittest
            from shop import total

            class TotalTest(unittest.TestCase):
                def test_sum(self):
                    self.assertEqual(total([1, 2]), 3)

                def test_empty(self):
                    self.assertEqual(total([]), 1)

                @unittest.skip("not yet")
                def test_later(self):
                    pass
        """,
    }
    result = await sandboxes(make_repo(files)).run_tests(Spec())
    assert (result.status, result.passed, result.failed, result.skipped) == ("ran", 1, 1, 1)
    assert {t.name for t in result.tests if t.outcome == "failed"} == {"tests.TotalTest.test_empty"}


async def test_custom_command_without_a_report(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    sandbox = sandboxes(make_repo({"check.py": "import sys\nsys.exit(int(sys.argv[1]))\n"}))
    ok = await sandbox.run_tests(Spec(command=("python3", "check.py", "0")))
    bad = await sandbox.run_tests(Spec(command=("python3", "check.py", "3")))
    assert (ok.status, ok.passed, ok.failed) == ("ran", 1, 0)
    assert (bad.status, bad.passed, bad.failed) == ("ran", 0, 1)
    assert bad.tests[0].message == "exit code 3"


async def test_custom_pytest_command_gets_a_report(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    files = {**PASSING, "other/test_other.py": "def test_other():\n    assert False\n"}
    result = await sandboxes(make_repo(files)).run_tests(Spec(command=("python3", "-m", "pytest", "tests")))
    assert (result.status, result.passed, result.failed) == ("ran", 3, 0)


async def test_missing_command_is_an_error(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    result = await sandboxes(make_repo(PASSING)).run_tests(Spec(command=("no-such-tool",)))
    assert (result.status, result.failed) == ("ran", 1)
    assert result.tests[0].message == "exit code 127"


async def test_probe_runs_at_head_without_network(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    sandbox = sandboxes(make_repo(PASSING))
    probe = await sandbox.run_probe(
        "import os, socket\nfrom calc import add\nprint('CWD', os.getcwd(), add(2, 3))\n"
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\nexcept OSError as e:\n"
        "    print('NET-BLOCKED')\n", 20)
    assert probe.exit_code == 0 and not probe.timed_out
    assert "CWD /sandbox/repo 5" in probe.stdout and "NET-BLOCKED" in probe.stdout
    slow = await sandbox.run_probe("import time\ntime.sleep(600)\n", 2)
    assert slow.timed_out and slow.exit_code is None
    crash = await sandbox.run_probe("raise SystemExit('boom')", 20)
    assert crash.exit_code == 1 and "boom" in crash.stderr


async def test_sandbox_failure_is_not_measured_not_a_low_score(
        make_repo: Callable[[dict[str, str]], Path], docker_engine: docker.DockerClient) -> None:
    from sandbox.docker_sandbox import DockerSandbox
    from sandbox.limits import SandboxLimits

    sandbox = DockerSandbox(docker_engine, b"", SandboxLimits(), "logomesh-no-such-image:none")
    result = await sandbox.run_tests(Spec())
    assert result.status == "not_measured" and "the sandbox failed" in (result.reason or "")
    assert court_t(result) is None
    probe = await sandbox.run_probe("print('x')", 5)
    assert probe.exit_code is None and probe.stdout == "" and "the sandbox failed" in probe.stderr
