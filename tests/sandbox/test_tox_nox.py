"""tox and nox configurations read as tox and nox would install them, with nothing but requirements reaching pip."""

from __future__ import annotations

import os
from collections.abc import Callable

from sandbox.environment import choose_python, plan_environment
from sandbox.runners_config import choose_env, condition_holds, conditional_lines, expand, recipe_files, recipe_lines

PY = ("3.11",)


def reader(files: dict[str, str]) -> Callable[[str], str | None]:
    return lambda path: files.get(path)


def plan(files: dict[str, str], offered: tuple[str, ...] = PY) -> tuple[list[str], tuple[str, ...]]:
    result = plan_environment(reader(files), sorted(files), offered)
    return list(result.requirements), result.sources


def test_factor_conditions_keep_what_fits_the_plain_test_env_and_never_pass_a_prefix_to_pip() -> None:
    tox = ("[tox]\nenvlist = py3{10,11}-{cov,nocov}, lint\n[testenv]\ndeps =\n    pytest>=7\n"
           "    coverage: coverage\n    py3{10,11}: foo\n    py39: old-thing\n    !pypy: bar\n    pypy: pypy-only\n"
           "    py311-cov: cov-only\n    py310,py311: either\n    {py310,py311}-!cov: nocov-only\n")
    requirements, _ = plan({"tox.ini": tox, "test_x.py": ""})
    assert requirements == ["pytest>=7", "foo", "bar", "either", "nocov-only"]
    assert not any(":" in r for r in requirements)
    # on an interpreter the conditions name nowhere, the py-conditioned lines go too
    requirements, _ = plan({"tox.ini": tox, "test_x.py": ""}, ("3.12",))
    assert requirements == ["pytest>=7", "bar"]


def test_condition_grammar() -> None:
    assert expand("py3{10,11}-{a,b}") == ["py310-a", "py310-b", "py311-a", "py311-b"]
    factors = {"py311", "tests"}
    assert condition_holds("py3{10,11}", factors) and condition_holds("!pypy", factors)
    assert not condition_holds("py311-cov", factors) and not condition_holds("!py311", factors)
    assert condition_holds("cov,tests", factors)
    # a requirement with a URL or a marker is not a condition
    assert conditional_lines("pkg @ https://example.org/p.whl\nfoo; python_version<'3.12'", factors) == [
        "pkg @ https://example.org/p.whl", "foo; python_version<'3.12'"]


def test_substitutions_placeholders_includes_constraints_and_extras() -> None:
    files = {
        "pyproject.toml": ('[project]\nname = "p"\n[project.optional-dependencies]\nfancy = ["rich"]\n'
                           'docs = ["sphinx"]\n'),
        "tox.ini": ("[base]\ndeps =\n    attrs\n    six\n[testenv]\ndeps =\n    {[base]deps}\n"
                    "    -r{toxinidir}/requirements/test.txt\n    -c {toxinidir}/constraints.txt\n"
                    "    --pre\n    {env:EXTRA_DEP:freezegun}\n    {envtmpdir}/local.whl\n    ./vendored/pkg\n"
                    "extras = fancy\n"),
        "requirements/test.txt": "pytest==8.3.5\n",
        "constraints.txt": "attrs<99\n",
    }
    requirements, sources = plan(files)
    # requirements/test.txt is also read as a test requirements file, before tox.ini
    assert requirements == ["setuptools>=61", "wheel", "pytest==8.3.5", "attrs", "six", "freezegun", "rich"]
    assert "attrs<99" not in requirements and "sphinx" not in requirements
    assert not any("{" in r or r.startswith((".", "-")) for r in requirements)
    assert any("left out" in s and "./vendored/pkg" in s for s in sources)


def test_the_plain_test_environment_is_chosen_among_named_ones() -> None:
    assert choose_env(["lint", "docs", "py311", "py310"], "3.11")[0] == "py311"
    assert choose_env(["lint", "tests", "py"], "3.11")[0] == "py"
    assert choose_env(["lint", "docs"], "3.11")[0] == "py311"
    files = {"tox.ini": ("[testenv]\ndeps = base-dep\n[testenv:tests]\ndeps =\n    {[testenv]deps}\n    tests-dep\n"
                         "[testenv:lint]\ndeps = ruff\n[testenv:docs]\ndeps = sphinx\n")}
    requirements, sources = plan(files)
    assert requirements == ["base-dep", "tests-dep"]
    assert any("[testenv:tests]" in s for s in sources)


def test_tox4_toml_and_legacy_ini_in_pyproject() -> None:
    toml = ('env_list = ["3.11", "lint"]\n[env_run_base]\ndeps = ["pytest", "-r requirements-test.txt"]\n'
            'extras = ["testing"]\n[env.lint]\ndeps = ["ruff"]\n')
    files = {"tox.toml": toml, "requirements-test.txt": "hypothesis\n",
             "pyproject.toml": '[project]\nname = "p"\n[project.optional-dependencies]\ntesting = ["pyfakefs"]\n'}
    requirements, _ = plan(files)
    assert {"pytest", "hypothesis", "pyfakefs"} <= set(requirements) and "ruff" not in requirements
    legacy = ('[tool.tox]\nlegacy_tox_ini = """\n[testenv]\ndeps =\n    mock\n    cov: pytest-cov\n"""\n')
    requirements, _ = plan({"pyproject.toml": legacy})
    assert requirements == ["mock"]


def test_nox_session_dependencies_read_statically_never_run() -> None:
    noxfile = (
        "import nox, os\n"
        "os.system('touch /tmp/noxfile-was-run')\n"
        "TEST_DEPS = ['pytest-mock', 'freezegun']\n"
        "@nox.session(python=['3.10', '3.11'])\n"
        "def tests(session):\n"
        "    session.install('pytest', '-r', 'requirements/test.txt', '.[test]', *TEST_DEPS)\n"
        "    session.install('-c', 'constraints.txt', 'coverage[toml]')\n"
        "    session.run('pytest')\n"
        "@nox.session(name='lint')\n"
        "def lint(session):\n"
        "    session.install('ruff')\n"
    )
    files = {"noxfile.py": noxfile, "requirements/test.txt": "hypothesis\n",
             "pyproject.toml": '[project]\nname = "p"\n[project.optional-dependencies]\ntest = ["pyfakefs"]\n'}
    requirements, sources = plan(files)
    assert {"pytest", "hypothesis", "pytest-mock", "freezegun", "coverage[toml]", "pyfakefs"} <= set(requirements)
    assert "ruff" not in requirements and "constraints.txt" not in requirements
    assert any(s.startswith("noxfile.py session tests") for s in sources)
    assert not os.path.exists("/tmp/noxfile-was-run")


def test_a_nox_session_under_another_name_that_runs_pytest_and_a_broken_noxfile() -> None:
    noxfile = ("import nox\n@nox.session\ndef check(s):\n    s.install('attrs')\n    s.run('pytest', 'tests')\n"
               "@nox.session\ndef docs(s):\n    s.install('sphinx')\n")
    assert plan({"noxfile.py": noxfile})[0] == ["attrs"]
    assert plan({"noxfile.py": "def (:\n"})[0] == []


def test_without_requires_python_the_classifiers_choose_among_the_offered_interpreters() -> None:
    classifiers = ["Programming Language :: Python :: 3", "Programming Language :: Python :: 3.10",
                   "Programming Language :: Python :: 3.11", "Programming Language :: Python :: 3 :: Only"]
    assert choose_python(None, ("3.11", "3.13"), classifiers) == ("3.11", None)
    # requires-python wins over classifiers; classifiers naming nothing offered do not refuse
    assert choose_python(">=3.12", ("3.11", "3.13"), classifiers) == ("3.13", None)
    assert choose_python(None, ("3.11", "3.13"), ["Programming Language :: Python :: 3.8"]) == ("3.13", None)
    files = {"pyproject.toml": '[project]\nname = "p"\nclassifiers = ["Programming Language :: Python :: 3.11"]\n'}
    assert plan_environment(reader(files), sorted(files), ("3.11", "3.13")).python == "3.11"


def test_a_pin_a_deprecated_tox_ini_contradicts_is_left_out_and_named_the_first_source_wins() -> None:
    """alembic#1822: pyproject.toml's test group pins black==26.5.1, its deprecated tox.ini black==25.9.0; pip
    cannot satisfy both, so the whole environment failed and the tests were not measured."""
    pyproject = ('[project]\nname = "alembic"\ndependencies = ["SQLAlchemy>=1.4.0"]\n'
                 '[dependency-groups]\ntests = ["pytest>8,<10", "black==26.5.1", "zimports"]\n')
    tox = ("[tox]\nBLACK_VERSION = 25.9.0\n[testenv]\ndeps=pytest>4.6,<8.4\n     zimports\n"
           "     black=={[tox]BLACK_VERSION}\n     greenlet>=1\n")
    requirements, sources = plan({"pyproject.toml": pyproject, "tox.ini": tox, "tests/test_x.py": ""})
    assert "black==26.5.1" in requirements and "black==25.9.0" not in requirements
    assert "pytest>4.6,<8.4" in requirements  # a range that overlaps the other's is no contradiction
    assert "greenlet>=1" in requirements
    note = next(s for s in sources if s.startswith("pins that contradict"))
    assert "black==25.9.0 (tox.ini [testenv] deps; conflicts with black==26.5.1, kept)" in note
    # a range the earlier pin falls outside of contradicts it too; names are compared normalised
    requirements, sources = plan({"requirements-test.txt": "Foo_Bar==1.0\n", "tox.ini": "[testenv]\ndeps=foo-bar>=2\n",
                                  "test_x.py": ""})
    assert requirements == ["Foo_Bar==1.0"]
    # agreeing pins and unpinned lines are all kept
    requirements, sources = plan({"requirements-test.txt": "foo==1.0\nbar\n",
                                  "tox.ini": "[testenv]\ndeps=foo>=1\n  bar<3\n", "test_x.py": ""})
    assert requirements == ["foo==1.0", "bar", "foo>=1", "bar<3"]
    assert not any(s.startswith("pins that contradict") for s in sources)


# pydantic-settings' workflow at a190041 (its test job installs every extra; its docs examples import azure)
PYDANTIC_SETTINGS_CI = """\
name: CI
on:
  push:
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: uv sync --group linting --extra lint-only
      - run: uv run pre-commit run --all-files
  test:
    name: test py${{ matrix.python }} on ${{ matrix.os }}
    runs-on: ${{ matrix.os }}
    steps:
      - uses: astral-sh/setup-uv@v9
      - name: Install dependencies
        run: |
          uv sync --group testing --all-extras
      - name: test
        run: make test
"""
EXTRAS_PROJECT = ('[project]\nname = "p"\ndependencies = ["pydantic"]\n[project.optional-dependencies]\n'
                  'yaml = ["pyyaml>=6"]\nazure-key-vault = ["azure-keyvault-secrets>=4.8.0"]\nlint-only = ["black"]\n'
                  '[dependency-groups]\ntesting = ["pytest"]\n')


def test_the_extras_a_ci_job_that_runs_the_tests_installs_are_installed() -> None:
    files = {"pyproject.toml": EXTRAS_PROJECT, ".github/workflows/ci.yml": PYDANTIC_SETTINGS_CI, "tests/test_x.py": ""}
    requirements, sources = plan(files)
    # --all-extras in the test job: every declared extra, the lint job's own extra included (it is the project's)
    assert {"pyyaml>=6", "azure-keyvault-secrets>=4.8.0", "black"} <= set(requirements)
    assert ".github/workflows/ci.yml job test extras azure-key-vault" in sources
    assert not any("job lint" in s for s in sources)  # the lint job runs no tests: it is not read
    # without the workflow only the test group is installed and the extras are declared, left out
    left = plan_environment(reader({k: v for k, v in files.items() if not k.startswith(".github")}), sorted(files), PY)
    assert "azure-keyvault-secrets>=4.8.0" not in left.requirements
    assert "azure-keyvault-secrets>=4.8.0" in {d.requirement for d in left.left_out}


def test_named_extras_of_pip_uv_and_poetry_commands_are_read_and_nothing_else_is() -> None:
    workflow = ("jobs:\n  tests:\n    steps:\n"
                "      - run: python -m pip install -e '.[yaml]' some-tool  # comment .[lint-only]\n"
                "      - run: uv sync --extra=azure-key-vault && pytest -q\n"
                "      - run: pip install .[not-declared]\n"
                "  docs:\n    steps:\n      - run: pip install .[lint-only] && sphinx-build docs out\n")
    files = {"pyproject.toml": EXTRAS_PROJECT, ".github/workflows/tests.yaml": workflow, "tests/test_x.py": ""}
    requirements, _ = plan(files)
    assert "pyyaml>=6" in requirements and "azure-keyvault-secrets>=4.8.0" in requirements
    assert "black" not in requirements  # only in a comment and in a job that runs no tests
    assert "some-tool" not in requirements  # a workflow's own tools are not the project's test requirements
    # a workflow that is not YAML, or not a workflow, changes nothing
    for broken in ("jobs: [unclosed", "- just\n- a list\n", "jobs:\n  t:\n    steps: 3\n"):
        broken_files = {**files, ".github/workflows/tests.yaml": broken}
        assert plan(broken_files)[0] == ["setuptools>=61", "wheel", "pydantic", "pytest"]


def test_a_change_to_a_workflow_runs_the_guard_as_a_change_to_the_environment_does() -> None:
    import asyncio

    from checks.detectives.test_runner import TestRunner
    from checks.models import Case, ChangedFile, TestRunResult, TestSpec
    from checks.testpaths import is_environment_path
    from rubric.loader import load_rubric

    assert is_environment_path(".github/workflows/ci.yml") and is_environment_path(".github/workflows/t.yaml")
    assert not is_environment_path(".github/dependabot.yml") and not is_environment_path("docs/workflows/a.yml")

    class Trees:
        def __init__(self) -> None:
            self.asked: list[str] = []

        async def run_tests(self, spec: TestSpec) -> TestRunResult:
            self.asked.append(spec.tree)
            return TestRunResult(status="ran", tree=spec.tree)

    def trees(path: str) -> list[str]:
        sandbox = Trees()
        case = Case(base_sha="a" * 40, head_sha="b" * 40, diff="", test_spec=TestSpec(), head_paths=(path,),
                    files=(ChangedFile(path=path, status="modified", added_lines=(1,), content="x\n"),))
        asyncio.run(TestRunner(sandbox).investigate(case, load_rubric()))  # type: ignore[arg-type]
        return sorted(sandbox.asked)

    # a workflow that starts installing an extra changes the head's environment: the base's tests run on it too
    assert trees(".github/workflows/ci.yml") == ["base", "guard", "head"]
    assert trees("README.md") == ["base", "head"]


# cattrs' workflow and Justfile at 2026-11 (its test job runs ``just … cov``, whose recipe installs every extra)
CATTRS_CI = """\
jobs:
  tests:
    name: "Python ${{ matrix.python-version }}"
    steps:
      - uses: extractions/setup-just@v3
      - name: "Run Tox"
        run: |
          just python=${{ matrix.python-version }} covcleanup="false" cov
  lint:
    steps:
      - run: just lint
"""
CATTRS_JUSTFILE = """\
python := ""
covcleanup := "true"

lint:
\tuv run -p python3.14 --extra lint-only ruff check src/ tests bench

cov *args="-x --ff -n auto tests":
    uv run {{ if python != '' { '-p ' + python } else { '' } }} --all-extras --group test coverage run -m pytest
    {{ if covcleanup == "true" { "uv run coverage combine" } else { "" } }}

covall:
    just python=python3.10 covcleanup=false cov
"""


def test_the_recipes_a_test_job_runs_through_just_or_make_are_read_as_its_own_lines() -> None:
    files = {"pyproject.toml": EXTRAS_PROJECT, ".github/workflows/main.yml": CATTRS_CI, "Justfile": CATTRS_JUSTFILE,
             "tests/test_x.py": ""}
    requirements, sources = plan(files)
    assert {"pyyaml>=6", "azure-keyvault-secrets>=4.8.0"} <= set(requirements)
    assert ".github/workflows/main.yml job tests extras azure-key-vault" in sources, sources
    # a recipe calling another is followed one level: covall's just call reads cov's lines
    recipes = recipe_files(reader(files), sorted(files))
    assert any("--all-extras" in line for line in recipe_lines(recipes, "just covall"))
    # the lint recipe (a job that runs no tests) and a variable of the same name are not read; nor a missing recipe
    assert recipe_lines(recipes, "just python") == []
    assert recipe_lines(recipes, "just nothing-here") == []
    # make: every target named; a rule's lines are its tab-indented ones, .PHONY is no rule
    makefile = ("test: import-data\n\tpython -m pytest -q\n\nimport-data:\n\tpython scripts/fetch.py\n\n"
                ".PHONY: test import-data\n")
    make = recipe_files(reader({"Makefile": makefile}), ["Makefile"])
    assert recipe_lines(make, "make PYTEST_FLAGS=-x test") == ["python -m pytest -q"]
    assert recipe_lines(make, "make -j2 test import-data") == ["python -m pytest -q", "python scripts/fetch.py"]
    # without the Justfile the step names no extras: only the test group is installed
    bare = {k: v for k, v in files.items() if k != "Justfile"}
    assert "azure-keyvault-secrets>=4.8.0" not in plan(bare)[0]
