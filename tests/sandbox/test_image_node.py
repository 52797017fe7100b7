"""The image's Node.js lines: each runs in the real sandbox from ``/opt/logomesh/node-<major>``, the label lists them,
and a release whose bytes do not match its pinned integrity is refused when the image is built."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from checks.models import TestSpec
from sandbox.docker_sandbox import DockerSandbox
from sandbox.errors import SandboxError
from sandbox.image import NODE_INTEGRITY, NODE_LABEL, NODE_RELEASES, integrity_of, node_arch
from tests.images import SANDBOX_IMAGE
from tests.sandbox.registries import unreachable

LATER = "22"
SUITE = f'''
import subprocess


def version(major):
    return subprocess.run([f"/opt/logomesh/node-{{major}}/bin/node", "--version"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_suite_s_own_node():
    assert version(18).startswith("v18.")


def test_the_pinned_later_line():
    assert version({LATER}) == "v{NODE_RELEASES[LATER]}"
    # and it has what only that line has (Object.groupBy came with Node.js 21)
    out = subprocess.run(["/opt/logomesh/node-{LATER}/bin/node", "-e",
                          "console.log(JSON.stringify(Object.groupBy([1, 2, 3], (v) => v % 2)))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == '{{"0":[2],"1":[1,3]}}'
'''


@pytest.mark.docker
async def test_each_node_line_runs_in_the_real_sandbox_and_the_label_lists_them(
        make_repo: Callable[[dict[str, str]], Path], sandboxes: Callable[..., DockerSandbox],
        docker_engine: docker.DockerClient) -> None:
    assert (docker_engine.images.get(SANDBOX_IMAGE).labels or {}).get(NODE_LABEL) == f"18,{LATER}"
    root = make_repo({"tests/test_node.py": SUITE})
    result = await sandboxes(root).run_tests(TestSpec())
    assert (result.status, result.failed, result.passed) == ("ran", 0, 2), result.output[-3000:]


def test_every_pinned_release_has_an_integrity_for_each_architecture() -> None:
    for version in NODE_RELEASES.values():
        for arch in ("x64", "arm64"):
            assert NODE_INTEGRITY[(version, arch)].startswith("sha512-")
    # npm's integrity string: sha512, base64
    assert integrity_of(b"") == ("sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUd"
                                 "BeoGlODJ6+SfaPg==")


def test_the_production_dockerfile_pins_the_same_release_and_sums() -> None:
    import base64
    import re

    text = (Path(__file__).parents[2] / "sandbox" / "Dockerfile").read_text(encoding="utf-8")
    args = dict(re.findall(r"^ARG (NODE_RELEASE\w*)=(\S+)$", text, re.M))
    version = NODE_RELEASES[LATER]
    assert args["NODE_RELEASE"] == version
    for arch in ("x64", "arm64"):
        digest = base64.b64decode(NODE_INTEGRITY[(version, arch)].removeprefix("sha512-")).hex()
        assert args[f"NODE_RELEASE_SHA512_{arch.upper()}"] == digest, arch
    assert "org.logomesh.node=${NODE_LABEL}" in text and f"ARG NODE_LABEL=18,{LATER}" in text


@pytest.mark.parametrize("npm", [True, False], ids=["by-npm", "without-npm"])
def test_a_release_that_does_not_match_its_pinned_integrity_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, npm: bool) -> None:
    from sandbox import image

    if not npm:  # a host without npm fetches the registry's tarball itself, checked the same way
        monkeypatch.setattr("sandbox.image.shutil.which", lambda _name: None)

    version = NODE_RELEASES[LATER]
    why = unreachable(f"https://registry.npmjs.org/node-linux-{node_arch()}")
    if why:
        pytest.skip(why)
    forged = "sha512-" + "A" * 86 + "=="
    monkeypatch.setitem(image.NODE_INTEGRITY, (version, node_arch()), forged)
    with pytest.raises(SandboxError, match="does not match its pinned integrity"):
        image._add_node_release(tmp_path, LATER, version, lambda _msg: None)
    assert not (tmp_path / f"opt/logomesh/node-{LATER}/bin/node").exists()
