"""The GitHub App manifest flow (as Probot does it): ``GET /setup`` → GitHub → ``GET /setup/callback``.

``/setup`` is a page that says what will be created (the App named in ``app.yml``, the permissions and events
it asks for, the webhook and callback URLs filled from ``LOGOMESH_PUBLIC_URL``, with a warning when that is
unset), one button that posts the manifest to GitHub's "new app" page (``LOGOMESH_GITHUB_WEB_URL``: github.com
or a GHES host; ``?org=NAME`` registers it on an org), and the steps that follow. GitHub redirects back with a
one-time ``code`` that ``POST /app-manifests/{code}/conversions`` exchanges for the App's id, private key and
webhook secret, which are written to ``.env`` (mode 0600). Every error a person meets here is an HTML page
(``app.receiver.pages``) with its status code and what to do next.
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
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.receiver.pages import error_page, html_page
from app.settings import Settings

MANIFEST_FILE = Path(__file__).resolve().parents[2] / "app.yml"
ORG_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
NO_STORE = {"Cache-Control": "no-store"}  # the setup page holds a one-time state
# relative links back to /setup, right behind a proxy that mounts the App under a path prefix too
AGAIN_FROM_SETUP = ("setup", "Start again at /setup")
AGAIN_FROM_CALLBACK = ("../setup", "Start again at /setup")

# what each permission and event in app.yml is for, shown on /setup (anything else is shown without a reason)
PERMISSION_USE = {
    "checks": "create the LogoMesh check run on a PR's head commit and complete it with the verdict",
    "pull_requests": "read a PR's title, description, commits and changed files; post a review with line "
                     "comments on the lines it changed and mark them fixed on later pushes",
    "issues": "post and update the one LogoMesh comment on a PR (PR comments are issue comments)",
    "contents": "clone the PR's head commit to review it (read only)",
    "metadata": "basic repository information; GitHub requires it of every App",
    "members": "tell whether the person commenting /recheck may ask for a new review",
}
EVENT_USE = {
    "pull_request": "a PR is opened, reopened or gets new commits: a review",
    "issue_comment": "someone comments /recheck on a PR: a new review",
    "check_run": "someone presses Re-run on the LogoMesh check",
    "check_suite": "someone presses Re-run all checks",
}


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


def _setup_page(settings: Settings, org: str, state: str, env_path: Path) -> str:
    """The body of ``/setup``: what will be created, where GitHub will call, the button, then what comes next."""
    manifest = load_manifest(settings)
    e = html.escape
    target = (f"{settings.github_web_url}/organizations/{org}/settings/apps/new" if org
              else f"{settings.github_web_url}/settings/apps/new")
    owner = f"the organisation <b>{e(org)}</b>" if org else "your personal account"
    visibility = ("public: anyone can install it" if manifest.get("public")
                  else "private: only the account that owns it can install it")
    permissions = "".join(
        f"<tr><td><code>{e(str(name))}</code></td><td>{e(str(access))}</td>"
        f"<td>{e(PERMISSION_USE.get(str(name), ''))}</td></tr>"
        for name, access in sorted(dict(manifest.get("default_permissions") or {}).items()))
    events = "".join(f"<tr><td><code>{e(str(name))}</code></td><td>{e(EVENT_USE.get(str(name), ''))}</td></tr>"
                     for name in manifest.get("default_events") or [])
    hook = str(manifest["hook_attributes"]["url"])
    urls = "".join(f"<tr><th>{label}</th><td><code>{e(str(value))}</code></td></tr>" for label, value in (
        ("Webhook URL", hook), ("Callback URL", manifest["redirect_url"]), ("Setup URL", manifest["setup_url"]),
        ("Homepage", manifest["url"])))
    warning = "" if settings.public_url else (
        "<p class=\"note\"><b>LOGOMESH_PUBLIC_URL is not set</b>, so these URLs point at "
        f"<code>{e(f'http://{settings.host}:{settings.port}')}</code>, which GitHub cannot reach: webhooks would "
        "never arrive, and only a browser on this machine could follow the callback. Set LOGOMESH_PUBLIC_URL "
        "to the https address where GitHub and people reach this server (a tunnel will do while you try it "
        "out), restart <code>logomesh serve</code> and reload this page.</p>")
    where = ("<p class=\"muted\">Register it on your personal account instead: <a href=\"setup\">/setup</a>.</p>"
             if org else
             "<form method=\"get\" action=\"setup\"><label>Register it on an organisation instead: "
             "<input name=\"org\" placeholder=\"organisation\" maxlength=\"39\" "
             "pattern=\"[A-Za-z0-9][A-Za-z0-9-]{0,38}\"></label> <button class=\"secondary\" type=\"submit\">"
             "Use this organisation"
             "</button></form>")
    posted = e(json.dumps(manifest), quote=True)
    return (
        "<h1>Register LogoMesh on GitHub</h1>"
        f"<p>This creates a GitHub App named <b>{e(str(manifest.get('name', 'LogoMesh')))}</b> on {owner} at "
        f"<code>{e(settings.github_web_url)}</code>. It is {visibility}. "
        f"<span class=\"muted\">{e(str(manifest.get('description', '')))}</span></p>{warning}"
        f"<h2>Where GitHub will call</h2><table class=\"kv\">{urls}</table>"
        "<h2>Permissions it asks for</h2><table id=\"permissions\"><tr><th>Permission</th><th>Access</th>"
        f"<th>What for</th></tr>{permissions}</table>"
        f"<h2>Events it subscribes to</h2><table id=\"events\"><tr><th>Event</th><th>What it starts</th></tr>"
        f"{events}</table>"
        "<h2>Create it</h2>"
        f'<form action="{e(target)}?state={state}" method="post">'
        f'<input type="hidden" name="manifest" value="{posted}">'
        f'<button type="submit">Create the GitHub App{" on " + e(org) if org else ""}</button>'
        f"</form>{where}"
        "<h2>Next steps</h2><ol id=\"next-steps\">"
        "<li>GitHub shows the new App with these settings filled in: check them and confirm with "
        "<b>Create GitHub App</b>.</li>"
        "<li>GitHub sends you back to the callback URL; LogoMesh exchanges the one-time code for the App's id, "
        f"private key and webhook secret and writes them to <code>{e(str(env_path))}</code> (readable by its "
        "owner only).</li>"
        "<li>Restart <code>logomesh serve</code> and <code>logomesh worker</code> so that they read it.</li>"
        "<li>Install the App on an organisation or on the repositories you choose (the page after creation "
        "links to it).</li>"
        "<li>Open a pull request, or comment <code>/recheck</code> on an open one: the LogoMesh check run appears "
        "on its head commit, with one comment that links to the signed audit record.</li></ol>"
    )


def _registered_page(app_id: int, env_path: Path, html_url: str) -> str:
    e = html.escape
    install = (f'<a href="{e(html_url)}/installations/new">install the App</a>'
               if re.fullmatch(r"https?://[^\s\"'<>`]+", html_url) else "install the App from its settings page")
    return ("<h1>LogoMesh is registered</h1>"
            f"<p>App id <b>{app_id}</b>, its private key and webhook secret are saved to "
            f"<code>{e(str(env_path))}</code>.</p><ol>"
            "<li>Restart <code>logomesh serve</code> and <code>logomesh worker</code> so that they read it.</li>"
            f"<li>Then {install} on an organisation or on the repositories you choose.</li>"
            "<li>Open a pull request, or comment <code>/recheck</code> on an open one.</li></ol>")


def manifest_routes(settings: Settings, env_path: Path = Path(".env")) -> list[BaseRoute]:
    states: set[str] = set()

    async def setup(request: Request) -> Response:
        org = request.query_params.get("org", "")
        if org and not ORG_NAME.match(org):
            return error_page(400, "Not an organisation name",
                              "GitHub organisation names are letters, digits and hyphens, up to 39 characters, "
                              "starting with a letter or digit. Correct ?org= in the address, or leave it out to "
                              "register the App on your personal account.", link=AGAIN_FROM_SETUP)
        state = secrets.token_urlsafe(24)
        states.add(state)
        return html_page("Register LogoMesh on GitHub", _setup_page(settings, org, state, env_path),
                         section="Setup", headers=NO_STORE)

    async def callback(request: Request) -> Response:
        code = request.query_params.get("code", "")
        state = request.query_params.get("state", "")
        if state not in states:
            return error_page(400, "This setup link is unknown or has expired",
                              "LogoMesh did not start this registration, or already finished it, or restarted "
                              "since. Nothing was saved. Start again at /setup and press the button once.",
                              link=AGAIN_FROM_CALLBACK)
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,100}", code):
            return error_page(400, "GitHub's one-time code is missing",
                              "The address GitHub sent you back to has no valid code. Nothing was saved. Start "
                              "again at /setup.", link=AGAIN_FROM_CALLBACK)
        states.discard(state)
        try:
            async with httpx.AsyncClient(timeout=settings.github_timeout_seconds) as client:
                answer = await client.post(f"{settings.github_api_url}/app-manifests/{code}/conversions",
                                           headers={"Accept": "application/vnd.github+json"})
        except httpx.HTTPError as exc:
            return error_page(502, "GitHub could not be reached",
                              f"Exchanging the one-time code failed ({type(exc).__name__}). Check that this server "
                              "reaches LOGOMESH_GITHUB_API_URL, then start again at /setup.",
                              link=AGAIN_FROM_CALLBACK)
        if answer.status_code != 201:
            return error_page(502, "GitHub refused the registration",
                              f"GitHub answered {answer.status_code} to the one-time code. Codes work once and "
                              "expire after an hour; nothing was saved. Start again at /setup (if GitHub did "
                              "create the App, delete it in its settings first).", link=AGAIN_FROM_CALLBACK)
        data = answer.json()
        fd = os.open(env_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(env_lines(data, settings))
        return html_page("LogoMesh is registered",
                         _registered_page(int(data["id"]), env_path, str(data.get("html_url", ""))),
                         section="Setup", headers=NO_STORE)

    return [Route("/setup", setup, methods=["GET"]), Route("/setup/callback", callback, methods=["GET"])]
