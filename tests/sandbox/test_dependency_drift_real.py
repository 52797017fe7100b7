"""Dependency drift for real: a project of June 2023 (and one of June 2021) that imports
``werkzeug.urls.url_quote`` (removed in Werkzeug 3.0, September 2023) with an unbounded ``werkzeug`` requirement,
reviewed in the Docker sandbox with its packages from the real index (PyPI, through the setup proxy).

Friendly: an honest change on that base is measured — today's Werkzeug breaks the base, so the tests run again with
the releases uploaded before the base commit's date (pip's ``--uploaded-prior-to``), the environment says so, and
the change passes. Hostile: on a base that runs today, a change that itself imports the removed name gets no dated
environment and does not pass.
"""

from __future__ import annotations

import calendar
import textwrap
import time
from pathlib import Path

import docker
import pytest

from app.review.assembly import review_repository
from app.settings import load_settings
from checks.models import Evaluation
from tests.gitfixture import RepoBuilder
from tests.sandbox.registries import unreachable

pytestmark = pytest.mark.docker

PYPROJECT = textwrap.dedent("""
    [build-system]
    requires = ["setuptools>=61"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "quoter"
    version = "1.0"
    dependencies = ["werkzeug"]

    [project.optional-dependencies]
    test = ["pytest"]
    """).lstrip()
QUOTE = textwrap.dedent('''
    """Quote the path part of a URL."""
    from werkzeug.urls import url_quote


    def quote_path(path):
        """The path with every character outside a URL path's safe set percent-encoded."""
        return url_quote(path, safe="/")
    ''').lstrip()
QUOTE_TEST = ("from quoter.quote import quote_path\n\n\ndef test_quote_path():\n"
              "    assert quote_path('/a b/c') == '/a%20b/c'\n")
SLUG = textwrap.dedent('''
    """Slugs for titles."""


    def slugify(title):
        """The title lower-cased, its runs of spaces as single hyphens."""
        return "-".join(title.lower().split())
    ''').lstrip()
SLUG_TEST = ("from quoter.slug import slugify\n\n\ndef test_slugify():\n"
             "    assert slugify('Hello  World') == 'hello-world'\n")
JUNE_2023 = calendar.timegm(time.strptime("2023-06-01", "%Y-%m-%d"))


def needs_index(project: str) -> None:
    """Skip unless the real package index answers for ``project``."""
    why = unreachable(f"https://pypi.org/simple/{project}/")
    if why is not None:
        pytest.skip(why)


@pytest.fixture(scope="module")
def quoter(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    needs_index("werkzeug")
    root = tmp_path_factory.mktemp("quoter")
    repo = RepoBuilder(root)
    repo.clock = JUNE_2023
    base = repo.commit("Quote URL paths", {"pyproject.toml": PYPROJECT, "src/quoter/__init__.py": "",
                                    "src/quoter/quote.py": QUOTE, "tests/test_quote.py": QUOTE_TEST})
    heads = {"base": base, **repo.branches({"honest": {"src/quoter/slug.py": SLUG, "tests/test_slug.py": SLUG_TEST}})}
    # a base of today's code: nothing imports url_quote; the change brings the import in
    repo.branch("main")
    repo.commit("Quote with the standard library", {"src/quoter/quote.py": QUOTE.replace(
        "from werkzeug.urls import url_quote", "from urllib.parse import quote as url_quote")})
    heads["modern"] = repo.git("rev-parse", "HEAD").strip()
    heads |= repo.branches({"reintroduced": {"src/quoter/slug.py": SLUG.replace(
        '"""Slugs for titles."""\n', '"""Slugs for titles."""\nfrom werkzeug.urls import url_quote\n').replace(
        'return "-".join(title.lower().split())', 'return url_quote("-".join(title.lower().split()))'),
        "tests/test_slug.py": SLUG_TEST}})
    return root, heads


async def review(root: Path, base: str, head: str, title: str, body: str) -> Evaluation:
    settings = load_settings(sandbox="docker", home=root / ".lm", embedding="auto", red_team="off")
    evaluation, _ = await review_repository(root, base, head, settings=settings, title=title, body=body)
    return evaluation


def summaries(evaluation: Evaluation, kind: str) -> list[str]:
    return [e.summary for e in evaluation.evidence if e.kind == kind]


def assert_measured_pass(evaluation: Evaluation, new_test: str) -> None:
    """The change's one new test is a new pass against a base that ran, nothing failing, the verdict ``pass``."""
    reasons = " | ".join(evaluation.verdict_reasons)
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", reasons
    assert diff.new_passing == (new_test,) and not diff.new_failing and not diff.regressed, reasons
    assert evaluation.measured["testing"] is True and evaluation.verdict == "pass", reasons


async def test_a_base_today_s_werkzeug_broke_is_measured_with_its_day_s_releases(
        quoter: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = quoter
    evaluation = await review(root, heads["base"], heads["honest"], "Add slugify for titles",
                              "slugify lower-cases a title and joins its words with hyphens, with a test.")
    reasons = " | ".join(evaluation.verdict_reasons)
    drifted = summaries(evaluation, "dependency-drift")
    assert len(drifted) == 1 and "url_quote" in drifted[0] and "2023-06-01" in drifted[0], (drifted, reasons)
    assert any("releases uploaded before 2023-06-01" in s for s in summaries(evaluation, "test-environment"))
    assert_measured_pass(evaluation, "tests/test_slug.py::test_slugify")


async def test_a_change_that_imports_the_removed_name_itself_gets_no_dated_environment(
        quoter: tuple[Path, dict[str, str]], docker_engine: docker.DockerClient) -> None:
    root, heads = quoter
    evaluation = await review(root, heads["modern"], heads["reintroduced"], "Add slugify for titles",
                              "slugify lower-cases a title, joins its words with hyphens and quotes it.")
    reasons = " | ".join(evaluation.verdict_reasons)
    assert summaries(evaluation, "dependency-drift") == [], reasons
    assert evaluation.verdict == "fail" and "Rule of New Failures" in reasons, reasons


# --- pytest broke inside itself under the main interpreter: the companion image's runs the tests ------------------

BREAKS_ON_311 = textwrap.dedent('''
    import sys


    def pytest_runtest_logreport(report):
        # pytest's own reporting breaks under this interpreter, as pytest 8.4's tracebacks do under Python 3.11.2
        if sys.version_info[:2] == (3, 11) and report.when == "call" and report.nodeid.endswith("test_second"):
            raise RuntimeError("generator raised StopIteration")
    ''').lstrip()
CALC = "def add(a, b):\n    return a + b\n"
CALC_TESTS = ("from calc import add\n\n\ndef test_first():\n    assert add(1, 2) == 3\n\n\n"
              "def test_second():\n    assert add(2, 2) == 4\n\n\ndef test_third():\n    assert add(0, 0) == 0\n")
SUB = "\n\ndef sub(a, b):\n    \"\"\"a minus b.\"\"\"\n    return a - b\n"
SUB_TEST = "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"


async def measured_under_another(root: Path, conftest: str, test_path: str, test: str, at: str) -> None:
    """A calc project whose ``conftest`` breaks pytest under 3.11 and a change adding ``sub`` with ``test``: the
    review says which commit broke (``at``), runs everything under 3.13, and the change's test is a new pass."""
    repo = RepoBuilder(root)
    base = repo.commit("Add add", {"pyproject.toml": '[project]\nname = "calc"\nversion = "1"\nrequires-python = '
                                   '">=3.9"\n', "calc.py": CALC, "conftest.py": conftest,
                                   "tests/test_calc.py": CALC_TESTS})
    head = repo.branches({"sub": {"calc.py": CALC + SUB, test_path: test}})["sub"]
    evaluation = await review(root, base, head, "Add sub", "sub subtracts its second argument from its first.")
    reasons = " | ".join(evaluation.verdict_reasons)
    said = summaries(evaluation, "interpreter-fallback")
    assert len(said) == 1 and "Python 3.13" in said[0] and "internal error" in said[0], (said, reasons)
    assert f"at the {at} commit" in said[0], said
    diff = evaluation.differential
    assert diff is not None and diff.status == "measured", reasons
    assert diff.new_passing == (f"{test_path}::{test.split('def ', 1)[1].split('(', 1)[0]}",), reasons
    assert not diff.regressed and not diff.new_failing, reasons
    assert evaluation.measured["testing"] is True and evaluation.verdict == "pass", reasons


async def test_a_base_pytest_breaks_under_the_main_interpreter_is_measured_under_another(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    await measured_under_another(tmp_path / "calc", BREAKS_ON_311, "tests/test_sub.py", SUB_TEST, "base")


BREAKS_ON_311_IN_STDLIB = textwrap.dedent('''
    import json
    import sys


    def pytest_runtest_logreport(report):
        # as Debian's 3.11.2 ``traceback.extract_tb`` does on a documentation example's report: the standard
        # library raising inside pytest's reporting, under this interpreter only
        if sys.version_info[:2] == (3, 11) and report.when == "call" and "example" in report.nodeid:
            json.loads("{")
    ''').lstrip()
EXAMPLE_TEST = "from calc import sub\n\n\ndef test_example():\n    assert sub(5, 3) == 2\n"


async def test_a_head_where_pytest_breaks_inside_the_interpreter_is_measured_under_another(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    # the test runs first (pytest's order), so the break comes before the other tests are reached
    await measured_under_another(tmp_path / "calc", BREAKS_ON_311_IN_STDLIB, "tests/test_an_example.py",
                                 EXAMPLE_TEST, "head")


# --- pytest's own stack pinned to releases that cannot start under the sandbox's interpreter ---------------------

# markupsafe#224's base pins (pip-compile of 2021): py 1.10's apipkg fails under Python 3.11 (AttributeError: __spec__)
PINNED_TESTS = ("attrs==21.2.0\niniconfig==1.1.1\npackaging==20.9\npluggy==0.13.1\npy==1.10.0\npyparsing==2.4.7\n"
                "pytest==6.2.4\ntoml==0.10.2\n")


async def test_a_base_whose_pinned_pytest_cannot_start_is_measured_with_today_s_pytest(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    needs_index("pytest")
    repo = RepoBuilder(tmp_path / "calc")
    base = repo.commit("Add add", {"pyproject.toml": '[project]\nname = "calc"\nversion = "1"\n',
                                   "calc.py": CALC, "requirements/tests.txt": PINNED_TESTS,
                                   "tests/test_calc.py": CALC_TESTS})
    head = repo.branches({"sub": {"calc.py": CALC + SUB, "tests/test_sub.py": SUB_TEST}})["sub"]
    evaluation = await review(tmp_path / "calc", base, head, "Add sub",
                              "sub subtracts its second argument from its first.")
    reasons = " | ".join(evaluation.verdict_reasons)
    said = summaries(evaluation, "test-tooling-fallback")
    assert len(said) == 1 and "py, pytest" in said[0] and "__spec__" in said[0], (said, reasons)
    environment = summaries(evaluation, "test-environment")
    assert any("pins lifted: iniconfig, pluggy, py, pytest" in s for s in environment), (environment, reasons)
    assert_measured_pass(evaluation, "tests/test_sub.py::test_sub")


# --- the day's releases of pytest's own stack cannot start under the sandbox's interpreter either -----------------

JUNE_2021 = calendar.timegm(time.strptime("2021-06-01", "%Y-%m-%d"))


async def test_a_base_whose_day_s_pytest_cannot_start_runs_with_a_stack_that_starts_and_the_day_s_rest(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    # the quoter of June 2021: today's Werkzeug breaks it (url_quote), and the releases of its day give pytest 6.2.4
    # with py 1.10, whose apipkg cannot start under Python 3.11 — measured with the day's Werkzeug and the newest
    # fix releases of the day's pytest and py
    needs_index("werkzeug")
    repo = RepoBuilder(tmp_path / "quoter")
    repo.clock = JUNE_2021
    base = repo.commit("Quote URL paths", {"pyproject.toml": PYPROJECT, "src/quoter/__init__.py": "",
                                           "src/quoter/quote.py": QUOTE, "tests/test_quote.py": QUOTE_TEST})
    head = repo.branches({"honest": {"src/quoter/slug.py": SLUG, "tests/test_slug.py": SLUG_TEST}})["honest"]
    evaluation = await review(tmp_path / "quoter", base, head, "Add slugify for titles",
                              "slugify lower-cases a title and joins its words with hyphens, with a test.")
    reasons = " | ".join(evaluation.verdict_reasons)
    drifted = summaries(evaluation, "dependency-drift")
    assert len(drifted) == 1 and "2021-06-01" in drifted[0] and "url_quote" in drifted[0], (drifted, reasons)
    # the newest fix releases of the day's lines (pytest 6.2.5, py 1.11), taken among the releases of some weeks
    # after Python 3.11 came out: they start under it
    assert ("py>=1.10.0,<2, pytest>=6.2.4,<7 from the releases uploaded before 2022-12-23" in drifted[0]
            and "__spec__" in drifted[0]), drifted
    assert_measured_pass(evaluation, "tests/test_slug.py::test_slugify")


# --- the base's code calls what the standard library has since removed: an older interpreter ---------------------

# ``collections.Mapping`` was removed in Python 3.10: this module imports under 3.9 only
MAPPING_CALC = ("from collections import Mapping\n\n\ndef add(a, b):\n    return a + b\n\n\n"
                "def total(prices):\n    assert isinstance(prices, Mapping)\n    return sum(prices.values())\n")
MODERN_CALC = MAPPING_CALC.replace("from collections import Mapping", "from collections.abc import Mapping")
TOTAL_TESTS = CALC_TESTS + "\n\ndef test_total():\n    from calc import total\n\n    assert total({'a': 2}) == 2\n"


@pytest.fixture(scope="module")
def bullseye(docker_engine: docker.DockerClient) -> str:
    """The companion image offering Python 3.9 (built by the test setup; built here when it is absent)."""
    from sandbox.image import SUITES, build_image, companion_tag, image_exists
    from tests.sandbox.conftest import IMAGE

    tag = companion_tag(IMAGE, SUITES["bullseye"])
    if not image_exists(tag):
        build_image(tag, suite="bullseye")
    return tag


async def review_sub(root: Path, base_calc: str) -> tuple[Evaluation, str]:
    """A calc project at ``base_calc`` (requires-python >= 3.8) and a change that adds ``sub`` with its test to
    ``MAPPING_CALC``: the review, and its reasons."""
    repo = RepoBuilder(root)
    base = repo.commit("Add add and total", {
        "pyproject.toml": '[project]\nname = "calc"\nversion = "1"\nrequires-python = ">=3.8"\n',
        "calc.py": base_calc, "tests/test_calc.py": TOTAL_TESTS})
    head = repo.branches({"sub": {"calc.py": MAPPING_CALC + SUB, "tests/test_sub.py": SUB_TEST}})["sub"]
    evaluation = await review(root, base, head, "Add sub", "sub subtracts its second argument from its first.")
    return evaluation, " | ".join(evaluation.verdict_reasons)


async def test_a_base_calling_a_removed_standard_library_name_is_measured_under_an_older_interpreter(
        tmp_path: Path, bullseye: str, docker_engine: docker.DockerClient) -> None:
    evaluation, reasons = await review_sub(tmp_path / "calc", MAPPING_CALC)
    said = summaries(evaluation, "interpreter-fallback")
    assert len(said) == 1 and "Python 3.9" in said[0] and "'Mapping' from 'collections'" in said[0], (said, reasons)
    assert any("Python 3.9" in s for s in summaries(evaluation, "test-environment")), reasons
    assert_measured_pass(evaluation, "tests/test_sub.py::test_sub")


async def test_a_change_that_itself_imports_a_removed_standard_library_name_gets_no_older_interpreter(
        tmp_path: Path, bullseye: str, docker_engine: docker.DockerClient) -> None:
    evaluation, reasons = await review_sub(tmp_path / "calc", MODERN_CALC)
    assert summaries(evaluation, "interpreter-fallback") == [], reasons
    assert evaluation.verdict == "fail", reasons
