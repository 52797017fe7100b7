"""The same review twice gives byte-identical Evaluation JSON, with the Docker sandbox and the red agent on, and
the ledger holds it once: no durations, no timings in the stored output, no memory addresses, no trace of
whether the environment was built or found in the cache, and no mutant judged by another mutant's bytecode."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from app.ledger import open_ledger
from app.ledger.local import local_entanglement
from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation, Mutant, TestSpec
from sandbox.docker_sandbox import DockerSandbox
from sandbox.redact import DURATIONS_OMITTED, clean_test_output, stable_text
from tests.gitfixture import RepoBuilder
from tests.sandbox.index import one_package_index

BASE = {
    "requirements-test.txt": "lm-rates==1.0.0\n",
    "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--durations=3 -v"\n',
    "app/__init__.py": "",
    "app/ops.py": "def add(a, b):\n    return a + b\n",
    "tests/test_ops.py": "from app.ops import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}
CHANGE = {
    "app/ops.py": "from lm_rates import rate\n\n\ndef add(a, b):\n    return a + b\n\n\n"
                  "def mul(a, b):\n    if a == 0:\n        return 0\n    return a * b * rate()\n",
    "app/users.py": "import sqlite3\n\n\ndef find_user(name):\n    conn = sqlite3.connect(':memory:')\n"
                    "    try:\n"
                    "        return conn.execute(f\"SELECT id FROM users WHERE name = '{name}'\").fetchall()\n"
                    "    except sqlite3.Error:\n        return []\n",
    "tests/test_mul.py": "import time\n\nfrom app.ops import mul\n\n\nclass Box:\n    pass\n\n\n"
                         "def test_mul():\n    time.sleep(0.02)\n    assert mul(2, 3) == 6\n\n\n"
                         "def test_box():\n    assert Box() == mul(1, 1)\n",
}


@pytest.fixture(scope="module")
def rates_index(tmp_path_factory: pytest.TempPathFactory, docker_engine: docker.DockerClient) -> Iterator[str]:
    with one_package_index(tmp_path_factory.mktemp("index"), "lm-rates", "1.0.0", "def rate():\n    return 1\n") as url:
        yield url


async def review(root: Path, home: Path, index: str) -> Evaluation:
    repo = RepoBuilder(root)
    repo.commit("App", BASE)
    repo.branch("change")
    head = repo.commit("Add mul and a user lookup", CHANGE)
    settings = load_settings(sandbox="docker", home=home, embedding="off", red_team="on", sandbox_index_url=index)
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title="Add mul",
                                            body="Adds mul() and find_user().")
    return evaluation


@pytest.mark.docker
@pytest.mark.slow
async def test_the_same_review_twice_gives_byte_identical_json_and_one_dbom(tmp_path: Path, rates_index: str,
                                                                           docker_engine: docker.DockerClient) -> None:
    home = tmp_path / "home"
    # two clones, as two deliveries of one job get; one machine, so the second finds the environment cached
    first = await review(tmp_path / "first", home, rates_index)
    second = await review(tmp_path / "second", home, rates_index)

    # the review measured what carries run-to-run noise: sandbox runs, setup, mutants, red probes, failures
    assert first.tests is not None and first.tests.setup is not None
    assert first.tests.setup.status == "installed", first.tests.reason
    assert (first.tests.status, first.tests.passed, first.tests.failed) == ("ran", 2, 1), first.tests.output
    assert first.differential is not None and first.differential.mutants
    assert any(f.confirmed for f in first.red_analysis.findings), first.red_analysis
    assert DURATIONS_OMITTED in first.tests.output and "at 0x…" in first.tests.output
    assert first.model_dump_json() == second.model_dump_json()

    # at-least-once delivery: the same decision appended twice is one record
    settings = load_settings(home=home, database_url=f"sqlite+aiosqlite:///{home / 'battles.db'}")
    ledger = await open_ledger(settings)
    try:
        records = [await ledger.append(ev, installation_id=None, entanglement=local_entanglement(ev, settings))
                   for ev in (first, second)]
        assert records[0] == records[1]
        assert await ledger.count() == 1
    finally:
        await ledger.close()


ORIGINAL = "def mul(a, b):\n    if a == 0:\n        return 0\n    return a * b\n"


@pytest.mark.docker
async def test_a_mutant_never_runs_the_bytecode_of_another(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    """Mutants of one line are often the same size ("==" → "!=", 0 → 1) and written within one second: Python
    would take the previous mutant's cached bytecode for the current one's."""
    root = make_repo({"app/__init__.py": "", "app/ops.py": ORIGINAL,
                      "tests/test_ops.py": "from app.ops import mul\n\n\ndef test_mul():\n"
                                           "    assert mul(2, 3) == 6\n"})
    caught = ORIGINAL.replace("a == 0", "a != 0")  # mul(2, 3) returns 0: the test fails
    missed = ORIGINAL.replace("a == 0", "a == 1")  # mul(2, 3) is still 6: nothing notices
    assert len(caught) == len(missed) == len(ORIGINAL)
    mutants = tuple(Mutant(id=f"{kind}{n}", path="app/ops.py", line=2, description=kind, source=source)
                    for n in range(4) for kind, source in (("caught", caught), ("missed", missed)))
    result = await sandboxes(root).run_tests(TestSpec(mutants=mutants, mutation_seconds=120))
    assert result.passed == 1, result.output
    assert {m.id: m.status for m in result.mutants} == {
        m.id: "killed" if m.id.startswith("caught") else "survived" for m in mutants}


@pytest.mark.docker
async def test_the_mutants_budget_is_added_to_the_head_s_clock_never_taken_from_its_tests(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox]) -> None:
    """The suite fits its clock; its eight mutants, a second each, would not fit what is left of it: they have
    a budget of their own after the tests, so the run still reports its tests and every mutant."""
    slow = "import time\n\nfrom app.ops import mul\n\n\ndef test_mul():\n    time.sleep(1)\n    assert mul(2, 3) == 6\n"
    root = make_repo({"app/__init__.py": "", "app/ops.py": ORIGINAL, "tests/test_ops.py": slow})
    caught = ORIGINAL.replace("a == 0", "a != 0")
    mutants = tuple(Mutant(id=f"m{n}", path="app/ops.py", line=2, description="==", source=caught)
                    for n in range(8))
    result = await sandboxes(root).run_tests(TestSpec(mutants=mutants, mutation_seconds=60, timeout_seconds=6))
    assert result.status == "ran" and result.passed == 1, result.reason
    assert [m.status for m in result.mutants] == ["killed"] * 8
    # a suite that does not fit its own share is still killed, and the reason says how the clock was made
    hung = make_repo({"app/__init__.py": "", "app/ops.py": ORIGINAL,
                      "tests/test_ops.py": slow.replace("time.sleep(1)", "time.sleep(600)")})
    result = await sandboxes(hung).run_tests(TestSpec(mutants=mutants[:1], mutation_seconds=1, timeout_seconds=5))
    assert result.status == "timeout" and result.reason == (
        "killed: wall-clock timeout after 36 s (5 s for the tests, then 31 s for the mutants)"), result.reason


# --- what is taken out of the output --------------------------------------------------------------------------


def test_pytest_and_unittest_timings_leave_the_output() -> None:
    quiet = "..F\n1 failed, 2 passed, 1 warning in 0.12s\n"
    assert stable_text(quiet) == "..F\n1 failed, 2 passed, 1 warning\n"
    assert stable_text("no tests ran in 0.01s") == "no tests ran"
    assert stable_text("Ran 5 tests in 0.012s\n\nOK") == "Ran 5 tests\n\nOK"
    # centred in "=" as pytest draws it across the terminal, whatever the timing's length was
    for seconds in ("0.25s", "65.12s (0:01:05)"):
        line = f" 3 failed, 2 passed in {seconds} ".center(80, "=")
        assert stable_text(line) == "=" * 30 + " 3 failed, 2 passed " + "=" * 30
    long = "= " + "x" * 90 + " in 1.50s ="
    assert stable_text(long) == "= " + "x" * 90 + " ="


def test_durations_and_addresses_leave_the_output_and_the_rest_stays() -> None:
    text = ("=" * 29 + " slowest 3 durations " + "=" * 30 + "\n"
            "0.05s call     tests/test_mul.py::test_mul\n0.00s setup    tests/test_mul.py::test_box\n\n"
            "(1 durations < 0.005s hidden.  Use -vv to show these durations.)\n"
            "E       assert <test_mul.Box object at 0x7f3269f4e890> == 1\n"
            "<function f at 0x7F00AA> took 3 tries; waited 2.5s\n")
    shown = ("=" * 29 + " slowest 3 durations " + "=" * 30 + f"\n{DURATIONS_OMITTED}\n"
             "E       assert <test_mul.Box object at 0x…> == 1\n"
             "<function f at 0x…> took 3 tries; waited 2.5s\n")
    assert stable_text(text) == shown
    # with none too short to show, pytest prints neither the blank line nor the note: the same text remains
    assert stable_text(text.replace("\n\n(1 durations < 0.005s hidden.  Use -vv to show these durations.)", "")) \
        == shown
    assert clean_test_output(b"password=hunter22 passed in 1.00s", 1000) == "password=[REDACTED:assigned-secret] passed"
