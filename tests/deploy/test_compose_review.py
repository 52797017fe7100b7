"""deploy/compose.yaml, brought up on this machine, reviews a pull request end to end.

The shipped compose file with deploy/compose.offline.yaml (base images built from Debian packages: no registry is
reachable here) and a third file that only points the services at this test's world: the App image built from this
tree, the sandbox image archive mounted into the worker (which loads it into the empty ``dind`` engine at start-up),
and the settings naming the fake GitHub and a package index served on this host. A signed webhook goes to the
published web port; the worker clones the PR from the fake GitHub, installs the project's dependency through the
setup proxy running inside ``dind``, runs its tests there and publishes the check run. Everything the project
created is removed afterwards (``down -v``); the images stay, so the next run builds only what changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml

from sandbox.docker_sandbox import outdated_layout
from tests.app.conftest import INSTALLATION, generate_app_key, pr_payload, score_cells, verdict_title
from tests.app.fakegithub import FakeGitHub
from tests.deploy.builds import needs_image_builds
from tests.gitfixture import RepoBuilder
from tests.sandbox.index import INDEX_HOST, one_package_index, serve_index

pytestmark = [pytest.mark.docker, pytest.mark.slow, needs_image_builds]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
APP_IMAGE = "logomesh:compose-test"
IMAGES_PYTHON = "logomesh-offline/python:3.11-bookworm"
SANDBOX_IMAGE = os.environ.get("LOGOMESH_TEST_SANDBOX_IMAGE", "logomesh-sandbox:latest")
APP_ID = 31
REPO, NUMBER = "octo/shop", 12
# a cold build downloads the App's dependencies (minutes); later runs reuse the cached layers
BUILD_SECONDS, UP_SECONDS, REVIEW_SECONDS = 2400, 600, 600
# a fixed port for the CPU torch index: the build argument naming it is part of the image's layer cache key
TORCH_INDEX_PORT = 47831

BASE = {
    "requirements-test.txt": "lm-discounts==1.0.0\n",
    "src/shop/__init__.py": "",
    "src/shop/cart.py": "from lm_discounts import rate\n\n\ndef total(price, code):\n"
                        "    return price * (100 - rate(code)) / 100\n",
    "tests/test_cart.py": "from shop.cart import total\n\n\ndef test_total():\n    assert total(200, 'TEN') == 180\n",
}
HEAD = {
    "src/shop/shipping.py": ("from lm_discounts import rate\n\n\n"
                             "def shipping(price, code):\n"
                             "    \"\"\"Shipping is free when a discount code brings the price under 100.\"\"\"\n"
                             "    return 0 if price * (100 - rate(code)) / 100 < 100 else 5\n"),
    "tests/test_shipping.py": ("from shop.shipping import shipping\n\n\n"
                               "def test_free_under_100():\n    assert shipping(105, 'TEN') == 0\n\n\n"
                               "def test_paid_otherwise():\n    assert shipping(200, 'NONE') == 5\n"),
}


def _compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.skip("docker-compose is not installed (scripts/setup.sh installs it)")


def _engine() -> Any:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=900)
        client.ping()
    except Exception as exc:  # the lint and config tests of deploy/ need no engine; this one does
        pytest.skip(f"no Docker engine: {exc}")
    return client


def _host_gateway(client: Any) -> str:
    """This host's address on the engine's default bridge: every container reaches it through its gateway."""
    return str(client.networks.get("bridge").attrs["IPAM"]["Config"][0]["Gateway"])


def _outward_address(fallback: str) -> str:
    """This host's address on its way out (the source of its default route; no packet is sent). Inside ``dind``
    the engine's default bridge may take the host's docker0 subnet, so the index must not be named by that."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("1.1.1.1", 53))
            return str(probe.getsockname()[0])
        except OSError:
            return fallback


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _serve(app: Any, host: str) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the fake GitHub did not start"
        time.sleep(0.05)
    try:
        yield f"http://{host}:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)


def _torch_pin() -> str:
    for line in (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if line.startswith("ARG TORCH_VERSION="):
            return line.split("=", 1)[1]
    raise AssertionError("deploy/Dockerfile pins no TORCH_VERSION")


@contextlib.contextmanager
def _torch_index(folder: Path, host: str) -> Iterator[dict[str, str]]:
    """The build arguments that take torch (and what it needs) from a CPU wheel this host's pip finds (its index or
    wheel folders), served to the build as an index; none when pip finds only a CUDA wheel (then the build uses the
    PyTorch CPU index)."""
    wheels = folder / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:", "-d", str(wheels),
                    f"torch=={_torch_pin()}"], check=True, capture_output=True, timeout=600)
    [torch] = wheels.glob("torch-*.whl")
    if "+cpu" not in torch.name:
        yield {}
        return
    projects: dict[str, Path] = {}
    for wheel in sorted(wheels.glob("*.whl")):
        name = wheel.name.split("-")[0].lower().replace("_", "-")
        (folder / "simple" / name).mkdir(parents=True)
        projects[name] = wheel.rename(folder / "simple" / name / wheel.name)
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(serve_index(folder, projects, port=TORCH_INDEX_PORT))
        except OSError:  # the port is taken: any port (the torch layer is then rebuilt)
            url = stack.enter_context(serve_index(folder, projects))
        yield {"LOGOMESH_TORCH_INDEX_URL": url.replace(INDEX_HOST, host),
               "LOGOMESH_PIP_EXTRA_ARGS": f"--trusted-host {host}"}


@pytest.fixture(scope="module")
def offline_images() -> None:
    """The base images deploy/compose.offline.yaml names (built once, then kept: a current image is not rebuilt)."""
    _engine()
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        pytest.skip("building the offline base images needs root and debootstrap (scripts/setup.sh installs it)")
    from app.deploy_images import build_base_images

    build_base_images()


def _project(tmp_path: Path) -> tuple[Path, str]:
    """A bare repository of the shop (base: a dependency and its test; head: a feature and its tests)."""
    work = tmp_path / "work"
    builder = RepoBuilder(work)
    base = builder.commit("Cart totals with discount codes", BASE)
    head = builder.commit("Free shipping under 100 after the discount", HEAD)
    bare = tmp_path / "repos" / "octo" / "shop.git"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "config", "uploadpack.allowAnySHA1InWant", "true"], check=True)
    return bare.parent.parent, f"{base}..{head}"


class Compose:
    """One compose project made of the shipped files plus this test's, removed with its volumes at the end."""

    def __init__(self, directory: Path, files: list[Path], env: dict[str, str]) -> None:
        self.name = f"lmtest{uuid.uuid4().hex[:8]}"
        self.argv = [*_compose_command(), "--no-ansi", "-p", self.name, "--project-directory", str(directory)]
        for file in files:
            self.argv += ["-f", str(file)]
        self.env = {**os.environ, **env}

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.argv, *args], capture_output=True, text=True, env=self.env, timeout=timeout,
                              check=False)

    def logs(self) -> str:
        return self.run("logs", "--no-color", "--tail", "60").stdout[-8000:]


# capability bits 0-37 (linux/capability.h), the ones Docker 20.10 accepts by name
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
                "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
                "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
                "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE",
                "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
                "BLOCK_SUSPEND", "AUDIT_READ")


def _engine_service(client: Any) -> dict[str, Any]:
    """What the dind service needs on this host, beyond deploy/compose.yaml: nothing where a privileged container
    starts. A host whose own capability bounding set lacks one (a machine that is itself a container) cannot start
    privileged containers; there dind gets every capability the host has, no seccomp or AppArmor profile and every
    device, and the engine image's entry point mounts the cgroups it needs (deploy/offline/engine-entrypoint.sh)."""
    from docker.errors import APIError

    try:
        client.containers.run(IMAGES_PYTHON, ["true"], privileged=True, remove=True, network_disabled=True)
        return {}
    except APIError as exc:
        if "apply caps" not in str(exc):
            raise
    bounding = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                        if line.startswith("CapBnd:")), 16)
    return {"privileged": False, "cap_add": [name for bit, name in enumerate(CAPABILITIES) if bounding >> bit & 1],
            "security_opt": ["seccomp:unconfined", "apparmor:unconfined"], "device_cgroup_rules": ["a *:* rwm"],
            # /proc/sys is read-only without privileges: the engine's bridges need forwarding on
            "sysctls": {"net.ipv4.ip_forward": "1"}}


def _world(tmp_path: Path, github_url: str, index_url: str, archive: Path,
           engine: dict[str, Any]) -> tuple[Path, Path]:
    """deploy/.env, deploy/secrets/ and the test's compose file, in a directory of the test's own."""
    directory = tmp_path / "deploy"
    (directory / "secrets").mkdir(parents=True)
    private, _public = KEYS
    password = secrets.token_hex(12)
    (directory / "secrets" / "github-app.pem").write_text(private)
    (directory / "secrets" / "webhook-secret").write_text(WEBHOOK_SECRET)
    (directory / "secrets" / "postgres-password").write_text(password)
    settings = {
        "LOGOMESH_APP_ID": str(APP_ID), "LOGOMESH_PRIVATE_KEY_PATH": "/run/secrets/github_app_private_key",
        "LOGOMESH_WEBHOOK_SECRET": WEBHOOK_SECRET, "LOGOMESH_PUBLIC_URL": "https://logomesh.test",
        "LOGOMESH_GITHUB_API_URL": github_url, "LOGOMESH_GITHUB_WEB_URL": github_url,
        "LOGOMESH_REDIS_URL": "redis://redis:6379/0",
        "LOGOMESH_DATABASE_URL": f"postgresql+asyncpg://logomesh:{password}@postgres:5432/logomesh",
        "LOGOMESH_HOME": "/var/lib/logomesh", "LOGOMESH_CONCURRENCY": "1", "LOGOMESH_LLM_PROVIDER": "offline",
        "LOGOMESH_SANDBOX_IMAGE": SANDBOX_IMAGE, "LOGOMESH_SANDBOX_IMAGE_ARCHIVE": "/run/logomesh/sandbox-image.tar",
        "LOGOMESH_SANDBOX_INDEX_URL": index_url,
        # a passing verdict gets its comment too (the default comments only when the verdict is not pass)
        "LOGOMESH_COMMENT": "always",
    }
    (directory / ".env").write_text("".join(f"{name}={value}\n" for name, value in settings.items()))
    app = {"image": APP_IMAGE, "build": {"context": str(ROOT)}}
    test_file = directory / "compose.test.yaml"
    services: dict[str, Any] = {
        "web": app,
        "worker": {**app, "volumes": [f"{archive}:/run/logomesh/sandbox-image.tar:ro"]},
    }
    if engine:
        services["dind"] = engine
    test_file.write_text(yaml.safe_dump({"version": "3.8", "services": services}))
    return directory, test_file


KEYS = generate_app_key()
WEBHOOK_SECRET = secrets.token_hex(16)


def _wait_ready(compose: Compose, url: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                return
        time.sleep(2)
    pytest.fail(f"web never answered /readyz:\n{compose.logs()}")


def _post_webhook(url: str, payload: dict[str, Any]) -> httpx.Response:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return httpx.post(url + "/webhook", content=body, timeout=30, headers={
        "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4()),
        "Content-Type": "application/json", "X-Hub-Signature-256": signature})


def test_compose_reviews_a_pr_with_a_dependency_end_to_end(offline_images: None, tmp_path: Path) -> None:
    client = _engine()
    gateway = _host_gateway(client)
    repos, commits = _project(tmp_path)
    base, head = commits.split("..")
    # the App built from this tree runs only a sandbox image of its own layout (sandbox/image.py IMAGE_VERSION)
    stale = outdated_layout(client.images.get(SANDBOX_IMAGE).labels)
    assert stale is None, f"{SANDBOX_IMAGE} {stale}: build it first (bash scripts/sandbox-image.sh)"
    archive = tmp_path / "sandbox-image.tar"
    with open(archive, "wb") as out:  # `docker save`: what an operator mounts into the worker
        for chunk in client.api.get_image(SANDBOX_IMAGE):
            out.write(chunk)
    github = FakeGitHub(app_id=APP_ID, public_key_pem=KEYS[1], repos_root=repos)
    github.add_pull(REPO, NUMBER, head=head, base=base, title="Free shipping under 100 after the discount",
                    body="Adds shipping(price, code) in src/shop/shipping.py: free when the discounted price is "
                         "under 100, otherwise 5; with tests.")
    source = "def rate(code):\n    return {'TEN': 10}.get(code, 0)\n"
    with one_package_index(tmp_path / "index", "lm-discounts", "1.0.0", source) as index, \
            _torch_index(tmp_path / "torch", gateway) as build_args, _serve(github.app(), gateway) as github_url:
        # the setup proxy runs inside dind, whose own host is dind: the index is reached at this host's address
        outward = _outward_address(gateway)
        directory, test_file = _world(tmp_path, github_url, index.replace(INDEX_HOST, outward), archive,
                                      _engine_service(client))
        port = _free_port()
        compose = Compose(directory, [DEPLOY / "compose.yaml", DEPLOY / "compose.offline.yaml", test_file],
                          {"LOGOMESH_WEB_PORT": str(port), **build_args})
        started = time.monotonic()
        try:
            build = compose.run("build", timeout=BUILD_SECONDS)
            assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
            built = time.monotonic()
            up = compose.run("up", "-d", "--no-build", "--scale", "worker=1", timeout=UP_SECONDS)
            assert up.returncode == 0, up.stdout[-4000:] + up.stderr[-4000:]
            url = f"http://127.0.0.1:{port}"
            _wait_ready(compose, url)
            payload = pr_payload("opened.payload.json", head=head, base=base, number=NUMBER)
            assert payload["installation"]["id"] == INSTALLATION
            answer = _post_webhook(url, payload)
            assert answer.status_code == 202, answer.text
            run = _wait_for_verdict(compose, github, head)
            reviewed = time.monotonic()
        finally:
            down = compose.run("down", "-v", "--remove-orphans", "--timeout", "20", timeout=300)
    assert down.returncode == 0, down.stderr[-2000:]
    assert not client.containers.list(all=True, filters={"label": f"com.docker.compose.project={compose.name}"})
    assert not client.volumes.list(filters={"label": f"com.docker.compose.project={compose.name}"})
    assert github.errors == [], f"requests that broke GitHub's schemas: {github.errors}"

    assert run["status"] == "completed" and verdict_title(run["output"]["title"]), run["output"]
    comment = next(c for c in github.comments.values() if c["issue_number"] == NUMBER)["body"]
    cells = score_cells(comment)
    # T was measured: the project's dependency came from the local index through the proxy inside dind
    assert "not measured" not in cells["T tests"], (cells, run["output"]["summary"][:3000])
    assert float(cells["T tests"]) > 0, (cells, comment[:3000])
    print(f"compose review: build {built - started:.0f} s, up to the published verdict {reviewed - built:.0f} s "
          f"({run['conclusion']}: {run['output']['title']}; T {cells['T tests']})")


def _wait_for_verdict(compose: Compose, github: FakeGitHub, head: str) -> dict[str, Any]:
    deadline = time.monotonic() + REVIEW_SECONDS
    while time.monotonic() < deadline:
        runs = [r for r in github.check_runs_for(head) if r["status"] == "completed"]
        if runs and any(c["issue_number"] == NUMBER for c in github.comments.values()):
            return runs[0]
        time.sleep(3)
    pytest.fail(f"no verdict within {REVIEW_SECONDS} s; check runs {github.check_runs_for(head)}\n{compose.logs()}")
