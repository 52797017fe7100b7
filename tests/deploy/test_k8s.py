"""deploy/k8s: every manifest validates against the official Kubernetes JSON schemas (kubernetes-validate,
which bundles them, strict: unknown fields are errors), and the objects fit together: probes hit routes the
app promises, selectors match, references resolve, containers are locked down, the HPA scales the worker on
queue depth, and Docker is reachable only from the worker pod.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES_VERSION = "1.30.0"
# The HTTP routes the App promises (app/receiver/asgi.py, the ledger's /dbom and /.well-known, the metrics endpoint).
PROMISED_ROUTES = ("/healthz", "/readyz", "/webhook", "/metrics", "/dbom", "/.well-known")
SIDE_CAR = "dind"

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate (dev extra)")


def kustomization() -> dict[str, Any]:
    data = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for name in kustomization()["resources"]:
        for doc in yaml.safe_load_all((K8S / name).read_text(encoding="utf-8")):
            if doc:
                docs.append(doc)
    return docs


def find(kind: str, name: str) -> dict[str, Any]:
    matches = [d for d in documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


def deployments() -> list[dict[str, Any]]:
    return [d for d in documents() if d["kind"] == "Deployment"]


def containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    spec = deployment["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def validate(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


# --- schemas -------------------------------------------------------------------------------------------------

def test_kustomization_lists_every_manifest() -> None:
    listed = set(kustomization()["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk
    assert kustomization()["namespace"] == "logomesh"


def test_every_manifest_validates_against_the_kubernetes_schemas() -> None:
    docs = documents()
    kinds = {d["kind"] for d in docs}
    assert kinds >= {"Namespace", "ConfigMap", "Secret", "Deployment", "Service", "Ingress",
                     "HorizontalPodAutoscaler", "PodDisruptionBudget"}
    for doc in docs:
        validate(doc)
        assert doc["metadata"].get("namespace", "logomesh") == "logomesh"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(readinesProbe={}),
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(ports=[{"containerPort": "http"}]),
        lambda d: d["spec"].pop("selector"),
    ],
    ids=["unknown-field", "wrong-type", "missing-required"],
)
def test_the_schema_check_rejects_a_broken_deployment(mutate: Any) -> None:
    broken = copy.deepcopy(find("Deployment", "logomesh-web"))
    mutate(broken)
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)


def test_extras_are_valid_yaml_for_prometheus_adapter() -> None:
    values = yaml.safe_load((K8S / "extras" / "prometheus-adapter-values.yaml").read_text(encoding="utf-8"))
    rule = values["rules"]["external"][0]
    assert rule["name"]["as"] == metric_name()
    assert metric_name() in rule["seriesQuery"]


# --- probes and routes ---------------------------------------------------------------------------------------

def _probes(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in container.items() if k.endswith("Probe")}


def test_every_http_probe_path_is_a_promised_route() -> None:
    for deployment in deployments():
        for container in containers(deployment):
            for kind, probe in _probes(container).items():
                if "httpGet" in probe:
                    assert probe["httpGet"]["path"] in PROMISED_ROUTES, (container["name"], kind)


def test_web_probes() -> None:
    web = find("Deployment", "logomesh-web")
    (container,) = containers(web)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    port_names = {p["name"] for p in container["ports"]}
    assert container["readinessProbe"]["httpGet"]["port"] in port_names
    assert container["args"] == ["serve"]


def test_worker_probes_liveness_by_arq_and_readiness_by_its_own_start_up() -> None:
    worker = next(c for c in containers(find("Deployment", "logomesh-worker")) if c["name"] == "worker")
    assert worker["livenessProbe"]["exec"]["command"] == ["logomesh", "worker", "--check"]
    # ready when this pod's start-up is done (its model loaded), not when some worker somewhere is alive
    assert worker["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in worker["ports"]}
    assert ports[worker["readinessProbe"]["httpGet"]["port"]] == 9101
    assert worker["args"] == ["worker"]


def test_ingress_exposes_only_public_routes() -> None:
    ingress = find("Ingress", "logomesh")
    service = find("Service", "logomesh-web")
    service_ports = {p["name"] for p in service["spec"]["ports"]}
    paths = []
    for rule in ingress["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            paths.append(path["path"])
            backend = path["backend"]["service"]
            assert backend["name"] == "logomesh-web"
            assert backend["port"]["name"] in service_ports
    assert sorted(paths) == ["/.well-known", "/dbom", "/webhook"]
    assert all(p in PROMISED_ROUTES for p in paths)


def test_probe_paths_exist_in_the_real_app_when_it_is_there() -> None:
    web = pytest.importorskip("app.receiver.asgi",
                              reason="the web receiver (app/receiver/asgi.py) is not on this branch")
    create_app = getattr(web, "create_app", None)
    if create_app is None:
        pytest.skip("app.receiver.asgi has no create_app")
    from app.settings import load_settings

    app = create_app(load_settings(webhook_secret="x" * 32))
    paths = {getattr(route, "path", None) for route in app.routes}
    for path in ("/healthz", "/readyz", "/webhook"):
        assert path in paths


# --- wiring --------------------------------------------------------------------------------------------------

def test_selectors_match_pod_labels() -> None:
    for deployment in deployments():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    web_labels = find("Deployment", "logomesh-web")["spec"]["template"]["metadata"]["labels"]
    assert find("Service", "logomesh-web")["spec"]["selector"].items() <= web_labels.items()
    for pdb in (d for d in documents() if d["kind"] == "PodDisruptionBudget"):
        selector = pdb["spec"]["selector"]["matchLabels"]
        matching = [d for d in deployments() if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(matching) == 1, pdb["metadata"]["name"]


def test_references_resolve() -> None:
    secrets = {d["metadata"]["name"]: d for d in documents() if d["kind"] == "Secret"}
    configmaps = {d["metadata"]["name"]: d for d in documents() if d["kind"] == "ConfigMap"}
    for deployment in deployments():
        spec = deployment["spec"]["template"]["spec"]
        for volume in spec.get("volumes", []):
            assert "hostPath" not in volume, "no host paths (the Docker socket above all)"
            if "secret" in volume:
                secret = secrets[volume["secret"]["secretName"]]
                for item in volume["secret"].get("items", []):
                    assert item["key"] in secret["stringData"]
        for container in containers(deployment):
            for source in container.get("envFrom", []):
                assert source["configMapRef"]["name"] in configmaps
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref and not ref.get("optional"):
                    assert ref["key"] in secrets[ref["name"]]["stringData"], ref
            mounts = {m["name"] for m in container.get("volumeMounts", [])}
            assert mounts <= {v["name"] for v in spec.get("volumes", [])}


def test_settings_are_logomesh_variables() -> None:
    data = find("ConfigMap", "logomesh-config")["data"]
    for name in data:
        assert name.startswith("LOGOMESH_") or name in {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}, name
    for required in ("LOGOMESH_REDIS_URL", "LOGOMESH_APP_ID", "LOGOMESH_PUBLIC_URL", "LOGOMESH_HOME",
                     "LOGOMESH_PRIVATE_KEY_PATH"):
        assert required in data
    # secrets never sit in the ConfigMap
    assert not any(word in name for name in data for word in ("SECRET", "PASSWORD", "DATABASE_URL"))
    worker = next(c for c in containers(find("Deployment", "logomesh-worker")) if c["name"] == "worker")
    key_dir = data["LOGOMESH_PRIVATE_KEY_PATH"].rsplit("/", 1)[0]
    assert any(m["mountPath"] == key_dir and m.get("readOnly") for m in worker["volumeMounts"])


# --- security ------------------------------------------------------------------------------------------------

def test_logomesh_containers_are_locked_down() -> None:
    for deployment in deployments():
        pod = deployment["spec"]["template"]["spec"]
        assert pod.get("automountServiceAccountToken") is False
        for container in containers(deployment):
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]) and {"cpu", "memory"} <= set(resources["limits"])
            if container["name"] == SIDE_CAR:
                continue
            context = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
            assert context.get("runAsNonRoot") is True, container["name"]
            assert context.get("readOnlyRootFilesystem") is True, container["name"]
            assert context.get("allowPrivilegeEscalation") is False, container["name"]
            assert context["capabilities"]["drop"] == ["ALL"], container["name"]
            assert not context.get("privileged", False)
            assert context.get("runAsUser", 1) != 0


def test_docker_is_reachable_only_from_the_worker_pod() -> None:
    web = find("Deployment", "logomesh-web")
    assert all(c["name"] != SIDE_CAR for c in containers(web))
    assert all(e["name"] != "DOCKER_HOST" for c in containers(web) for e in c.get("env", []))
    assert "DOCKER_HOST" not in find("ConfigMap", "logomesh-config")["data"]
    worker = find("Deployment", "logomesh-worker")
    by_name = {c["name"]: c for c in containers(worker)}
    env = {e["name"]: e.get("value") for e in by_name["worker"]["env"]}
    assert env["DOCKER_HOST"] == "tcp://127.0.0.1:2375"
    # dockerd listens on the pod's loopback only: nothing outside the pod reaches it
    assert "--host=tcp://127.0.0.1:2375" in by_name[SIDE_CAR]["args"]
    assert "ports" not in by_name[SIDE_CAR]
    assert not any(s["kind"] == "Service" and s["spec"]["selector"].get("app.kubernetes.io/component") == "worker"
                   for s in documents())


# --- autoscaling ---------------------------------------------------------------------------------------------

def metric_name() -> str:
    hpa = find("HorizontalPodAutoscaler", "logomesh-worker")
    (metric,) = hpa["spec"]["metrics"]
    return str(metric["external"]["metric"]["name"])


def test_hpa_scales_the_worker_on_queue_depth() -> None:
    hpa = find("HorizontalPodAutoscaler", "logomesh-worker")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "logomesh-worker")
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External"
    assert metric_name() == "logomesh_queue_depth"
    assert metric["external"]["target"]["type"] == "AverageValue"
    assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    # the web receiver is not autoscaled on queue depth
    hpas = [d for d in documents() if d["kind"] == "HorizontalPodAutoscaler"]
    assert [h["spec"]["scaleTargetRef"]["name"] for h in hpas] == ["logomesh-worker"]


def test_the_runtimeclass_overlay_runs_the_worker_pods_under_a_runtimeclass() -> None:
    """deploy/k8s-runtimeclass: the base plus a RuntimeClass (Kata by default), the worker pods bound to it;
    built by kustomize (kubectl's) and every object valid against the schemas."""
    import shutil
    import subprocess

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with kustomize) is not installed")
    built = subprocess.run([kubectl, "kustomize", str(ROOT / "deploy" / "k8s-runtimeclass")], check=True,
                           capture_output=True, text=True, timeout=120).stdout
    docs = [d for d in yaml.safe_load_all(built) if d]
    for doc in docs:
        validate(doc)
    (runtime_class,) = [d for d in docs if d["kind"] == "RuntimeClass"]
    assert runtime_class["handler"] in ("kata", "kata-qemu", "kata-clh", "kata-fc", "sysbox-runc", "runsc")
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    assert pods["logomesh-worker"]["runtimeClassName"] == runtime_class["metadata"]["name"]
    assert "runtimeClassName" not in pods["logomesh-web"], "only the pods that run PR code need the VM"
    assert len(docs) == len(documents()) + 1, "the base, unchanged but for the worker, plus the RuntimeClass"
