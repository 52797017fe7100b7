"""Public DBOM routes, served when the ledger (``app.ledger``) is part of the build::

    GET /dbom/{id}                  the signed record, its raw evaluation and inclusion proof (JSON)
    GET /dbom/{id}.html             the same for people following the PR comment's link
    GET /.well-known/logomesh/keys  the ledger's public keys, to verify signatures offline

The ledger is opened in the web app's lifespan (``app.state.ledger``); without it these routes answer 503.
A 404 or 503 is a styled HTML page (``app.receiver.pages``) for ``.html`` paths and for clients that prefer HTML (a
browser following a link); JSON otherwise.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.receiver.pages import error_page, html_response, wants_html
from app.settings import Settings

RECORD_ID = re.compile(r"^[A-Za-z0-9_-]{8,128}$")


async def open_ledger_if_built(settings: Settings) -> Any:
    try:
        from app.ledger import open_ledger  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return await open_ledger(settings)


def _unavailable(html: bool) -> Response:
    if html:
        return error_page(503, "The audit records are not available here",
                          "This server was started without its DBOM ledger (the database could not be opened, or "
                          "the ledger is not part of this build). Try again later; if it persists, tell the "
                          "people who run this LogoMesh server.")
    return JSONResponse({"error": "the DBOM ledger is not part of this build"}, status_code=503)


def _not_found(html: bool) -> Response:
    if html:
        return error_page(404, "No such audit record",
                          "There is no Decision Bill of Materials with this id on this server. Check the link "
                          "in the pull request's comment or check run: the id is the part after /dbom/.")
    return JSONResponse({"error": "no such record"}, status_code=404)


async def _record(request: Request, html: bool) -> tuple[Any, Any, dict[str, Any]] | Response:
    ledger = getattr(request.app.state, "ledger", None)
    if ledger is None:
        return _unavailable(html)
    record_id = request.path_params["record_id"]
    if not RECORD_ID.match(record_id):
        return _not_found(html)
    record = await ledger.get(record_id)
    if record is None:
        return _not_found(html)
    from app.ledger import RecordNotFound  # type: ignore[import-not-found,unused-ignore]

    try:
        proof = await ledger.proof(record_id)
    except RecordNotFound:
        proof = None  # appended but not yet in a signed tree head
    return ledger, record, proof


async def dbom_json(request: Request) -> Response:
    found = await _record(request, wants_html(request))
    if isinstance(found, Response):
        return found
    from app.ledger import render_dbom_json  # type: ignore[import-not-found,unused-ignore]

    return JSONResponse(render_dbom_json(found[1], found[2]))


def github_web_url(request: Request) -> str:
    """GitHub's web address for the report's links: the served settings' (github.com or a GHES host)."""
    settings = getattr(request.app.state, "settings", None)
    web = getattr(settings, "github_web_url", None)
    return web if isinstance(web, str) and web else "https://github.com"


async def dbom_html(request: Request) -> Response:
    found = await _record(request, True)
    if isinstance(found, Response):
        return found
    from app.ledger import render_dbom_html  # type: ignore[import-not-found,unused-ignore]

    return html_response(render_dbom_html(found[1], found[2], web_url=github_web_url(request)))


async def public_keys(request: Request) -> Response:
    ledger = getattr(request.app.state, "ledger", None)
    if ledger is None:
        return _unavailable(wants_html(request))
    return JSONResponse({"keys": ledger.public_keys()})


def dbom_routes() -> list[BaseRoute]:
    return [
        Route("/dbom/{record_id}.html", dbom_html, methods=["GET"]),
        Route("/dbom/{record_id}", dbom_json, methods=["GET"]),
        Route("/.well-known/logomesh/keys", public_keys, methods=["GET"]),
    ]
