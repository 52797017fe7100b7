"""The real Docker engine and sandbox image, as the sandbox tests have them, and the four projects cloned once."""

import subprocess
from pathlib import Path

import pytest

from tests.sandbox.conftest import docker_engine

__all__ = ["docker_engine", "projects"]
FIXTURES = Path(__file__).parent / "fixtures"


def clone_bundles(bundles: Path, root: Path) -> Path:
    """Every ``*.bundle`` in ``bundles`` cloned bare into ``root``, under the bundle's name."""
    for bundle in sorted(bundles.glob("*.bundle")):
        subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(root / bundle.stem)], check=True)
    return root


@pytest.fixture(scope="session")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clone_bundles(FIXTURES, tmp_path_factory.mktemp("realworld"))
