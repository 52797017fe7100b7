"""A built environment checked against what pip recorded: every file of the venv listed by a distribution's
``RECORD`` with the hash it was installed with.

``VERIFY`` runs in a container of the environment's image, with no network, as the image's own tools interpreter
started ``-I -S`` (nothing of the venv runs). It names:

- ``changed <path>``: a file whose sha256 is not the one its ``RECORD`` lists (edited after pip installed it);
- ``unlisted <path>``: a file no ``RECORD`` lists — written beside the installed artefacts by a build, a setup
  step or anything else. The venv's own skeleton is allowed: ``pyvenv.cfg``, the ``activate`` scripts, the
  ``python*`` links to the image's interpreter, the ``lib64`` link, and LogoMesh's own ``zz-logomesh-tools.pth``
  holding exactly the tools' path.

An environment with either is never served from the cache: a cached one is discarded and rebuilt (logged), a fresh
build that already has them is used by this review only and its findings are reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from docker.errors import DockerException

from sandbox.errors import SandboxError

if TYPE_CHECKING:
    from sandbox.docker_sandbox import DockerSandbox, _Run

log = logging.getLogger(__name__)

VERIFY = r"""
import base64, csv, hashlib, os, sys
env, tools_line = sys.argv[1], sys.argv[2]
listed = {}
for root, dirs, files in os.walk(env):
    for name in dirs:
        if name.endswith(".dist-info") and os.path.isfile(os.path.join(root, name, "RECORD")):
            record = os.path.join(root, name, "RECORD")
            try:
                with open(record, encoding="utf-8", newline="") as handle:
                    for row in csv.reader(handle):
                        if row:
                            listed[os.path.normpath(os.path.join(root, row[0]))] = row[1] if len(row) > 1 else ""
            except (OSError, ValueError, UnicodeDecodeError):
                print("changed", record)
skeleton = {"pyvenv.cfg", "bin/activate", "bin/activate.csh", "bin/activate.fish", "bin/Activate.ps1"}
for root, dirs, files in os.walk(env):
    for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(root, d))]):
        path = os.path.join(root, name)
        relative = os.path.relpath(path, env)
        if os.path.islink(path):
            target = os.path.realpath(path)
            if relative == "lib64" and target == os.path.join(env, "lib"):
                continue
            if relative.startswith("bin/python") and not target.startswith(env + "/") and target.startswith("/usr/"):
                continue
            print("unlisted", relative)
            continue
        if relative in skeleton:
            continue
        if name == "zz-logomesh-tools.pth" and root.endswith("/site-packages"):
            with open(path, encoding="utf-8", errors="replace") as handle:
                if handle.read().strip() == tools_line:
                    continue
        if path not in listed:
            print("unlisted", relative)
            continue
        algorithm, _, expected = listed[path].partition("=")
        if not expected:
            continue  # RECORD lists itself (and may list other files) without a hash
        try:
            with open(path, "rb") as handle:
                digest = hashlib.new(algorithm, handle.read()).digest()
        except (OSError, ValueError):
            print("changed", relative)
            continue
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != expected:
            print("changed", relative)
print("LOGOMESH-VERIFIED")
"""
MAX_NAMED = 20
VERIFIED_SIZE = 512
# image ids (content addressed) already verified by this process: the same id is the same bytes
_VERIFIED: OrderedDict[str, tuple[str, ...]] = OrderedDict()
_GUARD = threading.Lock()


def findings(output: str) -> tuple[str, ...]:
    """What the verification found, one sentence each; a run that did not finish is a finding too."""
    lines = output.splitlines()
    if "LOGOMESH-VERIFIED" not in lines:
        return ("the verification of the environment did not finish",)
    found: list[str] = []
    for line in lines:
        kind, _, path = line.partition(" ")
        if kind == "changed":
            found.append(f"{path} differs from the hash its distribution's RECORD lists")
        elif kind == "unlisted":
            found.append(f"{path} is listed by no installed distribution's RECORD")
    return tuple(found[:MAX_NAMED]) + ((f"and {len(found) - MAX_NAMED} more",) if len(found) > MAX_NAMED else ())


def verify_image(sandbox: DockerSandbox, run: _Run, image: str, env_dir: str, tools_python: str,
                 tools_line: str) -> tuple[str, ...]:
    """The findings of :data:`VERIFY` in a container of ``image`` (none: the environment is what pip installed).
    An image id verified before by this process is not verified again."""
    try:
        image_id = sandbox.client.images.get(image).id
    except DockerException as exc:
        raise SandboxError(f"the environment {image} could not be inspected: {exc}") from exc
    with _GUARD:
        if image_id in _VERIFIED:
            _VERIFIED.move_to_end(image_id)
            return _VERIFIED[image_id]
    try:
        container = sandbox._create(run, image, network=None, read_only=True, mounts=[])
        run.helpers.append(container)
        sandbox.client.api.start(container)
    except DockerException as exc:
        raise SandboxError(f"the environment {image} could not be verified: {exc}") from exc
    result = asyncio.run(sandbox._exec_in(container, [tools_python, "-I", "-S", "-c", VERIFY, env_dir, tools_line],
                                          sandbox.limits.with_timeout(300), workdir="/"))
    with contextlib.suppress(DockerException):
        sandbox.client.api.kill(container)
    found = findings(bytes(result.stdout).decode("utf-8", "replace"))
    if result.timed_out or result.exit_code != 0:
        found = found or ("the verification of the environment did not finish",)
    with _GUARD:
        _VERIFIED[image_id] = found
        while len(_VERIFIED) > VERIFIED_SIZE:
            _VERIFIED.popitem(last=False)
    if found:
        log.warning("sandbox environment %s: %s", image, "; ".join(found))
    return found
