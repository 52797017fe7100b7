"""The App's parts on their own: signature vector, settings errors, the setup flow, token caching, batching."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import structlog.testing
from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event
from typer.testing import CliRunner

from app.cli.main import cli
from app.github import GitHubApp, GitHubNotFound
from app.receiver.manifest import load_manifest
from app.review.assembly import review_repository
from app.settings import Settings, SettingsError, load_settings, require_app_settings
from app.worker.publish import MAX_SUMMARY, Publisher, Target, clip
from app.worker.workspace import CloneSpec, CloneTooLarge, WorkspaceError, _git_env, checkout
from checks.models import Evidence, Location
from tests.app.conftest import INSTALLATION, PR, REPO, SECRET, Harness, ShopRepo
from tests.app.fakegithub import FakeGitHub

DOC_SECRET = "It's a Secret to Everybody"
DOC_PAYLOAD = b"Hello, World!"
DOC_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_documented_signature_vector() -> None:
    validate_event(DOC_PAYLOAD, signature=DOC_SIGNATURE, secret=DOC_SECRET)
    ours = "sha256=" + hmac.new(DOC_SECRET.encode(), DOC_PAYLOAD, hashlib.sha256).hexdigest()
    assert ours == DOC_SIGNATURE
    with pytest.raises(ValidationFailure):
        validate_event(DOC_PAYLOAD + b"\n", signature=DOC_SIGNATURE, secret=DOC_SECRET)


async def test_the_receiver_accepts_the_documented_vector(settings: Settings, tmp_path: Path) -> None:
    from app.receiver.asgi import create_app
    from tests.app.conftest import ServerThread

    doc = settings.model_copy(update={"webhook_secret": __import__("pydantic").SecretStr(DOC_SECRET)})
    with ServerThread(create_app(doc, env_path=tmp_path / ".env")) as url:
        async with httpx.AsyncClient(base_url=url) as client:
            headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "doc-vector"}
            good = await client.post("/webhook", content=DOC_PAYLOAD,
                                     headers={**headers, "X-Hub-Signature-256": DOC_SIGNATURE})
            bad = await client.post("/webhook", content=DOC_PAYLOAD,
                                    headers={**headers, "X-Hub-Signature-256": DOC_SIGNATURE[:-1] + "0"})
    # the signature verifies, then "Hello, World!" is rejected as JSON — not as a forgery
    assert good.status_code == 400 and "JSON" in good.json()["error"]
    assert bad.status_code == 401


async def test_a_rejected_signature_is_logged_without_the_body_or_the_signature(settings: Settings,
                                                                                tmp_path: Path) -> None:
    from app.receiver.asgi import create_app
    from tests.app.conftest import ServerThread

    body = b'{"action": "opened", "secret_looking_body_marker": "sk-do-not-log"}'
    wrong = "sha256=" + hmac.new(b"another-secret", body, hashlib.sha256).hexdigest()
    legacy = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    cases = [("missing", None), ("malformed", legacy), ("mismatch", wrong)]
    with ServerThread(create_app(settings, env_path=tmp_path / ".env")) as url, \
            structlog.testing.capture_logs() as logs:
        async with httpx.AsyncClient(base_url=url) as client:
            for reason, signature in cases:
                headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": f"forged-{reason}"}
                if signature is not None:
                    headers["X-Hub-Signature-256"] = signature
                answer = await client.post("/webhook", content=body, headers=headers)
                assert answer.status_code == 401, answer.text
    rejected = [e for e in logs if e["event"] == "webhook signature rejected"]
    assert [(e["reason"], e["delivery_id"]) for e in rejected] == [(r, f"forged-{r}") for r, _ in cases]
    for entry in rejected:  # these keys and no others: nothing of the body, nothing of the signature
        assert entry == {"event": "webhook signature rejected", "log_level": "warning", "reason": entry["reason"],
                         "delivery_id": entry["delivery_id"], "github_event": "pull_request", "client": "127.0.0.1",
                         "body_bytes": len(body)}
    text = repr(logs)
    assert "sk-do-not-log" not in text and wrong[7:] not in text and legacy[5:] not in text


def test_settings_errors_name_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOGOMESH_APP_ID", "not-a-number")
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert err.value.variable == "LOGOMESH_APP_ID"
    monkeypatch.setenv("LOGOMESH_APP_ID", "12")
    monkeypatch.setenv("LOGOMESH_REDIS_URL", "http://nope")
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert err.value.variable == "LOGOMESH_REDIS_URL"
    monkeypatch.delenv("LOGOMESH_REDIS_URL")
    with pytest.raises(SettingsError) as err:
        require_app_settings(load_settings(), worker=False)
    assert err.value.variable == "LOGOMESH_WEBHOOK_SECRET"
    monkeypatch.setenv("LOGOMESH_WEBHOOK_SECRET", "s")
    with pytest.raises(SettingsError) as err:
        require_app_settings(load_settings(), worker=True)
    assert err.value.variable == "LOGOMESH_PUBLIC_URL"
    monkeypatch.setenv("LOGOMESH_PUBLIC_URL", "https://logomesh.example.com")
    with pytest.raises(SettingsError) as err:
        require_app_settings(load_settings(), worker=True)
    assert err.value.variable == "LOGOMESH_PRIVATE_KEY"
    monkeypatch.setenv("LOGOMESH_PRIVATE_KEY", "-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----")
    with pytest.raises(SettingsError) as err:
        require_app_settings(load_settings(), worker=True)
    assert err.value.variable == "LOGOMESH_PRIVATE_KEY" and "cannot be loaded" in str(err.value)
    monkeypatch.delenv("LOGOMESH_PRIVATE_KEY")
    monkeypatch.setenv("LOGOMESH_PRIVATE_KEY_PATH", str(tmp_path / "absent.pem"))
    with pytest.raises(SettingsError) as err:
        require_app_settings(load_settings(), worker=True)
    assert err.value.variable == "LOGOMESH_PRIVATE_KEY_PATH"


def test_serve_and_worker_refuse_to_start_without_their_settings(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("LOGOMESH_WEBHOOK_SECRET", "LOGOMESH_APP_ID", "LOGOMESH_PRIVATE_KEY", "LOGOMESH_PRIVATE_KEY_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOGOMESH_PUBLIC_URL", "https://logomesh.example.com")
    runner = CliRunner()
    serve = runner.invoke(cli, ["serve"])
    assert serve.exit_code == 2 and "LOGOMESH_WEBHOOK_SECRET" in serve.output
    worker = runner.invoke(cli, ["worker", "--burst"])
    assert worker.exit_code == 2 and "LOGOMESH_APP_ID" in worker.output


async def test_installation_tokens_are_cached_and_refreshed(settings: Settings, github: FakeGitHub) -> None:
    gh = GitHubApp(settings)
    first = await gh.installation_token(INSTALLATION)
    assert await gh.installation_token(INSTALLATION) == first
    assert len(github.posted("apps/create-installation-access-token")) == 1
    gh._tokens[INSTALLATION].expires_at = datetime.now(UTC) + timedelta(minutes=5)  # about to expire
    second = await gh.installation_token(INSTALLATION)
    assert second != first and len(github.posted("apps/create-installation-access-token")) == 2
    with pytest.raises(GitHubNotFound):
        await gh.request(INSTALLATION, "GET", f"/repos/{REPO}/pulls/999")


async def test_annotations_are_batched_fifty_per_request(harness: Harness) -> None:
    h = harness
    evaluation, _prepared = await review_repository(h.repo.work, h.repo.base, h.repo.head, settings=h.settings)
    many = tuple(Evidence(id=f"x.{i}", detective="test", kind="finding", summary=f"finding {i}", severity="medium",
                          location=Location(path="shop/discount.py", line=1 + i)) for i in range(120))
    # a lesser fact off the change's lines is not annotated (a fact to fix is, wherever it is)
    outside = Evidence(id="y", detective="test", kind="finding", summary="not changed", severity="medium",
                       location=Location(path="shop/cart.py", line=1))
    evaluation = evaluation.model_copy(update={"evidence": (*many, outside)})
    publisher = Publisher(GitHubApp(h.settings), "LogoMesh")
    target = Target(INSTALLATION, REPO, PR, h.repo.head)
    run_id = await publisher.start_check_run(target, "logomesh:pr=7:delivery=batch")
    assert await publisher.start_check_run(target, "logomesh:pr=7:delivery=batch") == run_id  # idempotent
    await publisher.finish(target, run_id, evaluation, None, {"shop/discount.py": set(range(1, 121))})
    updates = h.github.posted("checks/update")
    sizes = [len(c.body["output"]["annotations"]) for c in updates]
    assert sizes == [50, 20, 50]  # extra batches first, the completing PATCH last
    assert updates[-1].body["status"] == "completed" and "status" not in updates[0].body
    assert len(h.github.check_runs[run_id]["annotations"]) == 120
    assert all(a["path"] == "shop/discount.py" for a in h.github.check_runs[run_id]["annotations"])


async def test_ghes_base_url_keeps_its_api_prefix(settings: Settings, github: FakeGitHub) -> None:
    ghes = settings.model_copy(update={"github_api_url": f"{github.url}/api/v3"})  # type: ignore[attr-defined]
    gh = GitHubApp(ghes)
    await gh.installation_token(INSTALLATION)
    pr = await gh.request(INSTALLATION, "GET", f"/repos/{REPO}/pulls/{PR}")
    assert pr["number"] == PR and github.ghes_calls == 2


def test_summary_is_clipped_to_githubs_limit() -> None:
    text = "x" * (MAX_SUMMARY + 10)
    clipped = clip(text)
    assert len(clipped) <= MAX_SUMMARY and clipped.endswith("(truncated: the full report is in the DBOM)\n")
    assert clip("short") == "short"


async def test_setup_manifest_flow_writes_the_env(harness: Harness, tmp_path: Path) -> None:
    h = harness
    manifest = load_manifest(h.settings)
    assert manifest["hook_attributes"]["url"] == "https://logomesh.test/webhook"
    assert manifest["default_permissions"]["checks"] == "write"
    async with httpx.AsyncClient(base_url=h.url) as client:
        page = await client.get("/setup", params={"org": "octo"})
        assert page.status_code == 200
        assert f'action="{h.github.url}/organizations/octo/settings/apps/new?state=' in page.text  # type: ignore[attr-defined]
        state = page.text.split("?state=", 1)[1].split('"', 1)[0]
        assert (await client.get("/setup/callback", params={"code": "abc", "state": "forged"})).status_code == 400
        h.github.manifest_codes["code123"] = {"id": 777, "pem": "-----BEGIN RSA PRIVATE KEY-----\nAAA\n-----END RSA "
                                              "PRIVATE KEY-----\n", "webhook_secret": "whsec", "slug": "logomesh",
                                              "html_url": "https://github.com/apps/logomesh"}
        done = await client.get("/setup/callback", params={"code": "code123", "state": state})
        assert done.status_code == 200, done.text
    env = (tmp_path / ".env").read_text()
    assert "LOGOMESH_APP_ID=777\n" in env and "LOGOMESH_WEBHOOK_SECRET=whsec\n" in env
    assert oct((tmp_path / ".env").stat().st_mode & 0o777) == "0o600"
    assert len(h.github.posted("apps/create-from-manifest")) == 1


async def test_clone_is_real_authenticated_and_capped(settings: Settings, github: FakeGitHub, repo: ShopRepo) -> None:
    token = await GitHubApp(settings).installation_token(INSTALLATION)
    url = f"{github.url}/octo/shop.git"  # type: ignore[attr-defined]
    spec = CloneSpec(url=url, head_sha=repo.head, base_sha=repo.base, token=token)
    async with checkout(spec, settings) as cloned:
        assert cloned.resolve(repo.head) == repo.head and cloned.resolve(repo.base) == repo.base
        root = cloned.path
        assert not (root / "shop").exists()  # nothing of the PR is written to disk
    assert not root.exists()
    with pytest.raises(CloneTooLarge):
        async with checkout(spec, settings.model_copy(update={"clone_max_files": 2})):
            pass
    with pytest.raises(WorkspaceError):
        async with checkout(CloneSpec(url, repo.head, repo.base, "ghs_wrong"), settings):
            pass
    with pytest.raises(WorkspaceError, match="credentials"):
        async with checkout(CloneSpec(url.replace("http://", f"http://x-access-token:{token}@"), repo.head,
                                      repo.base, token), settings):
            pass
    env = _git_env("secret-token")
    config = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert env["GIT_LFS_SKIP_SMUDGE"] == "1" and config["core.hooksPath"] == "/dev/null"
    assert config["http.extraheader"].startswith("Authorization: Basic ")
