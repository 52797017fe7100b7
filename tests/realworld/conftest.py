"""The real Docker engine and sandbox image, as the sandbox tests have them."""

from tests.sandbox.conftest import docker_engine

__all__ = ["docker_engine"]
