"""The GitHub App manifest flow (as Probot does it): ``GET /setup`` → GitHub → ``GET /setup/callback``.

``/setup`` shows one button that posts ``app.yml`` (URLs filled from ``LOGOMESH_PUBLIC_URL``) to GitHub's
"new app" page (``LOGOMESH_GITHUB_WEB_URL``: github.com or a GHES host; ``?org=NAME`` registers it on an org).
GitHub redirects back with a one-time ``code`` that ``POST /app-manifests/{code}/conversions`` exchanges for
the App's id, private key and webhook secret, which are written to ``.env`` (mode 0600).
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

import httpx
import yaml
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.settings import Settings

MANIFEST_FILE = Path(__file__).resolve().parent.parent / "app.yml"
ORG_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


def load_manifest(settings: Settings, path: Path = MANIFEST_FILE) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    base = settings.public_url or f"http://{settings.host}:{settings.port}"
    manifest["hook_attributes"] = {**manifest.get("hook_attributes", {}), "url": f"{base}/webhook"}
    manifest["redirect_url"] = f"{base}/setup/callback"
    manifest["setup_url"] = f"{base}/setup"
    manifest["url"] = manifest.get("url") or base
    return manifest


def env_lines(data: dict[str, Any], settings: Settings) -> str:
    pem = str(data["pem"]).strip().replace("\n", "\\n")
    return "".join([
        f"LOGOMESH_APP_ID={int(data['id'])}\n",
        f'LOGOMESH_PRIVATE_KEY="{pem}"\n',
        f"LOGOMESH_WEBHOOK_SECRET={data['webhook_secret']}\n",
        f"LOGOMESH_GITHUB_API_URL={settings.github_api_url}\n",
        f"LOGOMESH_PUBLIC_URL={settings.public_url or ''}\n",
    ])


def manifest_routes(settings: Settings, env_path: Path = Path(".env")) -> list[BaseRoute]:
    states: set[str] = set()

    async def setup(request: Request) -> Response:
        org = request.query_params.get("org", "")
        if org and not ORG_NAME.match(org):
            return JSONResponse({"error": "bad org name"}, status_code=400)
        state = secrets.token_urlsafe(24)
        states.add(state)
        target = (f"{settings.github_web_url}/organizations/{org}/settings/apps/new" if org
                  else f"{settings.github_web_url}/settings/apps/new")
        manifest = html.escape(json.dumps(load_manifest(settings)), quote=True)
        page = (f"<!doctype html><title>LogoMesh setup</title><h1>Register LogoMesh on GitHub</h1>"
                f'<form action="{html.escape(target)}?state={state}" method="post">'
                f'<input type="hidden" name="manifest" value="{manifest}">'
                f'<button type="submit">Create the GitHub App{" on " + html.escape(org) if org else ""}</button>'
                f"</form>")
        return HTMLResponse(page)

    async def callback(request: Request) -> Response:
        code = request.query_params.get("code", "")
        state = request.query_params.get("state", "")
        if state not in states:
            return JSONResponse({"error": "unknown state: start again at /setup"}, status_code=400)
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,100}", code):
            return JSONResponse({"error": "missing or malformed code"}, status_code=400)
        states.discard(state)
        async with httpx.AsyncClient(timeout=settings.github_timeout_seconds) as client:
            answer = await client.post(f"{settings.github_api_url}/app-manifests/{code}/conversions",
                                       headers={"Accept": "application/vnd.github+json"})
        if answer.status_code != 201:
            return JSONResponse({"error": f"GitHub refused the code ({answer.status_code})"}, status_code=502)
        data = answer.json()
        fd = os.open(env_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(env_lines(data, settings))
        return HTMLResponse(f"<!doctype html><h1>LogoMesh is registered</h1><p>App id {int(data['id'])} saved to "
                            f"<code>{html.escape(str(env_path))}</code>. Restart <code>logomesh serve</code> and "
                            f"<code>logomesh worker</code>, then install the App: "
                            f'<a href="{html.escape(str(data.get("html_url", "")))}/installations/new">install</a>.'
                            f"</p>")

    return [Route("/setup", setup, methods=["GET"]), Route("/setup/callback", callback, methods=["GET"])]
