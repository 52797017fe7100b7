"""T measured end to end: ``review_repository`` on a small git repo, with the real sandbox; and the notices."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import TestSpec as Spec
from sandbox.docker_sandbox import DockerSandbox

GIT_ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


def commit(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, str, str]:
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    base = commit(root, {"shop.py": "def total(prices):\n    return sum(prices)\n",
                         "tests/test_shop.py": "from shop import total\n\n\ndef test_total():\n"
                                               "    assert total([1, 2]) == 3\n"}, "Add the shop total")
    head = commit(root, {"shop.py": "def total(prices):\n    return sum(prices)\n\n\n"
                                    "def discount(price, percent):\n    return price * (100 - percent) / 100\n",
                         "tests/test_discount.py": "from shop import discount\n\n\ndef test_discount():\n"
                                                   "    assert discount(200, 25) == 150\n\n\n"
                                                   "def test_no_discount():\n    assert discount(80, 0) == 80\n"},
                  "Add percentage discounts")
    return root, base, head


@pytest.mark.docker
async def test_review_measures_t_in_the_sandbox(
        shop: tuple[Path, str, str], docker_engine: docker.DockerClient) -> None:
    root, base, head = shop
    messages: list[str] = []
    evaluation, _prepared = await review_repository(
        root, base, head, settings=load_settings(sandbox="docker", home=root / ".lm"),
        title="Add percentage discounts", body="Adds discount() with tests.", progress=messages.append)
    assert evaluation.tests is not None
    assert (evaluation.tests.status, evaluation.tests.passed, evaluation.tests.failed) == ("ran", 3, 0)
    assert evaluation.measured["testing"] is True
    assert evaluation.testing_score == pytest.approx(0.85)
    assert any(e.id == "tests.run" and e.facts["passed"] == 3 for e in evaluation.evidence)
    assert not any("tests not measured" in m for m in messages)


@pytest.mark.docker
async def test_failing_head_lowers_t(shop: tuple[Path, str, str], docker_engine: docker.DockerClient) -> None:
    root, base, _head = shop
    head = commit(root, {"tests/test_discount.py": "from shop import discount\n\n\ndef test_wrong():\n"
                                                   "    assert discount(100, 10) == 95\n"}, "Break a test")
    evaluation, _ = await review_repository(root, base, head, settings=load_settings(sandbox="docker"))
    assert evaluation.tests is not None and (evaluation.tests.passed, evaluation.tests.failed) == (1, 1)
    # half the change's tests hold; the only test of discount() fails, so no mutant of it can be detected
    assert evaluation.testing_score == pytest.approx(0.2 + 0.65 * (0.7 * 0.5 + 0.3 * 0.0))
    assert evaluation.verdict == "fail"
    failing = [e for e in evaluation.evidence if e.kind == "test-new-failing"]
    assert failing and "test_wrong" in failing[0].summary and "assert 90.0 == 95" in failing[0].summary
    assert str(failing[0].location) == "tests/test_discount.py:5"


async def test_missing_image_in_auto_mode_is_a_notice(shop: tuple[Path, str, str]) -> None:
    root, base, head = shop
    messages: list[str] = []
    evaluation, _ = await review_repository(
        root, base, head, settings=load_settings(sandbox="auto", sandbox_image="logomesh-no-such-image:none"),
        progress=messages.append)
    assert evaluation.tests is not None and evaluation.tests.status == "not_measured"
    assert evaluation.measured["testing"] is False
    reason = evaluation.tests.reason or ""
    assert "logomesh-no-such-image:none" in reason or "no Docker engine" in reason
    assert any(m.startswith("notice: tests not measured") for m in messages)


async def test_sandbox_off_is_a_notice(shop: tuple[Path, str, str]) -> None:
    root, base, head = shop
    messages: list[str] = []
    evaluation, _ = await review_repository(root, base, head, settings=load_settings(sandbox="off"),
                                            progress=messages.append)
    assert evaluation.tests is not None and "turned off" in (evaluation.tests.reason or "")
    assert any("turned off" in m for m in messages)


@pytest.mark.docker
async def test_setup_phase_has_network_and_tests_do_not(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    # what a repository's setup command writes into its tree is there when the tests run
    setup = ("python3 -c \"import os; open('prepared_dep.py', 'w').write("
             "'NICS = %r' % sorted(os.listdir('/sys/class/net')))\"")
    files = {"tests/test_dep.py": """
        import os
        import prepared_dep

        def test_dependency_installed_by_setup_with_network():
            assert "lo" in prepared_dep.NICS and len(prepared_dep.NICS) > 1

        def test_tests_run_without_network():
            assert sorted(os.listdir("/sys/class/net")) == ["lo"]
    """}
    import shlex

    result = await sandboxes(make_repo(files)).run_tests(Spec(setup_command=tuple(shlex.split(setup))))
    assert (result.status, result.passed, result.failed) == ("ran", 2, 0), result.output


@pytest.mark.docker
async def test_failing_setup_is_an_error(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    result = await sandboxes(make_repo({"tests/test_a.py": "def test_a():\n    pass\n"})).run_tests(
        Spec(setup_command=("python3", "-c", "raise SystemExit(4)")))
    assert result.status == "env_error" and (result.reason or "").startswith(
        "the setup command failed (exit code 4)")
    assert result.setup is not None and result.setup.status == "failed"


@pytest.mark.docker
async def test_a_tree_the_change_makes_too_large_is_the_changes_problem(
        shop: tuple[Path, str, str], docker_engine: docker.DockerClient) -> None:
    root, base, _head = shop
    # with a Python change beside it (a change of no Python code is "not analysed", neutral by that rule)
    head = commit(root, {"blob.txt": "x" * (2 * 1024 * 1024), "extra.py": "X = 1\n"}, "Add a big file")
    config = "rubric:\n  sandbox: {work_mb: 1}\n"
    evaluation, _ = await review_repository(root, base, head, settings=load_settings(sandbox="docker"),
                                            config_text=config)
    # the base fits and the head does not: an opt-out the change bought itself, so it cannot pass
    assert evaluation.tests is not None and evaluation.tests.status == "error"
    assert "the change makes the tree too large" in (evaluation.tests.reason or "")
    assert evaluation.measured["testing"] is True and evaluation.verdict != "pass"
    assert evaluation.verdict in ("neutral", "fail"), evaluation.verdict_reasons


async def test_a_base_already_too_large_is_not_measured(
        shop: tuple[Path, str, str], docker_engine: docker.DockerClient) -> None:
    root, _base, _head = shop
    base = commit(root, {"blob.txt": "x" * (2 * 1024 * 1024)}, "Add a big file")
    head = commit(root, {"shop.py": "def total(prices):\n    return sum(prices)\n\n\nX = 1\n"}, "Add X")
    config = "rubric:\n  sandbox: {work_mb: 1}\n"
    evaluation, _ = await review_repository(root, base, head, settings=load_settings(sandbox="docker"),
                                            config_text=config)
    assert evaluation.tests is not None and evaluation.tests.status == "not_measured"
    assert "more than the work dir" in (evaluation.tests.reason or "")
    assert evaluation.measured["testing"] is False


@pytest.mark.docker
async def test_head_gitattributes_cannot_hide_failing_tests(
        shop: tuple[Path, str, str], docker_engine: docker.DockerClient) -> None:
    root, base, _head = shop
    head = commit(root, {".gitattributes": "tests/test_hidden.py export-ignore\n",
                         "tests/test_hidden.py": "def test_hidden_failure():\n    assert False\n",
                         "tests/test_writes.py": "def test_writes_next_to_itself():\n"
                                                 "    open('tests/out.txt', 'w').write('ok')\n"}, "Hide a test")
    evaluation, _ = await review_repository(root, base, head, settings=load_settings(sandbox="docker"))
    assert evaluation.tests is not None
    assert (evaluation.tests.passed, evaluation.tests.failed) == (4, 1), evaluation.tests.output
    assert any("test_hidden_failure" in t.name for t in evaluation.tests.tests if t.outcome == "failed")
