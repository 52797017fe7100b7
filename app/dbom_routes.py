"""Public DBOM routes, served when the ledger (``app.ledger``) is part of the build::

    GET /dbom/{id}                  the signed record, its raw evaluation and inclusion proof (JSON)
    GET /dbom/{id}.html             the same for people following the PR comment's link
    GET /.well-known/logomesh/keys  the ledger's public keys, to verify signatures offline

The ledger is opened in the web app's lifespan (``app.state.ledger``); without it these routes answer 503.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.settings import Settings

RECORD_ID = re.compile(r"^[A-Za-z0-9_-]{8,128}$")


async def open_ledger_if_built(settings: Settings) -> Any:
    try:
        from app.ledger import open_ledger  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return await open_ledger(settings)


async def _record(request: Request) -> tuple[Any, Any, dict[str, Any]] | Response:
    ledger = getattr(request.app.state, "ledger", None)
    if ledger is None:
        return JSONResponse({"error": "the DBOM ledger is not part of this build"}, status_code=503)
    record_id = request.path_params["record_id"]
    if not RECORD_ID.match(record_id):
        return JSONResponse({"error": "no such record"}, status_code=404)
    record = await ledger.get(record_id)
    if record is None:
        return JSONResponse({"error": "no such record"}, status_code=404)
    from app.ledger import RecordNotFound  # type: ignore[import-not-found,unused-ignore]

    try:
        proof = await ledger.proof(record_id)
    except RecordNotFound:
        proof = None  # appended but not yet in a signed tree head
    return ledger, record, proof


async def dbom_json(request: Request) -> Response:
    found = await _record(request)
    if isinstance(found, Response):
        return found
    from app.ledger import render_dbom_json  # type: ignore[import-not-found,unused-ignore]

    return JSONResponse(render_dbom_json(found[1], found[2]))


async def dbom_html(request: Request) -> Response:
    found = await _record(request)
    if isinstance(found, Response):
        return found
    from app.ledger import render_dbom_html  # type: ignore[import-not-found,unused-ignore]

    return HTMLResponse(render_dbom_html(found[1], found[2]),
                        headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})


async def public_keys(request: Request) -> Response:
    ledger = getattr(request.app.state, "ledger", None)
    if ledger is None:
        return JSONResponse({"error": "the DBOM ledger is not part of this build"}, status_code=503)
    return JSONResponse({"keys": ledger.public_keys()})


def dbom_routes() -> list[BaseRoute]:
    return [
        Route("/dbom/{record_id}.html", dbom_html, methods=["GET"]),
        Route("/dbom/{record_id}", dbom_json, methods=["GET"]),
        Route("/.well-known/logomesh/keys", public_keys, methods=["GET"]),
    ]
