"""The environment cache shared through a registry: a real registry (Debian's ``docker-registry``) on loopback,
the digests in a real Redis, two sandboxes whose engines' caches are emptied between them."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from app.settings import SettingsError, load_settings
from checks.models import TestSpec
from sandbox.docker_sandbox import DockerSandbox, SetupOptions
from sandbox.env_registry import EnvRegistry, RedisDigests, RegistryError, push
from sandbox.limits import SandboxLimits
from sandbox.setup_phase import environment_image
from sandbox.tarball import owned_files_tar
from tests.gitfixture import RepoBuilder
from tests.images import SANDBOX_IMAGE
from tests.sandbox.index import one_package_index

REDIS_URL = os.environ.get("LOGOMESH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
REGISTRY_BINARY = "/usr/bin/docker-registry"
SHOP = {
    "requirements-test.txt": "lm-discounts==1.0.0\n",
    "src/shop/__init__.py": "",
    "src/shop/cart.py": "from lm_discounts import rate\n\n\ndef total(price, code):\n"
                        "    return price * (100 - rate(code)) / 100\n",
    "tests/test_cart.py": "from shop.cart import total\n\n\ndef test_total():\n    assert total(200, 'TEN') == 180\n",
}


class Registry:
    """A ``docker-registry serve`` on a loopback port, storing under a temporary directory."""

    def __init__(self, root: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = root / "config.yml"
        config.write_text(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                          f"    rootdirectory: {root / 'data'}\n"
                          f"  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{self.port}\n", encoding="utf-8")
        self.log = (root / "registry.log").open("wb")
        self.process = subprocess.Popen([REGISTRY_BINARY, "serve", str(config)], stdout=subprocess.DEVNULL,
                                        stderr=self.log)
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError as exc:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"docker-registry did not start: {(root / 'registry.log').read_text()}") from exc
                time.sleep(0.2)

    @property
    def repository(self) -> str:
        return f"127.0.0.1:{self.port}/logomesh-env"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.log.close()


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    if shutil.which(REGISTRY_BINARY) is None:
        pytest.skip(f"{REGISTRY_BINARY} is absent (Debian's docker-registry package; scripts/setup.sh installs it)")
    served = Registry(tmp_path)
    yield served
    served.stop()


@pytest.fixture
def digests(registry: Registry) -> Iterator[RedisDigests]:
    store = RedisDigests(REDIS_URL, f"test-{uuid.uuid4().hex}:", registry.repository, 600)
    yield store
    store.close()


@pytest.fixture(scope="module")
def local_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    source = "def rate(code):\n    return {'TEN': 10}.get(code, 0)\n"
    with one_package_index(tmp_path_factory.mktemp("index"), "lm-discounts", "1.0.0", source) as url:
        yield url


def messages(caplog: pytest.LogCaptureFixture) -> str:
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "sandbox.setup_phase")
    caplog.clear()
    return text


@pytest.mark.docker
async def test_a_second_engine_pulls_the_environment_by_digest_and_never_a_swapped_one(
        tmp_path: Path, local_index: str, registry: Registry, digests: RedisDigests,
        docker_engine: docker.DockerClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sandbox.setup_phase")
    root = tmp_path / "shop"
    RepoBuilder(root).commit("Shop", SHOP)
    # a scope of this test's own: no environment an earlier run left in this engine is a local hit
    setup = SetupOptions(index_url=local_index, scope=f"registry-{uuid.uuid4().hex}",
                         registry=EnvRegistry(registry.repository, digests))
    api = docker_engine.api

    def sandbox() -> DockerSandbox:
        return DockerSandbox.for_tree(root, SandboxLimits(timeout_seconds=120), SANDBOX_IMAGE, client=docker_engine,
                                      setup=setup)

    first_sandbox = sandbox()
    first = await first_sandbox.run_tests(TestSpec())
    assert first.environment is not None and first.passed == 1, first.output[-2000:]
    log = messages(caplog)
    assert ": built in " in log and f": pushed to {registry.repository}@sha256:" in log, log
    tag = environment_image(first_sandbox, first.environment, TestSpec(), first_sandbox.head)
    key = tag.partition(":")[2]
    built = docker_engine.images.get(tag).id
    pushed = digests.get(key)
    assert pushed is not None and pushed in log

    # whoever can write to the registry moves the tag to another image: the workers pull by digest, not by tag
    api.tag(SANDBOX_IMAGE, registry.repository, key)
    try:
        for _event in api.push(registry.repository, tag=key, stream=True, decode=True):
            pass
    finally:
        api.remove_image(f"{registry.repository}:{key}", noprune=True)

    api.remove_image(tag, force=True)  # a second engine: its local cache does not hold the environment
    second = await sandbox().run_tests(TestSpec())
    log = messages(caplog)
    assert f": pulled from {registry.repository}@{pushed}" in log, log
    assert ": built in " not in log, "the environment was built again instead of pulled"
    assert docker_engine.images.get(tag).id == built, "another image than the one built and verified was used"
    assert second.passed == 1 and second.setup == first.setup

    # an environment whose files changed after pip installed them is pulled, fails verification, and is built here
    python = docker_engine.images.get(tag).labels["org.logomesh.env.python"]
    tampered = api.create_container(tag)  # never started: the committed image keeps the environment's config
    try:
        api.put_archive(tampered, f"/opt/logomesh/envs/project/lib/python{python}/site-packages", owned_files_tar(
            "lm_discounts", {"__init__.py": b"def rate(code):\n    return 99\n"}))
        api.commit(tampered, repository=registry.repository, tag="tampered")
    finally:
        api.remove_container(tampered, force=True)
    try:
        bad = push(api, EnvRegistry(registry.repository, digests), f"{registry.repository}:tampered", key)
    finally:
        api.remove_image(f"{registry.repository}:tampered", force=True)
    assert digests.get(key) == bad != pushed
    api.remove_image(tag, force=True)
    third = await sandbox().run_tests(TestSpec())
    log = messages(caplog)
    assert f": pulled from {registry.repository}@{bad}" in log, log
    assert "changed since it was built, discarded and rebuilt" in log and ": built in " in log, log
    assert third.passed == 1, third.output[-2000:]
    assert digests.get(key) not in (None, bad), "the rebuilt environment was not shared again"

    # the registry is down: the environment is built here, with the reason logged, and the review goes on
    registry.stop()
    api.remove_image(tag, force=True)
    fourth = await sandbox().run_tests(TestSpec())
    log = messages(caplog)
    assert f"not taken from {registry.repository}" in log and ": built in " in log, log
    assert f"not shared through {registry.repository}" in log, log
    assert fourth.passed == 1 and fourth.setup == first.setup


def test_a_push_the_registry_refuses_records_nothing(registry: Registry, digests: RedisDigests,
                                                      docker_engine: docker.DockerClient) -> None:
    elsewhere = EnvRegistry(f"127.0.0.1:{registry.port}/logomesh-env", digests)
    registry.stop()
    with pytest.raises(RegistryError):
        push(docker_engine.api, elsewhere, SANDBOX_IMAGE, "k" * 32)
    assert digests.get("k" * 32) is None
    assert not [t for t in docker_engine.images.get(SANDBOX_IMAGE).tags if t.startswith(elsewhere.repository)]


def test_the_registry_setting_is_a_repository_without_tag_or_scheme(tmp_path: Path) -> None:
    assert load_settings(home=tmp_path, sandbox_env_registry="registry.internal:5000/team/envs") \
        .sandbox_env_registry == "registry.internal:5000/team/envs"
    assert load_settings(home=tmp_path).sandbox_env_registry is None  # off by default
    for wrong in ("https://registry.internal/envs", "registry.internal/envs:latest", "registry.internal",
                  "registry.internal/Envs"):
        with pytest.raises(SettingsError, match="SANDBOX_ENV_REGISTRY"):
            load_settings(home=tmp_path, sandbox_env_registry=wrong)
    with pytest.raises(ValueError, match="not a registry repository"):
        EnvRegistry("registry.internal/envs@sha256:" + "0" * 64, RedisDigests(REDIS_URL, "x:", "r", 1))
