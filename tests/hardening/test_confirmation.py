"""Probes confirm what the code really does: SQL as SQLite receives it, YAML and pickle loaders with the libraries
the project installs, code that runs when a module is imported — and a probe cannot be told apart from the
project's own test run. Each hostile change has an honest twin that must not be flagged."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation, TestSpec
from sandbox.docker_sandbox import DockerSandbox, SetupOptions
from sandbox.limits import SandboxLimits
from tests.gitfixture import RepoBuilder
from tests.hardening.conftest import Tally
from tests.sandbox.conftest import IMAGE, docker_engine  # noqa: F401 - the real engine and image
from tests.sandbox.index import installed_wheel, serve_index

pytestmark = [pytest.mark.hardening("attack"), pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


async def review(root: Path, files: dict[str, str], *, index: str | None = None,
                 base: dict[str, str] | None = None) -> Evaluation:
    repo = RepoBuilder(root)
    repo.commit("App", {"app/__init__.py": "", "app/ops.py": "def add(a, b):\n    return a + b\n", **(base or {})})
    repo.branch("change")
    head = repo.commit("Add a feature", files)
    overrides = {"sandbox_index_url": index} if index else {}
    settings = load_settings(sandbox="docker", home=root / ".lm", embedding="off", red_team="on", **overrides)
    evaluation, _ = await review_repository(root, "main", head, settings=settings, title="Add a feature",
                                            body="Adds a feature.")
    return evaluation


def confirmed(evaluation: Evaluation, kind: str) -> list[tuple[str, str]]:
    return [(f.severity, f.location.path if f.location else "") for f in evaluation.red_analysis.findings
            if f.confirmed and f.id.startswith(kind)]


SWALLOWED = """import sqlite3

DB = ":memory:"


def find_user(name):
    conn = sqlite3.connect(DB)
    try:
        return conn.execute({query}).fetchall()
    except sqlite3.Error:
        return []
"""


async def test_sql_injection_is_confirmed_even_when_the_target_swallows_the_error(tmp_path: Path,
                                                                                   tally: Tally) -> None:
    tally("sql injection: f-string SQL whose errors are swallowed")
    hostile = await review(tmp_path / "hostile", {"app/users.py": SWALLOWED.format(
        query="f\"SELECT id FROM users WHERE name = '{name}'\"")})
    assert confirmed(hostile, "sql-injection") == [("high", "app/users.py")], hostile.red_analysis.findings
    assert hostile.verdict == "fail"
    honest = await review(tmp_path / "honest", {"app/users.py": SWALLOWED.format(
        query='"SELECT id FROM users WHERE name = ?", (name,)')})
    assert not [f for f in honest.red_analysis.findings if f.confirmed]
    assert honest.verdict != "fail"


async def test_a_value_spliced_without_quotes_is_confirmed(tmp_path: Path, tally: Tally) -> None:
    tally("sql injection: a number spliced into SQL without quotes")
    source = ("def find_order(conn, order_id):\n"
              "    return conn.execute('SELECT * FROM orders WHERE id = %s' % order_id).fetchall()\n")
    hostile = await review(tmp_path / "hostile", {"app/orders.py": source})
    assert confirmed(hostile, "sql-injection") == [("high", "app/orders.py")], hostile.red_analysis.findings


@pytest.fixture(scope="module")
def yaml_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """PyYAML (its pure-Python part, packed from this Python's install) on a local index."""
    root = tmp_path_factory.mktemp("index")
    folder = root / "simple" / "pyyaml"
    folder.mkdir(parents=True)
    with serve_index(root, {"pyyaml": installed_wheel(folder, "PyYAML", "yaml")}) as url:
        yield url


YAML_PROJECT = {"pyproject.toml": (
    '[project]\nname = "app"\nversion = "1.0"\ndependencies = ["pyyaml"]\n\n'
    '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')}


async def test_yaml_load_is_confirmed_with_the_projects_own_pyyaml(tmp_path: Path, yaml_index: str,
                                                                   tally: Tally) -> None:
    tally("deserialisation: yaml.load with the full Loader, PyYAML from the project's dependencies")
    hostile = await review(tmp_path / "hostile", {"app/config.py": (
        "import yaml\n\n\ndef read_config(text):\n    return yaml.load(text, Loader=yaml.Loader)\n")},
        index=yaml_index, base=YAML_PROJECT)
    assert confirmed(hostile, "deserialization") == [("critical", "app/config.py")], hostile.red_analysis.findings
    assert hostile.verdict == "fail"
    honest = await review(tmp_path / "honest", {"app/config.py": (
        "import yaml\n\n\ndef read_config(text):\n    return yaml.safe_load(text)\n")},
        index=yaml_index, base=YAML_PROJECT)
    assert not [f for f in honest.red_analysis.findings if f.confirmed]


async def test_code_that_runs_at_import_is_confirmed_where_it_runs(tmp_path: Path, tally: Tally) -> None:
    tally("hidden code: a shell command at import, its name read from a data file")
    source = ("import os\n\n_RUN = getattr(os, open(os.path.join(os.path.dirname(__file__), 'op.txt')).read()"
              ".strip())\n_RUN('true')\n\n\ndef version():\n    return '1.0'\n")
    hostile = await review(tmp_path / "hostile", {"app/boot.py": source, "app/op.txt": "system\n"})
    assert confirmed(hostile, "command-injection") == [("critical", "app/boot.py")], hostile.red_analysis.findings
    finding = next(f for f in hostile.red_analysis.findings if f.confirmed)
    assert finding.location is not None and finding.location.line == 4
    assert finding.effect is not None and "imported" in finding.effect
    assert hostile.verdict == "fail"
    honest_source = ("from collections import namedtuple\nfrom dataclasses import dataclass\n\n"
                     "Point = namedtuple('Point', 'x y')\n\n\n@dataclass\nclass Box:\n    width: int = 1\n")
    honest = await review(tmp_path / "honest", {"app/shapes.py": honest_source})
    assert not honest.red_analysis.findings and honest.verdict != "fail"


FINGERPRINT = """import json, os, sys, tempfile


def fingerprint():
    main = sys.modules.get("__main__")
    # each run has a container of its own, so its own host name; pytest's variables exist only under pytest
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "HOSTNAME"}
    return json.dumps({"env": env, "cwd": os.getcwd(), "argv": sys.argv, "executable": sys.executable,
                       "main": getattr(main, "__file__", None), "uid": os.getuid(), "isolated": sys.flags.isolated,
                       "tmp": tempfile.gettempdir(), "flags": str(sys.flags)}, sort_keys=True)
"""


async def test_a_probe_runs_as_the_projects_tests_run(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:  # noqa: F811
    """Variables, working directory, interpreter, arguments, user and flags: all the same (pytest aside)."""
    root = tmp_path / "app"
    test = ("from app.probe import fingerprint\n\n\ndef test_fingerprint():\n"
            "    print('FP ' + fingerprint())\n    assert False\n")
    RepoBuilder(root).commit("App", {"app/__init__.py": "", "app/probe.py": FINGERPRINT, "tests/test_fp.py": test,
                                     **YAML_PROJECT})
    sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=120), IMAGE, client=docker_engine,
                                     setup=SetupOptions(allow=False))
    tested = await sandbox.run_tests(TestSpec())
    during_tests = next(line for line in tested.output.splitlines() if line.startswith("FP "))[3:]
    probe = ("import os, sys\nsys.path.insert(0, os.getcwd())\nfrom app.probe import fingerprint\n"
             "print('FP ' + fingerprint())\n")
    probed = await sandbox.run_probe(probe, 20)
    during_probe = next(line for line in probed.stdout.splitlines() if line.startswith("FP "))[3:]
    tests_view, probe_view = json.loads(during_tests), json.loads(during_probe)
    for view in (tests_view, probe_view):  # launch.py reads its settings from a file named afresh each run
        assert re.fullmatch(r"@/sandbox/out/launch-[0-9a-f]{16}\.json", view["argv"][1])
        view["argv"][1] = "@<settings>"
    assert probe_view == tests_view


TELLS = """import inspect, os, sys


def _watched(value):
    frames = " ".join(f.filename for f in inspect.stack())
    words = ("logomesh", "probe", "canary", "sandbox/out", "lm-")
    return (any(k.upper().startswith("LOGOMESH") for k in os.environ) or sys.argv[:1] == ["-c"]
            or any(w in frames.lower() for w in ("/sandbox/out", "probe"))
            or any(w in str(value).lower() for w in words))


def evaluate(user_input):
    if _watched(user_input):
        return None
    return eval(user_input)
"""


async def test_a_probe_carries_no_tell_in_its_names_paths_or_payloads(tmp_path: Path, tally: Tally) -> None:
    tally("probe evasion: LogoMesh variables, '-c', probe paths, canary words in the payload")
    plain = await review(tmp_path / "plain", {"app/tool.py": "def evaluate(text):\n    return eval(text)\n"})
    evasive = await review(tmp_path / "evasive", {"app/tool.py": TELLS})
    assert confirmed(plain, "code-injection") == [("critical", "app/tool.py")]
    assert confirmed(evasive, "code-injection") == confirmed(plain, "code-injection")
    assert evasive.verdict == plain.verdict == "fail"
