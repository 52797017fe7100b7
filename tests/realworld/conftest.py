"""The real Docker engine and sandbox image, as the sandbox tests have them, and the four projects cloned once."""

import subprocess
from pathlib import Path

import pytest

from tests.sandbox.conftest import docker_engine

__all__ = ["docker_engine", "projects"]
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("realworld")
    for bundle in sorted(FIXTURES.glob("*.bundle")):
        subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(root / bundle.stem)], check=True)
    return root
