"""deploy/Dockerfile: lint rules (non-root, pinned base, no secrets, health check) and an offline build.

The offline build cannot use the real base (no registry here): it builds the same Dockerfile on top of the
offline Debian/Python base (``logomesh deploy build-images``: Debian bookworm, Python 3.11) with the wheels fetched
by pip beforehand, the network of the build cut off, and then runs the image's entry point.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.deploy.builds import needs_image_builds
from tests.deploy.dockerfile_lint import final_stage, lint, parse

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"


def text() -> str:
    return DOCKERFILE.read_text(encoding="utf-8")


def test_dockerfile_passes_the_lint() -> None:
    assert lint(text()) == []


@pytest.mark.parametrize(
    ("dockerfile", "rule"),
    [
        ("FROM python:latest\nUSER 10001\nHEALTHCHECK CMD true\n", "pinned-base"),
        ("FROM python\nUSER 10001\nHEALTHCHECK CMD true\n", "pinned-base"),
        ("FROM python:3.11-slim\nUSER 10001\nHEALTHCHECK CMD true\n", "pinned-base"),
        ("ARG BASE\nFROM ${BASE}\nUSER 10001\nHEALTHCHECK CMD true\n", "pinned-base"),
        ("FROM python:3.11.14-slim\nHEALTHCHECK CMD true\n", "non-root"),
        ("FROM python:3.11.14-slim\nUSER app\nUSER root\nHEALTHCHECK CMD true\n", "non-root"),
        ("FROM python:3.11.14-slim\nUSER 0:0\nHEALTHCHECK CMD true\n", "non-root"),
        ("FROM python:3.11.14-slim\nENV GITHUB_TOKEN=ghs_abc\nUSER 1\nHEALTHCHECK CMD true\n", "no-secret"),
        ("FROM python:3.11.14-slim\nENV LOGOMESH_WEBHOOK_SECRET x\nUSER 1\nHEALTHCHECK CMD true\n", "no-secret"),
        ("ARG DB_PASSWORD\nFROM python:3.11.14-slim\nUSER 1\nHEALTHCHECK CMD true\n", "no-secret"),
        ("FROM python:3.11.14-slim\nUSER 1\n", "healthcheck"),
        ("FROM python:3.11.14-slim AS b\nHEALTHCHECK CMD true\nUSER 1\nFROM b\n", "non-root"),
    ],
)
def test_the_lint_catches_each_rule(dockerfile: str, rule: str) -> None:
    assert rule in {finding.rule for finding in lint(dockerfile)}


def test_the_lint_accepts_digests_and_stage_names() -> None:
    good = (
        "ARG BASE=python:3.11.14-slim-bookworm@sha256:" + "0" * 64 + "\n"
        "FROM ${BASE} AS build\nFROM build\nUSER 10001:10001\nHEALTHCHECK CMD true\n"
    )
    assert lint(good) == []


def test_base_is_python_311_slim_pinned_by_tag() -> None:
    args = [ins for ins in parse(text()) if ins.keyword == "ARG" and ins.args.startswith("BASE_IMAGE=")]
    assert len(args) == 1
    image = args[0].args.split("=", 1)[1].strip('"')
    repository, tag = image.split(":", 1)
    assert repository == "python"
    assert tag.startswith("3.11.") and "-slim" in tag


def test_final_stage_is_lean_and_runs_logomesh() -> None:
    stage = final_stage(text())
    joined = "\n".join(f"{ins.keyword} {ins.args}" for ins in stage)
    # no dev tools in the image that runs in production
    for tool in ("pytest", "ruff", "mypy", "build-essential", "gcc", "[dev]", "hypothesis"):
        assert tool not in joined, tool
    assert [ins.args for ins in stage if ins.keyword == "ENTRYPOINT"] == ['["logomesh"]']
    assert any(ins.keyword == "COPY" and "--from=builder" in ins.args for ins in stage)
    # the runtime stage adds nothing but the virtualenv: no source tree copied in
    assert not any(ins.keyword == "COPY" and "--from" not in ins.args for ins in stage)
    user = [ins.args for ins in stage if ins.keyword == "USER"][-1]
    assert user.split(":")[0] not in {"root", "0"}


def test_builder_installs_the_all_extra_and_cpu_torch() -> None:
    body = text()
    assert "ARG LOGOMESH_EXTRAS=all" in body
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in body
    assert 'torch==${TORCH_VERSION}' in body
    # the torch pin follows the one scripts/setup.sh installs, so the image and CI run the same build
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    pinned = [ins.args.split("=", 1)[1] for ins in parse(body) if ins.args.startswith("TORCH_VERSION=")]
    assert pinned and f"torch=={pinned[0]}" in setup


SECRET_AND_STATE = (".env", "deploy/.env", "app/.env", ".env.local", "deploy/secrets/app.pem",
                    "deploy/secrets/webhook-secret", "keys/app.private-key.pem", ".venv/bin/python", ".git/HEAD",
                    ".logomesh/ledger.db", "app/__pycache__/x.cpython-311.pyc", ".pytest_cache/v/x", ".mypy_cache/x",
                    ".ruff_cache/x", ".hypothesis/x")
NEEDED = ("app/settings.py", "checks/court.py", "rubric/rubric.json", "sandbox/runtime.py", "deploy/Dockerfile",
          "pyproject.toml", "README.md")


def _context_of(tmp_path: Path) -> set[str]:
    """What a build sends from a tree holding every secret and cache, by the docker SDK's own exclude logic (the
    legacy builder's context tar, which honours the root .dockerignore like BuildKit)."""
    from docker.utils.build import exclude_paths

    for name in (*SECRET_AND_STATE, *NEEDED):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    shutil.copy(ROOT / ".dockerignore", tmp_path / ".dockerignore")
    patterns = [line.strip() for line in (tmp_path / ".dockerignore").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    return set(exclude_paths(str(tmp_path), patterns, dockerfile="deploy/Dockerfile"))


def test_dockerignore_keeps_secrets_and_state_out_of_every_build_context(tmp_path: Path) -> None:
    sent = _context_of(tmp_path)
    leaked = [name for name in SECRET_AND_STATE if name in sent]
    assert not leaked, f"sent to the engine: {leaked}"
    assert set(NEEDED) <= sent, "what the image needs is still sent"
    # one ignore file for every builder: a <Dockerfile>.dockerignore would replace it under BuildKit only
    overriding = [p for folder in (ROOT, ROOT / "deploy", ROOT / "sandbox") for p in folder.glob("*.dockerignore")
                  if p.name != ".dockerignore"]
    assert not overriding, "no per-Dockerfile ignore file overrides the root one"


# --- the offline build ---------------------------------------------------------------------------------------

def _docker() -> object:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:  # the engine is optional for the lint tests above
        pytest.skip(f"no Docker engine: {exc}")
    return client


def _offline_python_base() -> str:
    """``python:3.11-slim`` cannot be pulled here: the offline Debian/Python base (``logomesh deploy build-images``)
    stands in for it, built now when it is missing or stale (it is kept afterwards)."""
    from app.deploy_images import IMAGES, build_base_image, current

    image = IMAGES["python"]
    if not current(image):
        if os.geteuid() != 0 or shutil.which("debootstrap") is None:
            pytest.skip(f"{image.tag} is missing and building it needs root and debootstrap")
        build_base_image(image)
    return image.tag


def _build_context(tmp_path: Path) -> Path:
    context = tmp_path / "context"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if name.startswith(("tests/", "bench/", ".git")) or not (ROOT / name).is_file():
            continue
        target = context / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    wheels = context / "wheels"
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(context)],
                   check=True, capture_output=True)
    requirements = _base_requirements()
    subprocess.run([*pip, "download", "--only-binary", ":all:", "--python-version", "3.11", "--platform",
                    "manylinux2014_x86_64", "-d", str(wheels), *requirements, "pip", "setuptools", "wheel"],
                   check=True, capture_output=True)
    return context


def _base_requirements() -> list[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"])


@pytest.mark.docker
@pytest.mark.slow
@needs_image_builds
def test_image_builds_offline_and_runs_logomesh(tmp_path: Path) -> None:
    client = _docker()
    base = _offline_python_base()
    tag = f"logomesh-deploy-test:{uuid.uuid4().hex[:12]}"
    context = _build_context(tmp_path)
    layers: list[str] = []
    try:
        _, logs = client.images.build(  # type: ignore[attr-defined]
            path=str(context), dockerfile="deploy/Dockerfile", tag=tag, rm=True, forcerm=True,
            network_mode="none",
            buildargs={"BASE_IMAGE": base, "TORCH_VERSION": "", "LOGOMESH_EXTRAS": "",
                       "RUNTIME_PACKAGES": "", "PIP_EXTRA_ARGS": "--no-index --find-links /src/wheels"},
        )
        # the classic builder leaves the builder stage behind as an untagged image: remember it to remove it
        for entry in logs:
            line = str(entry.get("stream", "")).strip()
            if line.startswith("---> ") and len(line.split()) == 2:
                layers.append(line.split()[1])
        image = client.images.get(tag)  # type: ignore[attr-defined]
        config = image.attrs["Config"]
        assert config["User"] == "10001:10001"
        assert config["Entrypoint"] == ["logomesh"]
        assert config["Healthcheck"]["Test"][0] == "CMD"
        assert not any(SECRET in env for env in config["Env"] for SECRET in ("TOKEN", "SECRET", "PASSWORD"))
        output = client.containers.run(  # type: ignore[attr-defined]
            tag, ["--help"], remove=True, network_disabled=True, read_only=True, cap_drop=["ALL"],
            tmpfs={"/tmp": ""},
        ).decode()
        assert "review" in output
        whoami = client.containers.run(  # type: ignore[attr-defined]
            tag, ["-c", "import os; print(os.getuid())"], entrypoint=["python3"], remove=True,
            network_disabled=True,
        ).decode().strip()
        assert whoami == "10001"
        # no dev tools and no source tree in the final image
        probe = "import importlib.util as u; print([m for m in ('pytest', 'ruff', 'mypy') if u.find_spec(m)])"
        leftovers = client.containers.run(  # type: ignore[attr-defined]
            tag, ["-c", probe], entrypoint=["python3"], remove=True, network_disabled=True,
        ).decode().strip()
        assert leftovers == "[]"
    finally:
        # newest first; without force, so a layer still used by another image is left alone
        from docker.errors import APIError

        for name in (tag, *reversed(layers)):
            with contextlib.suppress(APIError):
                client.images.remove(name, noprune=False)  # type: ignore[attr-defined]
