"""Setup isolation, on the real engine: code a setup phase runs reaches the egress proxy and nothing else.

Listeners on this host (one bound to loopback, one to every address) and one in another container wait for a
connection. A repository's setup command tries each directly — through the setup network's gateway, the engine's
default bridge (``docker0``), this host's own address and the other container's address — and through the proxy.
No listener is ever reached; what was asked of the proxy, and every direct attempt, is recorded in the setup
report.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from checks.models import TestRunResult, TestSpec
from sandbox.docker_sandbox import LABEL, LABEL_OWNER, DockerSandbox, SetupOptions, _Run
from sandbox.limits import SANDBOX_UID, SandboxLimits
from sandbox.setup_network import setup_network
from tests.gitfixture import RepoBuilder
from tests.images import SANDBOX_IMAGE
from tests.sandbox.index import INDEX_HOST

IMAGE = SANDBOX_IMAGE
SIOCGIFADDR = 0x8915
# run by the setup command: each target directly (no proxy), then each through the proxy; prints one JSON line
PROBE = r"""
import json, os, socket, struct, sys, threading, urllib.request
targets = [tuple(t) for t in json.loads(sys.argv[1])]
with open("/proc/net/route") as handle:
    rows = [line.split() for line in handle.read().splitlines()[1:]]
gateways = {socket.inet_ntoa(struct.pack("<L", int(row[2], 16))) for row in rows if row[1] == "00000000"}
targets += [(gateway, port) for gateway in sorted(gateways) for port in sorted({p for _, p in targets})]
direct, proxied = {}, {}
def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=6).close()
        direct[f"{host}:{port}"] = "OPEN"
    except OSError as exc:
        direct[f"{host}:{port}"] = exc.__class__.__name__
threads = [threading.Thread(target=connect, args=t) for t in targets]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
for host, port in targets:
    try:
        urllib.request.urlopen(f"http://{host}:{port}/", timeout=10)
        proxied[f"{host}:{port}"] = "OPEN"
    except Exception as exc:
        proxied[f"{host}:{port}"] = str(getattr(exc, "code", exc.__class__.__name__))
print("PROBE " + json.dumps({"gateways": sorted(gateways), "direct": direct, "proxied": proxied}))
"""


class Listener:
    """A TCP listener on this host that counts the connections it accepts."""

    def __init__(self, address: str) -> None:
        self.sock = socket.create_server((address, 0))
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def interface_address(name: str) -> str:
    """The IPv4 address of this host's interface ``name``."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        packed = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
    return socket.inet_ntoa(packed[20:24])


def own_address() -> str:
    """This host's address on its default route (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("198.51.100.1", 9))
        return str(sock.getsockname()[0])


async def run_probe(tmp_path: Path, engine: docker.DockerClient, mark: str, source: str,
                    *arguments: str) -> tuple[DockerSandbox, TestRunResult, dict[str, Any]]:
    """Run ``source`` as a repository's setup command (with an index nothing serves), and the JSON it printed
    after ``mark``; the setup fails on purpose afterwards."""
    root = tmp_path / "repo"
    RepoBuilder(root).commit("Repo", {"probe.py": source})
    sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=120), IMAGE, client=engine,
                                     setup=SetupOptions(index_url=f"http://{INDEX_HOST}:9/simple"))
    argv = " ".join(f"'{a}'" for a in arguments)
    result = await sandbox.run_tests(TestSpec(setup_command=("sh", "-c", f"python3 probe.py {argv}; exit 3")))
    assert result.setup is not None and result.setup.status == "failed", result.reason
    found = json.loads(next(line[len(mark) + 1:] for line in result.output.splitlines()
                            if line.startswith(mark + " ")))
    return sandbox, result, found


@pytest.fixture
def other_container(docker_engine: docker.DockerClient) -> Iterator[tuple[str, int]]:
    """Another container on the engine's default bridge, listening on port 8000."""
    container = docker_engine.containers.run(IMAGE, ["python3", "-m", "http.server", "8000"], detach=True,
                                             user=f"{SANDBOX_UID}:{SANDBOX_UID}", network="bridge")
    try:
        container.reload()
        yield str(container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]), 8000
    finally:
        container.remove(force=True)


@pytest.mark.docker
async def test_setup_code_reaches_no_listener_of_the_host_or_other_containers_and_asks_are_recorded(
        tmp_path: Path, docker_engine: docker.DockerClient, other_container: tuple[str, int]) -> None:
    loopback, anywhere = Listener("127.0.0.1"), Listener("0.0.0.0")
    try:
        bridge = docker_engine.api.inspect_network("bridge")["Options"]["com.docker.network.bridge.name"]
        hosts = [interface_address(bridge), own_address()]
        targets = [[host, listener.port] for host in hosts for listener in (loopback, anywhere)]
        targets.append(list(other_container))
        sandbox, result, probe = await run_probe(tmp_path, docker_engine, "PROBE", PROBE, json.dumps(targets))
        assert result.setup is not None
        gateway_targets = {t for t in probe["direct"] if t.split(":")[0] in probe["gateways"]}
        assert probe["gateways"] and gateway_targets, probe  # the setup network's gateway was tried too
        assert len(probe["direct"]) == len(targets) + len(gateway_targets), probe
        assert "OPEN" not in probe["direct"].values(), probe
        # refused at once (the recorder answers a SYN with a RST), not left to time out, and each recorded
        assert set(probe["direct"].values()) == {"ConnectionRefusedError"}, json.dumps(probe)
        assert {f"direct tcp {t}" for t in probe["direct"]} <= set(result.setup.refused), (probe, result.setup)
        assert set(probe["proxied"].values()) == {"403"}, probe
        assert (loopback.accepted, anywhere.accepted) == (0, 0)
        # everything asked of the proxy is recorded as refused
        assert set(probe["proxied"]) <= set(result.setup.refused), (probe, result.setup.refused)
        # the proxy container and both networks were the run's, and are gone with it
        owned = {"label": f"{LABEL_OWNER}={sandbox.owner}"}
        assert docker_engine.api.containers(all=True, filters=owned) == []
        assert docker_engine.api.networks(filters=owned) == []
    finally:
        loopback.close()
        anywhere.close()


@pytest.mark.docker
def test_the_proxy_and_network_carry_the_sandbox_labels_and_go_with_the_run(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    root = tmp_path / "repo"
    RepoBuilder(root).commit("Repo", {"a.py": "x = 1\n"})
    sandbox = DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=60), IMAGE, client=docker_engine)
    run = _Run()
    owned = {"label": f"{LABEL_OWNER}={sandbox.owner}"}
    try:
        with setup_network(sandbox, run, frozenset({("pypi.org", 443)})) as network:
            containers = docker_engine.api.containers(filters=owned)
            networks = {n["Name"] for n in docker_engine.api.networks(filters=owned)}
            assert len(containers) == 2 and networks == {network.name}
            inspected = [docker_engine.api.inspect_container(c["Id"]) for c in containers]
            proxy = next(c for c in inspected if "bridge" in c["NetworkSettings"]["Networks"])
            recording = next(c for c in inspected if c is not proxy)
            # the recorder: on the setup network alone, read-only, no capability but a packet socket's
            assert set(recording["NetworkSettings"]["Networks"]) == {network.name}
            assert recording["HostConfig"]["CapAdd"] == ["CAP_NET_RAW"] or recording["HostConfig"]["CapAdd"] == [
                "NET_RAW"], recording["HostConfig"]["CapAdd"]
            assert recording["HostConfig"]["CapDrop"] == ["ALL"] and recording["HostConfig"]["ReadonlyRootfs"]
            assert recording["Config"]["Labels"][LABEL] == "1"
            assert proxy["Config"]["Labels"][LABEL] == "1"
            assert proxy["Config"]["User"] == f"{SANDBOX_UID}:{SANDBOX_UID}" and proxy["HostConfig"]["ReadonlyRootfs"]
            assert set(proxy["NetworkSettings"]["Networks"]) == {"bridge", network.name}
            options = docker_engine.api.inspect_network(network.name)
            assert options["Internal"] and options["Options"]["com.docker.network.bridge.inhibit_ipv4"] == "true"
            assert network.refused() == ()
        assert docker_engine.api.containers(all=True, filters=owned) == []
    finally:
        sandbox._remove(run)
    assert docker_engine.api.networks(filters=owned) == []


# run by the setup command: a UDP datagram (and a ping, where the kernel lets the sandbox user send one) to each
# address directly, the setup network's gateway included; how long each took to fail; one JSON line
DATAGRAMS = r"""
import json, socket, struct, sys, time
hosts = json.loads(sys.argv[1])
port = int(sys.argv[2])
with open("/proc/net/route") as handle:
    rows = [line.split() for line in handle.read().splitlines()[1:]]
hosts += sorted({socket.inet_ntoa(struct.pack("<L", int(row[2], 16))) for row in rows if row[1] == "00000000"})
udp, icmp = {}, {}
for host in hosts:
    started = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(8)
        try:
            sock.connect((host, port))
            sock.send(b"hello")
            sock.recv(100)
            udp[host] = ["ANSWERED", 0]
        except OSError as exc:
            udp[host] = [exc.__class__.__name__, round(time.monotonic() - started, 2)]
    started = time.monotonic()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP) as ping:
            ping.settimeout(8)
            ping.connect((host, 0))
            ping.send(struct.pack("!BBHHH", 8, 0, 0, 0, 1) + b"logomesh")
            ping.recv(100)
            icmp[host] = ["ANSWERED", 0]
    except PermissionError:
        icmp[host] = ["not permitted", 0]
    except OSError as exc:
        icmp[host] = [exc.__class__.__name__, round(time.monotonic() - started, 2)]
print("DATAGRAMS " + json.dumps({"udp": udp, "icmp": icmp}))
"""


@pytest.mark.docker
async def test_setup_code_sending_udp_or_a_ping_off_the_network_is_refused_at_once_and_recorded(
        tmp_path: Path, docker_engine: docker.DockerClient) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("0.0.0.0", 0))
    listener.settimeout(0.2)
    port = int(listener.getsockname()[1])
    try:
        bridge = docker_engine.api.inspect_network("bridge")["Options"]["com.docker.network.bridge.name"]
        hosts = [interface_address(bridge), own_address()]
        _, result, found = await run_probe(tmp_path, docker_engine, "DATAGRAMS", DATAGRAMS, json.dumps(hosts),
                                           str(port))
        assert result.setup is not None
        assert len(found["udp"]) > len(hosts), found  # the gateway was tried too
        # refused (ICMP port unreachable: the connected socket's recv fails) within a second, not timed out
        assert all(what == "ConnectionRefusedError" and took < 1 for what, took in found["udp"].values()), found
        assert {f"direct udp {host}:{port}" for host in found["udp"]} <= set(result.setup.refused), (
            found, result.setup.refused)
        for host, (what, took) in found["icmp"].items():  # a ping, where the sandbox user may send one
            assert what != "ANSWERED", found
            if what != "not permitted":
                assert took < 1 and f"direct icmp {host}" in result.setup.refused, (found, result.setup.refused)
        with pytest.raises(TimeoutError):
            listener.recv(100)  # nothing reached this host
    finally:
        listener.close()
