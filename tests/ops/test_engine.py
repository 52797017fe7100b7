"""A worker whose Docker engine starts after it and with an empty image store (a Kubernetes dind sidecar): it waits
for the engine, loads or refuses the sandbox image by digest (sandbox/engine.py, app/worker/startup.py). A real
Docker engine stands in for the sidecar, reached through a unix socket that appears only after a delay."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from socketserver import ThreadingUnixStreamServer

import docker
import pytest

import sandbox.engine as engine_module
from app.settings import Settings
from app.worker.startup import start_up
from sandbox.engine import provision_image, wait_for_engine
from sandbox.errors import SandboxUnavailable
from tests.images import SANDBOX_IMAGE
from tests.ops.conftest import REDIS_URL

IMAGE = SANDBOX_IMAGE
ENGINE_SOCKET = "/var/run/docker.sock"


class LateEngine:
    """A unix socket that forwards to the real engine, listening only ``delay`` seconds after start()."""

    def __init__(self, path: Path, delay: float) -> None:
        self.path, self.delay = path, delay
        self.server: socket.socket | None = None
        self.stopped = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        time.sleep(self.delay)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen(16)
        self.server.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(ENGINE_SOCKET)
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()
        self.server.close()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self.stopped.set()


@pytest.fixture
def engine() -> Iterator[docker.DockerClient]:
    if not os.path.exists(ENGINE_SOCKET):
        pytest.skip("no local Docker engine socket")
    client = docker.DockerClient(base_url=f"unix://{ENGINE_SOCKET}", timeout=engine_module.TRANSFER_SECONDS)
    yield client  # a `docker save` of the sandbox image on a busy machine takes longer than an API call
    client.close()


def _tiny_image(client: docker.DockerClient, tag: str) -> str:
    """An image of one file, imported from a tar (no registry needed); its id."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = tag.encode()
        info = tarfile.TarInfo("marker")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repository, _, version = tag.partition(":")
    client.api.import_image_from_data(buffer.getvalue(), repository=repository, tag=version)
    return str(client.images.get(tag).id)


def _save(client: docker.DockerClient, tag: str, path: Path) -> None:
    with path.open("wb") as out:
        for chunk in client.api.get_image(tag):  # `docker save TAG`: the archive names the tag asked for
            out.write(chunk)


def test_the_worker_waits_for_a_late_engine_and_says_so(tmp_path: Path, engine: docker.DockerClient,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    late = LateEngine(tmp_path / "dind.sock", delay=2.0)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{late.path}")
    waits: list[str] = []
    late.start()
    try:
        client = wait_for_engine(30, poll=0.2, on_wait=waits.append)
        assert client.ping() and len(waits) == 1  # told once, not once per poll
        client.close()
    finally:
        late.stop()


def test_an_engine_that_never_comes_is_named_after_the_bounded_wait(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'never.sock'}")
    began = time.monotonic()
    with pytest.raises(SandboxUnavailable, match="no Docker engine answered within 1s"):
        wait_for_engine(1, poll=0.2)
    assert time.monotonic() - began < 30  # bounded: it gives up, it does not hang


def test_an_archive_is_loaded_when_its_digest_matches_and_refused_when_not(
        tmp_path: Path, engine: docker.DockerClient) -> None:
    tag = f"logomesh-provision-test:{uuid.uuid4().hex[:10]}"
    other = f"logomesh-provision-other:{uuid.uuid4().hex[:10]}"
    image_id = _tiny_image(engine, tag)
    other_id = _tiny_image(engine, other)
    archive, swapped = tmp_path / "sandbox.tar", tmp_path / "swapped.tar"
    try:
        _save(engine, tag, archive)
        engine.images.remove(tag, force=True)
        got = provision_image(engine, tag, archive=archive, digest=image_id)
        assert (got.how, got.image_id) == ("loaded", image_id)
        assert provision_image(engine, tag, digest=image_id).how == "present"

        # an archive whose image is not the configured one: refused, and not left in the store
        engine.images.remove(tag, force=True)
        engine.api.tag(other, tag.split(":")[0], tag.split(":")[1])
        _save(engine, tag, swapped)
        engine.images.remove(tag)
        engine.images.remove(other, force=True)
        with pytest.raises(SandboxUnavailable, match="not the configured digest"):
            provision_image(engine, tag, archive=swapped, digest=image_id)
        with pytest.raises(docker.errors.ImageNotFound):
            engine.images.get(other_id)
        with pytest.raises(SandboxUnavailable, match="must start with sha256:"):
            provision_image(engine, tag, archive=archive, digest="md5:abc")
    finally:
        for name in (tag, other):
            with contextlib.suppress(docker.errors.DockerException):
                engine.images.remove(name, force=True)


def test_a_present_image_of_an_older_layout_is_replaced_from_the_archive(tmp_path: Path,
                                                                          engine: docker.DockerClient) -> None:
    """An engine's volume kept across an upgrade holds the sandbox image of the previous layout under the same tag:
    the worker loads the archive's image over it (and drops the old one), rather than refusing to start forever."""
    tag = f"logomesh-provision-test:{uuid.uuid4().hex[:10]}"
    newer = f"logomesh-provision-newer:{uuid.uuid4().hex[:10]}"
    old_id = _tiny_image(engine, tag)
    new_id = _tiny_image(engine, newer)
    archive = tmp_path / "sandbox.tar"
    engine.api.tag(newer, *tag.split(":"), force=True)
    _save(engine, tag, archive)  # the archive names the tag and holds the new image
    engine.images.remove(tag)
    engine.images.remove(newer, force=True)
    engine.api.tag(old_id, *tag.split(":"))  # the store: the old image under the tag

    def outdated(image: docker.models.images.Image) -> str | None:
        return None if image.id == new_id else "has an older layout (version 5, need 6)"

    try:
        got = provision_image(engine, tag, archive=archive, outdated=outdated, digest=new_id)
        assert (got.how, got.image_id) == ("replaced, loaded", new_id)
        with pytest.raises(docker.errors.ImageNotFound):
            engine.images.get(old_id)
        assert provision_image(engine, tag, archive=archive, outdated=outdated).how == "present"

        # an archive that holds only the old layout too: named, not run
        with pytest.raises(SandboxUnavailable, match=r"older layout \(version 5, need 6\), and the archive .* offers "
                                                     "no current one"):
            provision_image(engine, tag, archive=archive, outdated=lambda image: "has an older layout "
                                                                                   "(version 5, need 6)")
        # no archive and no registry: the message says the present image is stale, not missing
        with pytest.raises(SandboxUnavailable, match=r"has an older layout \(version 5, need 6\) and could not be "
                                                     "pulled"):
            provision_image(engine, tag, outdated=lambda image: "has an older layout (version 5, need 6)")
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            engine.images.remove(tag, force=True)


class _StalledEngine(BaseHTTPRequestHandler):
    """An engine that has no image and, asked to load or pull one, reads the request and never answers."""

    protocol_version = "HTTP/1.1"
    stall = threading.Event()

    def address_string(self) -> str:  # a unix socket has no (host, port)
        return "engine"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b'{"message": "No such image"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.stall.wait(10)
        self.close_connection = True


def test_an_engine_that_stops_answering_during_a_load_is_named_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    how = "archive"  # a pull streams with no read timeout in docker-py: an engine that stalls one is not bounded
    path = tmp_path / "stalled.sock"
    class Stalled(_StalledEngine):  # a stall of this test's own
        stall = threading.Event()

    server = ThreadingUnixStreamServer(str(path), Stalled)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(engine_module, "TRANSFER_SECONDS", 1)
    archive = None
    if how == "archive":
        archive = tmp_path / "sandbox.tar"
        archive.write_bytes(b"\0" * 4096)
    client = docker.DockerClient(base_url=f"unix://{path}", version="1.41", timeout=1)
    try:
        with pytest.raises(SandboxUnavailable) as caught:
            provision_image(client, "logomesh-sandbox:stalled", archive=archive)
    finally:
        client.close()
        Stalled.stall.set()
        server.shutdown()
        server.server_close()
    message = str(caught.value)
    if how == "archive":
        assert f"the engine stopped answering while it loaded {archive} (ReadTimeout; a load is given 1 s)" in message
    else:
        assert "could not be pulled (ReadTimeout)" in message
    assert client.api.timeout == 1  # the longer wait was for the transfer alone


def test_a_missing_image_with_no_archive_and_no_registry_says_how_to_get_it(engine: docker.DockerClient) -> None:
    with pytest.raises(SandboxUnavailable, match=r"could not be pulled.*LOGOMESH_SANDBOX_IMAGE_ARCHIVE"):
        provision_image(engine, f"logomesh-nowhere-{uuid.uuid4().hex[:8]}:1")


async def test_a_kubernetes_style_start_up_waits_loads_and_is_ready(tmp_path: Path, engine: docker.DockerClient,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """LOGOMESH_SANDBOX=docker, the engine a late sidecar, the sandbox image only in an archive: the worker starts
    with the image loaded and verified, where it used to exit 3."""
    try:
        engine.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{IMAGE} is missing: scripts/setup.sh builds it")
    tag = f"logomesh-sandbox-startup:{uuid.uuid4().hex[:10]}"
    engine.api.tag(IMAGE, *tag.split(":"))
    archive = tmp_path / "sandbox.tar"
    try:
        _save(engine, tag, archive)
        digest = str(engine.images.get(tag).id)
        engine.images.remove(tag)  # untag: the store no longer has it under this name
        late = LateEngine(tmp_path / "dind.sock", delay=2.0)
        monkeypatch.setenv("DOCKER_HOST", f"unix://{late.path}")
        prefix = f"logomesh-engine:{uuid.uuid4().hex[:8]}:"
        settings = Settings(_env_file=None, redis_url=REDIS_URL, redis_prefix=prefix, queue_name=prefix + "q",
                            sandbox="docker", embedding="off", sandbox_image=tag, sandbox_image_archive=archive,
                            sandbox_image_digest=digest, docker_wait_seconds=60)
        late.start()
        try:
            report = await start_up(settings)
        finally:
            late.stop()
        assert report.sandbox_missing is None
        assert engine.images.get(tag).id == digest
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            engine.images.remove(tag)
