"""A real PEP 503 package index served over HTTP on this host, holding wheels written here: by hand for tiny
fixtures, or packed from a package this Python has installed."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import importlib.metadata
import socketserver
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

INDEX_HOST = "host.docker.internal"


def write_wheel(dest: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A valid pure-Python wheel (PEP 427) of ``files`` (path inside the wheel → content)."""
    dist = f"{name.replace('-', '_')}-{version}"
    wheel = dest / f"{dist}-py3-none-any.whl"
    files = dict(files)
    files[f"{dist}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{dist}.dist-info/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                        b"Tag: py3-none-any\n")
    records = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append(f"{path},sha256={digest},{len(data)}")
    records.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(records) + "\n").encode()
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def full_wheel(dest: Path, distribution: str) -> Path:
    """An installed distribution packed whole (modules, data, ``.pth`` files, entry points) as a wheel."""
    dist = importlib.metadata.distribution(distribution)
    skip = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "METADATA", "WHEEL")
    files = {str(f): f.read_binary() for f in dist.files or ()
             if "__pycache__" not in str(f) and not str(f).startswith("..")
             and not (".dist-info/" in str(f) and str(f).rsplit("/", 1)[-1] in skip)
             and Path(str(f.locate())).is_file()}
    return write_wheel(dest, distribution, dist.version, files)


def vendored_wheel(dest: Path, name: str) -> Path:
    """The release of ``name`` that this Python's setuptools vendors, packed as a wheel."""
    import setuptools

    vendor = Path(setuptools.__file__).parent / "_vendor"
    info = next(vendor.glob(f"{name}-*.dist-info"))
    files = {str(path.relative_to(vendor)): path.read_bytes() for path in sorted((vendor / name).rglob("*"))
             if path.is_file() and "__pycache__" not in path.parts}
    return write_wheel(dest, name, info.name[len(name) + 1:-len(".dist-info")], files)


def build_wheel(dest: Path, name: str, version: str, source: str) -> Path:
    """A one-module wheel: ``<name>/__init__.py`` holding ``source``."""
    return write_wheel(dest, name, version, {f"{name.replace('-', '_')}/__init__.py": source.encode()})


def installed_wheel(dest: Path, distribution: str, package: str) -> Path:
    """The pure-Python part of an installed distribution (its ``package/**.py``) as a wheel."""
    dist = importlib.metadata.distribution(distribution)
    files = {str(f): f.read_binary() for f in dist.files or () if str(f).startswith(f"{package}/")
             and str(f).endswith(".py")}
    return write_wheel(dest, distribution, dist.version, files)


@contextlib.contextmanager
def serve_index(root: Path, wheels: dict[str, Path], port: int = 0,
                requests: list[str] | None = None) -> Iterator[str]:
    """Serve ``wheels`` (project name → wheel file under ``root/simple/<name>/``) as a simple index, on ``port``
    (any free one by default); the path of every request it answers is appended to ``requests``."""
    simple = root / "simple"
    for name, wheel in wheels.items():
        (simple / name / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    (simple / "index.html").write_text("".join(f'<a href="{n}/">{n}</a>\n' for n in wheels))

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def send_head(self) -> Any:
            if requests is not None:
                requests.append(self.path)
            return super().send_head()

    # the setup phase's proxy runs in a container: it reaches this host as host.docker.internal (the engine's
    # host gateway), so the index listens on every address of this host
    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True  # a fixed port is free again as soon as the last run closed it

    server = Server(("0.0.0.0", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{INDEX_HOST}:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def one_package_index(root: Path, name: str, version: str, source: str) -> Iterator[str]:
    """An index under ``root`` holding one one-module package (:func:`build_wheel`)."""
    folder = root / "simple" / name
    folder.mkdir(parents=True)
    with serve_index(root, {name: build_wheel(folder, name, version, source)}) as url:
        yield url


def write_sdist(dest: Path, name: str, version: str, files: dict[str, str], *, legacy: bool = False) -> Path:
    """A source distribution (``name-version.tar.gz``) of ``files`` built by setuptools from the index: a
    ``PKG-INFO``, a ``pyproject.toml`` naming setuptools as its backend unless ``files`` has one or the sdist is
    ``legacy`` (a ``setup.py`` alone, as old releases are)."""
    import io
    import tarfile

    dist = f"{name.replace('-', '_')}-{version}"
    files = {"PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             "pyproject.toml": ('[build-system]\nrequires = ["setuptools>=70"]\n'
                                'build-backend = "setuptools.build_meta"\n\n'
                                f'[project]\nname = "{name}"\nversion = "{version}"\n'), **files}
    if legacy:
        files.pop("pyproject.toml", None)
    sdist = dest / f"{dist}.tar.gz"
    with tarfile.open(sdist, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{dist}/{path}")
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
            archive.addfile(info, io.BytesIO(data))
    return sdist
