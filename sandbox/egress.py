"""The egress proxy: the only way out of a setup container, and it leads only to the package index.

It runs as a container of its own (:mod:`sandbox.setup_network` starts this file with the sandbox image's
``python3``: standard library only), on the setup network and on the engine's default bridge. It speaks just
enough HTTP for pip: ``CONNECT host:port`` (HTTPS, tunnelled; TLS stays end to end, so the setup container needs
the CA bundle of whatever the host trusts) and absolute-URI requests (``GET http://host:port/…``, for an index on
plain HTTP). Any other destination gets ``403`` and is appended to the proxy's log file as ``refused host:port``,
so a review can say what the setup tried to reach.

Run: ``python3 egress.py PORT LOG_FILE host:port…`` (the allowed destinations, :func:`allowed_for`); it writes
``listening`` to the log once it accepts connections.
"""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

MAX_HEADER = 64 * 1024
IDLE_SECONDS = 120.0
DEFAULT_PORTS = {"http": 80, "https": 443}
READY = "listening"
REFUSED = "refused "
MAX_LOGGED = 100
CONNECT_ATTEMPTS = 3


def allowed_for(urls: Iterable[str], extra_hosts: Iterable[str] = ()) -> frozenset[tuple[str, int]]:
    """The ``(host, port)`` pairs an index URL needs; PyPI's files live on a second host."""
    pairs: set[tuple[str, int]] = set()
    for url in urls:
        parts = urlsplit(url)
        if not parts.hostname:
            continue
        port = parts.port or DEFAULT_PORTS.get(parts.scheme, 443)
        pairs.add((parts.hostname.lower(), port))
        if parts.hostname.lower() == "pypi.org":
            pairs.add(("files.pythonhosted.org", 443))
    for host in extra_hosts:
        name, _, number = host.rpartition(":") if ":" in host else (host, "", "443")
        pairs.add((name.lower(), int(number or 443)))
    return frozenset(pairs)


@dataclass
class EgressLog:
    """The refused destinations, each once (at most ``MAX_LOGGED``), appended to ``path`` as they happen."""

    path: Path
    refused: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, line: str) -> None:
        with self.lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def refuse(self, target: str) -> None:
        with self.lock:
            if target in self.refused or len(self.refused) >= MAX_LOGGED:
                return
            self.refused.add(target)
        self.write(REFUSED + target[:200])


def refused_in(log_text: str) -> tuple[str, ...]:
    """The refused destinations a proxy's log file names, sorted."""
    return tuple(sorted({line[len(REFUSED):] for line in log_text.splitlines() if line.startswith(REFUSED)}))


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(IDLE_SECONDS)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
            if len(head) > MAX_HEADER:
                return self._reply(client, 431, "header too large")
        header, _, rest = head.partition(b"\r\n\r\n")
        request_line = header.split(b"\r\n", 1)[0].decode("latin-1")
        try:
            method, target, _version = request_line.split(" ", 2)
        except ValueError:
            return self._reply(client, 400, "bad request line")
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            port = int(port_text) if port_text.isdigit() else 443
            return self._tunnel(client, host.strip("[]").lower(), port, b"", connect=True)
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            return self._reply(client, 400, "only CONNECT and absolute http:// requests are proxied")
        port = parts.port or 80
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = header.split(b"\r\n")[1:]
        kept = [line for line in lines if not line.lower().startswith((b"proxy-", b"connection:"))]
        forwarded = (f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + b"\r\n".join(kept)
                     + b"\r\nConnection: close\r\n\r\n" + rest)
        return self._tunnel(client, parts.hostname.lower(), port, forwarded, connect=False)

    def _reply(self, client: socket.socket, status: int, text: str) -> None:
        body = (text + "\n").encode()
        with contextlib.suppress(OSError):
            client.sendall(f"HTTP/1.1 {status} {text}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                           .encode() + body)

    def _tunnel(self, client: socket.socket, host: str, port: int, first: bytes, *, connect: bool) -> None:
        target = f"{host}:{port}"
        if (host, port) not in self.server.allowed:
            self.server.log.refuse(target)
            return self._reply(client, 403, f"egress to {target} is not allowed: only the package index is")
        upstream = None
        for attempt in range(CONNECT_ATTEMPTS):  # a name lookup or a connection that fails under load: again
            try:
                upstream = socket.create_connection((host, port), timeout=30)
                break
            except OSError as exc:
                if attempt + 1 == CONNECT_ATTEMPTS:
                    return self._reply(client, 502, f"cannot reach {target}: {exc.__class__.__name__}")
                time.sleep(0.5 * 2 ** attempt)
        assert upstream is not None
        with upstream:
            if connect:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if first:
                upstream.sendall(first)
            self._pump(client, upstream)

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        while True:
            ready, _, _ = select.select(list(peers), [], [], IDLE_SECONDS)
            if not ready:
                return
            for sock in ready:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                try:
                    peers[sock].sendall(data)
                except OSError:
                    return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    allowed: frozenset[tuple[str, int]]
    log: EgressLog


def main(argv: list[str]) -> int:
    """Serve on ``0.0.0.0:PORT`` until killed; see the module's docstring for the arguments."""
    port, log_path, *destinations = argv
    allowed = frozenset((host.strip("[]").lower(), int(number))
                        for host, _, number in (d.rpartition(":") for d in destinations))
    server = _Server(("0.0.0.0", int(port)), _Handler)  # noqa: S104 - its own network namespace
    server.allowed = allowed
    server.log = EgressLog(Path(log_path))
    server.log.write(READY)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
