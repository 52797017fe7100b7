"""LOGOMESH_SANDBOX_RUNTIME: validated by the settings, checked against the real engine's registered runtimes at
start-up (not ready, the fix named), and passed to every sandbox container's ``runtime``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from app.settings import Settings, SettingsError, load_settings
from app.worker.startup import StartupError, start_up
from sandbox.docker_sandbox import DockerSandbox
from sandbox.errors import SandboxUnavailable
from sandbox.limits import SandboxLimits
from sandbox.runtime import SANDBOX_RUNTIMES, registered_runtimes, require_runtime, runtime_missing
from tests.images import SANDBOX_IMAGE
from tests.ops.test_startup import _settings as startup_settings

IMAGE = SANDBOX_IMAGE


def _settings(prefix: str, **overrides: object) -> Settings:
    return startup_settings(prefix, **{"sandbox": "docker", **overrides})


@pytest.fixture
def client() -> Iterator[docker.DockerClient]:
    c = docker.from_env()
    yield c
    c.close()


@pytest.fixture
def unregistered(client: docker.DockerClient) -> str:
    """An allowed runtime this engine does not have (gVisor, Kata and sysbox are not installed here)."""
    known = registered_runtimes(client.info())
    missing = [r for r in SANDBOX_RUNTIMES if r not in known]
    if not missing:
        pytest.skip("every allowed runtime is registered with this engine")
    return missing[0]


def test_an_unknown_runtime_is_a_settings_error_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="LOGOMESH_SANDBOX_RUNTIME") as caught:
        load_settings(home=tmp_path / ".lm", sandbox_runtime="youki")
    assert "runsc" in str(caught.value), "the message lists what is allowed"
    assert load_settings(home=tmp_path / ".lm").sandbox_runtime == "runc"
    for runtime in SANDBOX_RUNTIMES:
        assert load_settings(home=tmp_path / ".lm", sandbox_runtime=runtime).sandbox_runtime == runtime


def test_the_engine_is_asked_which_runtimes_it_has(client: docker.DockerClient, unregistered: str) -> None:
    info = client.info()
    assert "runc" in registered_runtimes(info)
    assert runtime_missing(info, "runc") is None
    require_runtime(client, "runc")
    reason = runtime_missing(info, unregistered)
    assert reason is not None and repr(unregistered) in reason and "registered: " in reason and "runc" in reason
    assert "daemon.json" in reason and "LOGOMESH_SANDBOX_RUNTIME=runc" in reason
    with pytest.raises(SandboxUnavailable, match=unregistered):
        require_runtime(client, unregistered)


async def test_a_runtime_the_engine_lacks_keeps_the_worker_from_taking_reviews(
        client: docker.DockerClient, unregistered: str, prefix: str) -> None:
    with pytest.raises(StartupError, match=f"no runtime '{unregistered}'"):
        await start_up(_settings(prefix, sandbox_runtime=unregistered))
    report = await start_up(_settings(prefix, sandbox="auto", sandbox_runtime=unregistered))
    assert report.sandbox_missing is not None and "daemon.json" in report.sandbox_missing


def test_every_sandbox_container_gets_the_runtime(client: docker.DockerClient, unregistered: str,
                                                  tmp_path: Path) -> None:
    """The setting reaches the engine: runc is what the container runs under, and a runtime the engine lacks is
    refused by the engine itself when the sandbox creates its container."""
    (tmp_path / "a.py").write_text("x = 1\n")
    created: list[str] = []
    try:
        for runtime in ("runc", unregistered):
            sandbox = DockerSandbox.for_tree(tmp_path, SandboxLimits(), IMAGE, client=client, runtime=runtime)
            assert sandbox._host_config(network=None, read_only=True, mounts=[])["Runtime"] == runtime
            if runtime == "runc":
                container = sandbox._create(None, IMAGE, network=None, read_only=True, mounts=[])  # type: ignore[arg-type]
                created.append(container)
                assert client.api.inspect_container(container)["HostConfig"]["Runtime"] == "runc"
            else:
                with pytest.raises(docker.errors.APIError, match=unregistered):
                    created.append(sandbox._create(None, IMAGE, network=None, read_only=True,  # type: ignore[arg-type]
                                                   mounts=[]))
    finally:
        for container in created:
            with contextlib.suppress(docker.errors.NotFound):
                client.api.remove_container(container, force=True)
