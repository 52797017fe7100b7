"""The setup network: a setup container on it reaches the egress proxy and nothing else, and what else it tries
is recorded.

:func:`setup_network` creates, on whichever engine the sandbox uses (local socket, compose's dind, a Kubernetes
sidecar, ``DOCKER_HOST=tcp://…``: the same calls everywhere), two things labelled as sandbox objects:

1. a bridge network created ``internal`` and with ``com.docker.network.bridge.inhibit_ipv4``: the engine gives its
   bridge no address, so the gateway a container on it routes through does not exist. Nothing answers there — not
   the engine's host, not its other bridges (``docker0``), not the host's own addresses, not other containers; an
   attempt fails (the recorders below refuse it) and no packet leaves the network.
2. the egress proxy (:mod:`sandbox.egress`, run by the sandbox image's ``python3``; the file's source is its
   command line, so nothing is copied into a container) in a container of its own on the engine's default bridge,
   connected to the setup network too: the one address a setup container can reach. It runs as the sandbox user
   without capabilities, read-only, with IP forwarding off, and writes the destinations it refuses to a log file
   that :meth:`SetupNetwork.refused` reads back. It resolves ``host.docker.internal`` to the engine's host, so an
   index on that host can be admitted by that name.

3. the recorders (:mod:`sandbox.recorder`, ``CAP_NET_RAW`` only): one on the setup network alone, claiming the
   gateway's address, and one joined to each setup container's network namespace (:meth:`SetupNetwork.watch`):
   a direct attempt (not through the proxy) is refused at once and recorded; :meth:`SetupNetwork.refused` names
   it as ``direct tcp host:port`` beside what the proxy refused.

Leaving the context removes the proxy and recorder containers; the network goes with the run's other objects (the setup
container is still attached to it until committed). Both are in the run's lists, so a crash leaves them to the
run's cleanup or the janitor. Errors: :class:`~sandbox.errors.SandboxError`.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from docker.errors import DockerException

from sandbox import egress, recorder
from sandbox.errors import SandboxError
from sandbox.limits import SANDBOX_UID

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Run

OUTBOUND_NETWORK = "bridge"  # the engine's default bridge: the proxy's way out
PROXY_PORT = 3128
PROXY_LOG = "/tmp/egress.log"  # noqa: S108 - the proxy container's own tmpfs
READY_SECONDS = 20.0
SOURCE = Path(egress.__file__).read_text(encoding="utf-8")
RECORDER_LOG = "/tmp/recorder.log"  # noqa: S108 - the recorder container's own tmpfs
RECORDER_SOURCE = Path(recorder.__file__).read_text(encoding="utf-8")


@dataclass(frozen=True)
class SetupNetwork:
    """The network a setup container joins, and the proxy URL it must use."""

    name: str
    proxy_url: str
    _api: Any
    _proxy: str

    _recorders: list[str] = field(default_factory=list)
    _sandbox: DockerSandbox | None = None
    _run: _Run | None = None
    _watching: dict[str, str] = field(default_factory=dict)  # setup container -> the recorder in its namespace
    _kept: set[str] = field(default_factory=set)  # what the recorders of containers no longer watched saw

    def refused(self) -> tuple[str, ...]:
        """The destinations refused so far, sorted: asked of the proxy (``host:port``) and attempted directly
        (``direct tcp|udp|icmp host[:port]``, recorded by :mod:`sandbox.recorder`)."""
        asked = set(egress.refused_in(_read_log(self._api, self._proxy))) | self._kept
        for recording in self._recorders:
            asked |= {f"direct {d}" for d in recorder.attempts_in(_read_log(self._api, recording, RECORDER_LOG))}
        return tuple(sorted(asked))

    def watch(self, container: str) -> None:
        """Record (and refuse at once) what ``container``, a setup container on this network, sends anywhere but
        to the proxy: a recorder joined to its network namespace (:mod:`sandbox.recorder`, ``inside``)."""
        if self._sandbox is None or self._run is None:
            raise SandboxError("this setup network cannot watch containers")
        proxy_ip = self.proxy_url.rsplit("/", 1)[-1].rsplit(":", 1)[0]
        recording = _start_recorder(self._sandbox, self._run, f"container:{container}",
                                    ["inside", "eth0", proxy_ip, RECORDER_LOG, str(PROXY_PORT)])
        self._recorders.append(recording)
        self._watching[container] = recording

    def unwatch(self, container: str) -> None:
        """Stop watching ``container`` before it is removed (its recorder goes with its network namespace): what
        the recorder saw is kept for :meth:`refused`."""
        recording = self._watching.pop(container, None)
        if recording is None:
            return
        self._kept.update(f"direct {d}" for d in recorder.attempts_in(_read_log(self._api, recording, RECORDER_LOG)))
        self._recorders.remove(recording)
        with contextlib.suppress(DockerException):
            self._api.remove_container(recording, force=True)


def plain_http_index(index_url: str) -> dict[str, str]:
    """pip's setting that admits a plain-HTTP index. pip refuses plain HTTP except on loopback, and the index is
    never on a setup container's loopback (it is reached through the proxy), so an ``http://`` index the
    operator configured is named trusted; an ``https://`` one needs nothing."""
    parts = urlsplit(index_url)
    if parts.scheme != "http" or not parts.hostname:
        return {}
    return {"PIP_TRUSTED_HOST": parts.hostname + (f":{parts.port}" if parts.port else "")}


def _read_log(api: Any, container: str, path: str = PROXY_LOG) -> str:
    try:
        exec_id = api.exec_create(container, ["cat", path], user=f"{SANDBOX_UID}:{SANDBOX_UID}")["Id"]
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
    made: SetupNetwork | None = None
    try:
        made = SetupNetwork(name=name, proxy_url=f"http://{_address(api, proxy, name)}:{PROXY_PORT}", _api=api,
                               _proxy=proxy, _sandbox=sandbox, _run=run)
        made._recorders.append(_start_recorder(sandbox, run, name,
                                               ["network", "eth0", _gateway(api, name), RECORDER_LOG]))
        yield made
    finally:
        for helper in [proxy, *(made._recorders if made is not None else [])]:
            with contextlib.suppress(DockerException):
                api.remove_container(helper, force=True)


def _gateway(api: Any, network: str) -> str:
    try:
        return str(api.inspect_network(network)["IPAM"]["Config"][0]["Gateway"])
    except (DockerException, KeyError, IndexError, TypeError) as exc:
        raise SandboxError(f"the setup network {network} has no gateway address: {exc}") from exc


def _start_recorder(sandbox: DockerSandbox, run: _Run, network: str, arguments: list[str]) -> str:
    """A recorder (:mod:`sandbox.recorder`) on the setup network alone, or in a setup container's network namespace
    (``network`` ``container:<id>``): root in its container, without any capability but ``CAP_NET_RAW``,
    read-only; on the network with IP forwarding off."""
    api = sandbox.client.api
    host_config = sandbox._host_config(network=network, read_only=True, mounts=[])
    host_config["CapAdd"] = ["NET_RAW"]
    if not network.startswith("container:"):
        host_config["Sysctls"] = {"net.ipv4.ip_forward": "0"}
    try:
        recorded = str(api.create_container(
            sandbox.image, command=["python3", "-I", "-c", RECORDER_SOURCE, *arguments],
            user="0:0", working_dir="/", labels=sandbox._labels(), host_config=host_config)["Id"])
        run.helpers.append(recorded)
        api.start(recorded)
    except DockerException as exc:
        raise SandboxError(f"the setup network's recorder could not start: {exc}") from exc
    _wait_ready(api, recorded, RECORDER_LOG, recorder.READY, "the setup network's recorder")
    return recorded


def _wait_ready(api: Any, container: str, path: str, mark: str, what: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while mark not in _ready_text(api, container, path):
        if time.monotonic() > deadline:
            with contextlib.suppress(DockerException):
                api.remove_container(container, force=True)
            raise SandboxError(f"{what} did not listen within {READY_SECONDS:g} s")
        time.sleep(0.1)


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
    _wait_ready(api, proxy, PROXY_LOG, egress.READY, "the setup proxy")
    return proxy


def _ready_text(api: Any, container: str, path: str) -> str:
    try:
        return _read_log(api, container, path)
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
