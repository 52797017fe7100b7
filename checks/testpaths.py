"""What counts as a test path and as test configuration — shared by the court and the sandbox.

Test files and what they load: ``test_*.py``, ``*_test.py``, ``conftest.py``, and anything under a directory
named ``test``, ``tests`` or ``testing`` (data files included: a test's expectation often lives there).
"""

from __future__ import annotations

from pathlib import PurePosixPath

TEST_DIRS = frozenset({"test", "tests", "testing"})
# pytest's own order of precedence for the file that holds its configuration, and the section it reads
PYTEST_CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
PYTEST_SECTIONS = {"pytest.ini": "", ".pytest.ini": "", "pyproject.toml": "[tool.pytest.ini_options]",
                   "tox.ini": "[pytest]", "setup.cfg": "[tool:pytest]"}


def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))):
        return True
    return any(part in TEST_DIRS for part in parts[:-1])


def is_harness_path(path: str) -> bool:
    """A test path or a file that can hold pytest's configuration."""
    return is_test_path(path) or path in PYTEST_CONFIGS
