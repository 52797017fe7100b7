"""deploy/compose.yaml: it passes ``docker-compose config`` and keeps Docker away from the web service.

Structural rules: no service mounts the host's Docker socket; the web service has no Docker access at all;
the workers reach Docker only through ``DOCKER_HOST`` pointing at the dind sidecar, on an internal network
shared with nobody else (dind's other network, its way out for the setup phase's egress proxy, holds dind
alone); every service has a health check or waits on healthy dependencies; secrets are compose secrets;
the settings come from ``.env`` with ``LOGOMESH_*`` names.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
EGRESS = "sandbox-egress"  # dind's way out, for the setup phase's egress proxy only
LOGOMESH_SERVICES = ("web", "worker")
REQUIRED_SETTINGS = {
    "LOGOMESH_REDIS_URL", "LOGOMESH_DATABASE_URL", "LOGOMESH_APP_ID", "LOGOMESH_PRIVATE_KEY_PATH",
    "LOGOMESH_WEBHOOK_SECRET", "LOGOMESH_PUBLIC_URL", "LOGOMESH_HOME",
}


def compose() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def env_example() -> dict[str, str]:
    pairs: dict[str, str] = {}
    for line in (DEPLOY / ".env.example").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, value = line.partition("=")
            assert sep, f"not NAME=value: {line!r}"
            pairs[name] = value
    return pairs


def _volumes(service: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            out.append(f"{volume.get('source', '')}:{volume.get('target', '')}")
        else:
            out.append(str(volume))
    return out


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        return dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def _networks(service: dict[str, Any]) -> set[str]:
    networks = service.get("networks", [])
    return set(networks) if isinstance(networks, list) else set(networks.keys())


# --- structure -----------------------------------------------------------------------------------------------

def test_services_are_the_expected_ones() -> None:
    assert set(compose()["services"]) == {"web", "worker", "redis", "postgres", "dind"}


def test_no_service_mounts_the_docker_socket() -> None:
    for name, service in compose()["services"].items():
        for volume in _volumes(service):
            assert "docker.sock" not in volume, f"{name} mounts {volume}"
            assert not volume.startswith("/var/run"), f"{name} mounts {volume}"


def test_web_has_no_docker_access() -> None:
    data = compose()
    web = data["services"]["web"]
    assert "DOCKER_HOST" not in _environment(web)
    assert not web.get("privileged", False)
    dind_networks = _networks(data["services"]["dind"])
    assert not (_networks(web) & dind_networks), "web shares a network with the Docker engine"
    assert "DOCKER_HOST" not in env_example()


def test_workers_reach_docker_only_through_the_sidecar() -> None:
    data = compose()
    services = data["services"]
    worker, dind = services["worker"], services["dind"]
    assert _environment(worker)["DOCKER_HOST"] == "tcp://dind:2376"
    # the engine never listens unauthenticated: PR containers run inside it
    assert _environment(worker)["DOCKER_TLS_VERIFY"] == "1"
    assert _environment(worker)["DOCKER_CERT_PATH"] == "/certs/client"
    assert _environment(dind)["DOCKER_TLS_CERTDIR"] == "/certs"
    assert not any("2375" in str(part) or "--tls=false" in str(part) for part in dind.get("command") or [])
    shared = _networks(worker) & _networks(dind)
    assert shared, "the worker cannot reach dind"
    for network in _networks(dind) - {EGRESS}:
        assert data["networks"][network].get("internal") is True, f"{network} must be internal"
        members = {name for name, service in services.items() if network in _networks(service)}
        assert members == {"worker", "dind"}, f"{network} is shared with {members - {'worker', 'dind'}}"
    # the setup phase's egress proxy runs inside dind and reaches the index through a network of dind's own
    assert EGRESS in _networks(dind) and not data["networks"][EGRESS].get("internal")
    assert {name for name, service in services.items() if EGRESS in _networks(service)} == {"dind"}
    # the engine is never published on the host
    assert "ports" not in dind
    assert dind.get("privileged") is True  # dockerd needs it, which is why it is isolated
    assert services["worker"]["depends_on"]["dind"]["condition"] == "service_healthy"


def test_worker_scales_with_replicas() -> None:
    replicas = compose()["services"]["worker"]["deploy"]["replicas"]
    assert isinstance(replicas, int) and replicas >= 2


def test_every_service_is_health_checked_or_waits_for_healthy_dependencies() -> None:
    services = compose()["services"]
    for name, service in services.items():
        depends = service.get("depends_on", {})
        assert "healthcheck" in service or depends, f"{name} has neither a healthcheck nor depends_on"
        assert isinstance(depends, dict), f"{name}: depends_on must carry conditions"
        for dependency, rule in depends.items():
            assert rule.get("condition") == "service_healthy", f"{name} -> {dependency}"
            assert "healthcheck" in services[dependency], f"{dependency} has no healthcheck to wait on"


def test_worker_health_check_is_arq_health_check() -> None:
    test = compose()["services"]["worker"]["healthcheck"]["test"]
    assert test == ["CMD", "logomesh", "worker", "--check"]


def test_web_health_check_hits_a_promised_route() -> None:
    test = " ".join(compose()["services"]["web"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/readyz" in test


def test_logomesh_services_are_locked_down() -> None:
    services = compose()["services"]
    for name in LOGOMESH_SERVICES:
        service = services[name]
        assert service["read_only"] is True, name
        assert service["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in service["security_opt"], name
        assert not service.get("privileged", False), name
        assert service["env_file"] == ".env", name
        assert service["command"][0] in {"serve", "worker"}, name
    assert services["web"]["command"] == ["serve"]
    assert services["worker"]["command"] == ["worker"]
    assert services["web"]["ports"] == ["${LOGOMESH_WEB_PORT:-8000}:8000"]


def test_secrets_are_mounted_files_not_values() -> None:
    data = compose()
    declared = data["secrets"]
    for name, service in data["services"].items():
        for secret in service.get("secrets", []):
            source = secret if isinstance(secret, str) else secret["source"]
            assert source in declared, f"{name} uses undeclared secret {source}"
        for key, value in _environment(service).items():
            if any(word in key for word in ("SECRET", "PASSWORD", "PRIVATE_KEY")) and not key.endswith(
                ("_PATH", "_FILE")
            ):
                pytest.fail(f"{name} carries {key}={value!r} inline")
    for secret in declared.values():
        assert set(secret) == {"file"} and secret["file"].startswith("./secrets/")
    worker_env = _environment(data["services"]["worker"])
    assert worker_env["LOGOMESH_PRIVATE_KEY_PATH"] == "/run/secrets/github_app_private_key"
    assert "github_app_private_key" in data["services"]["worker"]["secrets"]
    # least privilege: the receiver never holds the App's private key
    assert "github_app_private_key" not in data["services"]["web"].get("secrets", [])
    assert _environment(data["services"]["postgres"])["POSTGRES_PASSWORD_FILE"].startswith("/run/secrets/")


def test_postgres_keeps_its_data_in_a_volume() -> None:
    data = compose()
    volumes = _volumes(data["services"]["postgres"])
    assert any(v.endswith(":/var/lib/postgresql/data") and v.split(":")[0] in data["volumes"] for v in volumes)


def test_images_are_pinned() -> None:
    for name, service in compose()["services"].items():
        image = service["image"]
        tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
        assert tag and tag != "latest" and tag[0].isdigit(), f"{name}: {image}"


def test_env_example_names_every_setting_the_deployment_needs() -> None:
    env = env_example()
    assert set(env) >= REQUIRED_SETTINGS
    assert all(name.startswith("LOGOMESH_") for name in env)
    assert env["LOGOMESH_DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert "@postgres:5432/" in env["LOGOMESH_DATABASE_URL"]
    assert env["LOGOMESH_REDIS_URL"].startswith("redis://redis:6379/")
    assert env["LOGOMESH_PRIVATE_KEY_PATH"].startswith("/run/secrets/")


def test_env_example_values_are_accepted_by_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from app.settings import Settings

    monkeypatch.chdir(tmp_path)  # no stray .env
    for name, value in env_example().items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert str(settings.home) == "/var/lib/logomesh"
    for field in ("redis_url", "database_url", "public_url", "app_id"):
        if field in Settings.model_fields:
            assert str(getattr(settings, field)) == env_example()[f"LOGOMESH_{field.upper()}"].rstrip("/")


# --- docker-compose config -----------------------------------------------------------------------------------

def _compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    pytest.skip("neither docker-compose nor the docker compose plugin is installed (scripts/setup.sh installs it)")


def _project(tmp_path: Path, compose_text: str | None = None) -> Path:
    project = tmp_path / "deploy"
    project.mkdir()
    (project / "compose.yaml").write_text(compose_text or (DEPLOY / "compose.yaml").read_text(), encoding="utf-8")
    shutil.copy(DEPLOY / ".env.example", project / ".env")
    return project


def _config(project: Path, *files: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [*_compose_command()]
    for name in ("compose.yaml", *files):
        argv += ["-f", name]
    return subprocess.run([*argv, "config"], cwd=project, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_docker_compose_config_accepts_the_file(tmp_path: Path) -> None:
    result = _config(_project(tmp_path))
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    worker_env = resolved["services"]["worker"]["environment"]
    # the .env file reached the services, and the service's own values win over it
    assert worker_env["LOGOMESH_DATABASE_URL"] == env_example()["LOGOMESH_DATABASE_URL"]
    assert worker_env["DOCKER_HOST"] == "tcp://dind:2376"
    assert "DOCKER_HOST" not in resolved["services"]["web"]["environment"]
    assert resolved["services"]["worker"]["deploy"]["replicas"] >= 2
    assert resolved["services"]["web"]["ports"] == [{"published": 8000, "target": 8000}]


def test_the_published_web_port_can_be_moved(tmp_path: Path) -> None:
    result = _config(_project(tmp_path), env={"LOGOMESH_WEB_PORT": "18080"})
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["services"]["web"]["ports"] == [{"published": 18080, "target": 8000}]


def test_the_offline_file_swaps_images_and_build_arguments_only(tmp_path: Path) -> None:
    """deploy/compose.offline.yaml names the base images `logomesh deploy build-images` makes; everything else
    (networks, volumes, secrets, settings, privileges) is deploy/compose.yaml's."""
    from app.deploy_images import IMAGES

    project = _project(tmp_path)
    shutil.copy(DEPLOY / "compose.offline.yaml", project / "compose.offline.yaml")
    shipped, offline = _config(project), _config(project, "compose.offline.yaml")
    assert shipped.returncode == 0 and offline.returncode == 0, offline.stderr
    before, after = yaml.safe_load(shipped.stdout), yaml.safe_load(offline.stdout)
    images = {name: after["services"][name]["image"] for name in ("redis", "postgres", "dind")}
    assert images == {"redis": IMAGES["redis"].tag, "postgres": IMAGES["postgres"].tag,
                      "dind": IMAGES["engine"].tag}
    for name in ("web", "worker"):
        args = after["services"][name]["build"]["args"]
        assert args["BASE_IMAGE"] == IMAGES["python"].tag and args["RUNTIME_PACKAGES"] == ""
        assert after["services"][name]["image"] == before["services"][name]["image"]
    for data in (before, after):  # merging two files reorders lists and spells an empty network {} (not null)
        for name, service in data["services"].items():
            service.pop("build", None)
            if name in images:
                service.pop("image")
            service["volumes"] = sorted(service.get("volumes", []), key=str)
            service["networks"] = {net: options or {} for net, options in service.get("networks", {}).items()}
    assert before == after


def test_docker_compose_config_rejects_a_broken_file(tmp_path: Path) -> None:
    broken = (DEPLOY / "compose.yaml").read_text().replace("    command: [\"serve\"]", "    comand: [\"serve\"]")
    assert "comand" in broken
    result = _config(_project(tmp_path, broken))
    assert result.returncode != 0
    assert "comand" in result.stderr
