"""The shell of every page a person opens in a browser: the DBOM report, ``/setup`` and the error pages.

One small inline stylesheet, a header and a footer; no scripts, no external resources (the pages are served
under :data:`CSP`). ``page_html`` is pure text, so the ledger's renderer can use it without a web server::

    page_html(title, body)                        a whole document around ``body`` (trusted HTML)
    html_page(title, body, status=200)            the same as a Starlette response, with the security headers
    html_response(document, status=200)           any whole document (the DBOM report) with those headers
    error_page(status, title, message)            a styled error: what went wrong and what to do (``link=``)
    wants_html(request)                           whether the client prefers HTML to JSON (a browser does)

Callers escape everything they put into ``body``; ``title`` and ``message`` are escaped here.
"""

from __future__ import annotations

from html import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse

CSP = "default-src 'none'; style-src 'unsafe-inline'"
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}

STYLE = (
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;"
    "color:#1f2328;background:#f6f8fa}"
    "header.top{background:#24292f;color:#fff;padding:.5rem 1rem}"
    "header.top b{font-size:15px;letter-spacing:.02em}header.top span{color:#c9d1d9;margin-left:.75rem}"
    "main{box-sizing:border-box;max-width:68rem;margin:1rem auto;padding:.75rem 1.5rem 1rem;background:#fff;"
    "border:1px solid #d0d7de;border-radius:6px}"
    "footer{max-width:68rem;margin:0 auto 2rem;padding:0 1.5rem;color:#59636e;font-size:12px}"
    "h1{font-size:1.5rem;margin:.3rem 0 .4rem}"
    "h2{font-size:1.1rem;margin:1.4rem 0 .4rem;padding-bottom:.2rem;border-bottom:1px solid #d0d7de}"
    "p{margin:.4rem 0}ul,ol{margin:.3rem 0;padding-left:1.5rem}"
    "table{border-collapse:collapse;width:100%;margin:.3rem 0 .8rem;font-size:13px}"
    "th,td{border:1px solid #d0d7de;padding:.2rem .45rem;text-align:left;vertical-align:top}"
    "th{background:#f6f8fa;font-weight:600}table.kv th{width:14rem}"
    "td.num{text-align:right;white-space:nowrap}td.wrap{word-break:break-word}"
    "code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}"
    "pre{white-space:pre-wrap;background:#f6f8fa;padding:.5rem;border-radius:6px}"
    "a{color:#0969da}.links a{margin-right:1rem}"
    ".muted{color:#59636e}.legend{color:#59636e;font-size:12px;margin-top:-.4rem}"
    ".pass{color:#1a7f37}.neutral{color:#9a6700}.fail{color:#cf222e}"
    ".sev-critical,.sev-high{color:#cf222e;font-weight:600}.sev-medium{color:#9a6700}.sev-info{color:#59636e}"
    ".veto{color:#cf222e;font-weight:600}"
    ".note{background:#fff8c5;border:1px solid #d4a72c;padding:.5rem .75rem;border-radius:6px;margin:.6rem 0}"
    ".error{background:#ffebe9;border:1px solid #ff8182;padding:.5rem .75rem;border-radius:6px;margin:.6rem 0}"
    "button{font:inherit;font-weight:600;color:#fff;background:#1f883d;border:1px solid #1a7f37;"
    "border-radius:6px;padding:.4rem 1rem;cursor:pointer}"
    "button.secondary{color:#24292f;background:#f6f8fa;border-color:#d0d7de}"
    "input{font:inherit;padding:.25rem .4rem;border:1px solid #d0d7de;border-radius:6px}"
    "form{margin:.5rem 0}"
)

FOOTER = ("LogoMesh reviews pull requests for contextual integrity. This page loads no scripts and no external "
          "resources.")


def page_html(title: str, body: str, *, section: str = "") -> str:
    """A whole HTML document: ``title`` (escaped) in the tab, ``section`` (escaped) in the header, ``body``
    (trusted, already escaped HTML) in the main column."""
    label = f"<span>{escape(section)}</span>" if section else ""
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<header class=\"top\"><b>LogoMesh</b>{label}</header>"
        f"<main>{body}</main><footer>{escape(FOOTER)}</footer></body></html>"
    )


def html_response(document: str, *, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    """A whole HTML document as a response, under :data:`CSP` and the other :data:`HEADERS`."""
    return HTMLResponse(document, status_code=status, headers={**HEADERS, **(headers or {})})


def html_page(title: str, body: str, *, status: int = 200, section: str = "",
              headers: dict[str, str] | None = None) -> HTMLResponse:
    return html_response(page_html(title, body, section=section), status=status, headers=headers)


def error_page(status: int, title: str, message: str, *, link: tuple[str, str] | None = None) -> HTMLResponse:
    """A styled error page with the status code: ``title`` says what went wrong, ``message`` what to do, and
    ``link`` (a trusted href and its label) where to go next."""
    go = f"<p><a href=\"{escape(link[0])}\">{escape(link[1])}</a></p>" if link else ""
    body = (f"<h1>{escape(title)}</h1><p class=\"error\">{escape(message)}</p>{go}"
            f"<p class=\"muted\">HTTP {int(status)}</p>")
    return html_page(f"{title} — LogoMesh", body, status=status, headers={"Cache-Control": "no-store"})


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                return max(0.0, min(1.0, float(value)))
            except ValueError:
                return 0.0
    return 1.0


def wants_html(request: Request) -> bool:
    """True when the ``Accept`` header ranks ``text/html`` above JSON (a browser's does; ``*/*`` does not)."""
    html = json = 0.0
    for entry in request.headers.get("accept", "").split(",")[:50]:
        media, *params = entry.split(";")
        media = media.strip().lower()
        q = _quality(params)
        if media in ("text/html", "application/xhtml+xml"):
            html = max(html, q)
        elif media in ("application/json", "application/*", "*/*"):
            json = max(json, q)
    return html > json
