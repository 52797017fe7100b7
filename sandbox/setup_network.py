"""The setup network: a setup container on it reaches the egress proxy and nothing else.

:func:`setup_network` creates, on whichever engine the sandbox uses (local socket, compose's dind, a Kubernetes
sidecar, ``DOCKER_HOST=tcp://…``: the same calls everywhere), two things labelled as sandbox objects:

1. a bridge network created ``internal`` and with ``com.docker.network.bridge.inhibit_ipv4``: the engine gives its
   bridge no address, so the gateway a container on it routes through does not exist. Nothing answers there — not
   the engine's host, not its other bridges (``docker0``), not the host's own addresses, not other containers; an
   attempt fails in the container (no route, or no answer to its ARP request) and no packet leaves the network.
2. the egress proxy (:mod:`sandbox.egress`, run by the sandbox image's ``python3``; the file's source is its
   command line, so nothing is copied into a container) in a container of its own on the engine's default bridge,
   connected to the setup network too: the one address a setup container can reach. It runs as the sandbox user
   without capabilities, read-only, with IP forwarding off, and writes the destinations it refuses to a log file
   that :meth:`SetupNetwork.refused` reads back. It resolves ``host.docker.internal`` to the engine's host, so an
   index on that host can be admitted by that name.

Leaving the context removes the proxy container; the network goes with the run's other objects (the setup
container is still attached to it until committed). Both are in the run's lists, so a crash leaves them to the
run's cleanup or the janitor. Errors: :class:`~sandbox.errors.SandboxError`.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from docker.errors import DockerException

from sandbox import egress
from sandbox.errors import SandboxError
from sandbox.limits import SANDBOX_UID

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Run

OUTBOUND_NETWORK = "bridge"  # the engine's default bridge: the proxy's way out
PROXY_PORT = 3128
PROXY_LOG = "/tmp/egress.log"  # noqa: S108 - the proxy container's own tmpfs
READY_SECONDS = 20.0
SOURCE = Path(egress.__file__).read_text(encoding="utf-8")


@dataclass(frozen=True)
class SetupNetwork:
    """The network a setup container joins, and the proxy URL it must use."""

    name: str
    proxy_url: str
    _api: Any
    _proxy: str

    def refused(self) -> tuple[str, ...]:
        """The destinations the proxy refused so far (``host:port``, sorted)."""
        return egress.refused_in(_read_log(self._api, self._proxy))


def plain_http_index(index_url: str) -> dict[str, str]:
    """pip's setting that admits a plain-HTTP index. pip refuses plain HTTP except on loopback, and the index is
    never on a setup container's loopback (it is reached through the proxy), so an ``http://`` index the
    operator configured is named trusted; an ``https://`` one needs nothing."""
    parts = urlsplit(index_url)
    if parts.scheme != "http" or not parts.hostname:
        return {}
    return {"PIP_TRUSTED_HOST": parts.hostname + (f":{parts.port}" if parts.port else "")}


def _read_log(api: Any, container: str) -> str:
    try:
        exec_id = api.exec_create(container, ["cat", PROXY_LOG], user=f"{SANDBOX_UID}:{SANDBOX_UID}")["Id"]
        output = api.exec_start(exec_id)
    except DockerException as exc:
        raise SandboxError(f"the setup proxy's log could not be read: {exc}") from exc
    return bytes(output).decode("utf-8", "replace")


@contextlib.contextmanager
def setup_network(sandbox: DockerSandbox, run: _Run, allowed: frozenset[tuple[str, int]]) -> Iterator[SetupNetwork]:
    """A setup network whose only reachable address is a proxy letting through ``allowed`` (host, port) pairs."""
    api = sandbox.client.api
    name = f"logomesh-setup-{uuid.uuid4().hex[:16]}"
    try:
        network = api.create_network(name, driver="bridge", internal=True, labels=sandbox._labels(),
                                     options={"com.docker.network.bridge.inhibit_ipv4": "true"})
        run.networks.append(network["Id"])
    except DockerException as exc:
        raise SandboxError(f"the setup network could not be created: {exc}") from exc
    proxy = _start_proxy(sandbox, run, name, allowed)
    try:
        yield SetupNetwork(name=name, proxy_url=f"http://{_address(api, proxy, name)}:{PROXY_PORT}", _api=api,
                           _proxy=proxy)
    finally:
        with contextlib.suppress(DockerException):
            api.remove_container(proxy, force=True)


def _start_proxy(sandbox: DockerSandbox, run: _Run, network: str, allowed: frozenset[tuple[str, int]]) -> str:
    api = sandbox.client.api
    host_config = sandbox._host_config(network=OUTBOUND_NETWORK, read_only=True, mounts=[])
    host_config["ExtraHosts"] = ["host.docker.internal:host-gateway"]
    host_config["Sysctls"] = {"net.ipv4.ip_forward": "0"}
    destinations = [f"{host}:{port}" for host, port in sorted(allowed)]
    try:
        proxy = str(api.create_container(
            sandbox.image, command=["python3", "-I", "-c", SOURCE, str(PROXY_PORT), PROXY_LOG, *destinations],
            user=f"{SANDBOX_UID}:{SANDBOX_UID}", working_dir="/", labels=sandbox._labels(),
            host_config=host_config)["Id"])
        run.helpers.append(proxy)
        api.connect_container_to_network(proxy, network)
        api.start(proxy)
    except DockerException as exc:
        raise SandboxError(f"the setup proxy could not start: {exc}") from exc
    deadline = time.monotonic() + READY_SECONDS
    while egress.READY not in _ready_text(api, proxy):
        if time.monotonic() > deadline:
            with contextlib.suppress(DockerException):
                api.remove_container(proxy, force=True)
            raise SandboxError(f"the setup proxy did not listen within {READY_SECONDS:g} s")
        time.sleep(0.1)
    return proxy


def _ready_text(api: Any, proxy: str) -> str:
    try:
        return _read_log(api, proxy)
    except SandboxError:
        return ""  # not started yet, or exited: the deadline decides


def _address(api: Any, container: str, network: str) -> str:
    try:
        address = api.inspect_container(container)["NetworkSettings"]["Networks"][network]["IPAddress"]
    except (DockerException, KeyError, TypeError) as exc:
        raise SandboxError(f"the setup proxy has no address on {network}: {exc}") from exc
    if not address:
        raise SandboxError(f"the setup proxy has no address on {network}")
    return str(address)
