"""EgressProxy: the only way out of a setup container, and it leads only to the package index.

The setup phase runs on a Docker network created ``internal`` (no route off the host). The one address it can
reach is the network's gateway on this host, where this proxy listens. It speaks just enough HTTP for pip:
``CONNECT host:port`` (HTTPS, tunnelled; TLS stays end to end, so the container needs the CA bundle of whatever
the host trusts) and absolute-URI requests (``GET http://host:port/…``, for an index on plain HTTP). Any other
destination gets ``403`` and is recorded, so a review can say what the setup tried to reach.

Errors: :class:`~sandbox.errors.SandboxError` when the proxy cannot listen.
"""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sandbox.errors import SandboxError

MAX_HEADER = 64 * 1024
IDLE_SECONDS = 120.0
DEFAULT_PORTS = {"http": 80, "https": 443}


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
    allowed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, target: str, ok: bool) -> None:
        with self.lock:
            bucket = self.allowed if ok else self.refused
            if target not in bucket and len(bucket) < 100:
                bucket.append(target)


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
            self.server.log.add(target, False)
            return self._reply(client, 403, f"egress to {target} is not allowed: only the package index is")
        try:
            upstream = socket.create_connection((host, port), timeout=30)
        except OSError as exc:
            self.server.log.add(target, True)
            return self._reply(client, 502, f"cannot reach {target}: {exc.__class__.__name__}")
        self.server.log.add(target, True)
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


class EgressProxy:
    """A proxy on ``bind`` that lets through only ``allowed`` destinations; a context manager."""

    def __init__(self, bind: str, allowed: frozenset[tuple[str, int]]) -> None:
        try:
            self._server = _Server((bind, 0), _Handler)
        except OSError as exc:
            raise SandboxError(f"the setup proxy cannot listen on {bind}: {exc}") from exc
        self._server.allowed = allowed
        self._server.log = EgressLog()
        self._thread = threading.Thread(target=self._server.serve_forever, name="logomesh-egress", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def log(self) -> EgressLog:
        return self._server.log

    def __enter__(self) -> EgressProxy:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
