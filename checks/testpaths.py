"""What counts as a test path and as test configuration — shared by the court and the sandbox.

Test files and what they load: ``test_*.py``, ``*_test.py``, ``conftest.py``, and anything under a directory
named ``test``, ``tests`` or ``testing`` (data files included: a test's expectation often lives there); and each
language plug-in's own (Go: ``*_test.go`` and ``testdata/``, :mod:`checks.languages.go`; JavaScript:
``*.test.js``, ``test/``, ``__tests__/``, :mod:`checks.languages.javascript`).
Environment files: the files the sandbox plans the tests' environment from (``sandbox/environment.py``; Go:
``go.mod``, ``go.sum``, ``vendor/modules.txt``; JavaScript: ``package.json``, its lock files, ``.nvmrc``).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import PurePosixPath

from checks.languages import go, javascript

TEST_DIRS = frozenset({"test", "tests", "testing"})
# pytest's own order of precedence for the file that holds its configuration (pytest 9 added pytest.toml and
# .pytest.toml first), and the section it reads: "" = the file is the configuration even when empty
PYTEST_CONFIGS = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini",
                  "setup.cfg")
PYTEST_SECTIONS = {"pytest.toml": "", ".pytest.toml": "", "pytest.ini": "", ".pytest.ini": "",
                   "pyproject.toml": "[tool.pytest]", "tox.ini": "[pytest]", "setup.cfg": "[tool:pytest]"}


def holds_pytest_config(name: str, text: str) -> bool:
    """Whether pytest would take its configuration from this file (``name`` one of :data:`PYTEST_CONFIGS`).

    ``pyproject.toml`` counts with pytest 9's native ``[tool.pytest]`` table as well as with
    ``[tool.pytest.ini_options]`` (the document is parsed, so dotted keys and inline tables count too; a file that
    does not parse is read for the table headers); the ini files count by their section header.
    """
    section = PYTEST_SECTIONS.get(name)
    if section is None:
        return False
    if not section:
        return True
    if name == "pyproject.toml":
        try:
            tool = tomllib.loads(text).get("tool")
        except tomllib.TOMLDecodeError:
            return re.search(r"^\s*\[\s*tool\s*\.\s*pytest\s*[\].]", text, re.MULTILINE) is not None
        return isinstance(tool, dict) and isinstance(tool.get("pytest"), dict)
    return re.search(r"^\s*" + re.escape(section), text, re.MULTILINE) is not None


def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))):
        return True
    return any(part in TEST_DIRS for part in parts[:-1]) or go.is_test_path(path) or javascript.is_test_path(path)


LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock", "Pipfile")
ENVIRONMENT_FILES = frozenset({"pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "noxfile.py", *LOCK_FILES})
REQUIREMENTS_FILE = re.compile(r"(requirements[^/]*|requirements/[^/]+)\.(txt|in)")
WORKFLOW_FILE = re.compile(r"\.github/workflows/[^/]+\.ya?ml")  # the extras its test jobs install are read


def is_environment_path(path: str) -> bool:
    """A file the tests' environment is planned from: its requirements, its build and tool configuration."""
    return (path in ENVIRONMENT_FILES or REQUIREMENTS_FILE.fullmatch(path) is not None
            or WORKFLOW_FILE.fullmatch(path) is not None
            or go.is_environment_path(path) or javascript.is_environment_path(path))


def is_harness_path(path: str) -> bool:
    """A test path or a file that can hold a test runner's configuration (pytest's; Jest's, Vitest's, Mocha's)."""
    return is_test_path(path) or path in PYTEST_CONFIGS or javascript.is_harness_path(path)
