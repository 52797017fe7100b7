"""A fake provider's HTTP server: uvicorn on 127.0.0.1 (a free port) in a background thread."""

from __future__ import annotations

import socket
import threading

import uvicorn
from starlette.applications import Starlette


class LoopbackServer:
    """Serves ``app`` on a loopback port chosen by the kernel; ``start`` returns once it accepts connections."""

    name = "fake"

    def __init__(self, app: Starlette) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> None:
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the {self.name} server did not start")
            threading.Event().wait(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
