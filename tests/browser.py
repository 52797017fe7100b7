"""What a person sees: Markdown rendered as GitHub renders it, and pages measured in headless Chromium.

``gfm_to_html`` runs ``cmark-gfm`` with GitHub's extensions (tables, strikethrough, autolinks, the tag filter);
``github_page`` wraps the result in GitHub's Markdown stylesheet (``github-markdown-css``, MIT, vendored under
``tests/fixtures/``) at a comment's width; ``measure`` loads a page in Debian's ``chromium`` and reports its height;
``screenshot`` saves a PNG under ``LOGOMESH_TEST_ARTEFACTS`` (default ``.test-artefacts/``) for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CSS = Path(__file__).parent / "fixtures" / "github-markdown-css" / "github-markdown-light.css"
ARTEFACTS = Path(os.environ.get("LOGOMESH_TEST_ARTEFACTS", Path(__file__).parent.parent / ".test-artefacts"))
# A PR comment's text column on github.com at a 1280 px wide window is about 800 px; 980 px is the width
# github-markdown-css is designed for and errs on the short side for heights only when the text wraps less.
COMMENT_WIDTH = 800


def tools_or_skip() -> tuple[str, str]:
    cmark, chromium = shutil.which("cmark-gfm"), shutil.which("chromium")
    if not cmark or not chromium:
        if os.environ.get("LOGOMESH_REQUIRE_BROWSER"):
            pytest.fail("cmark-gfm and chromium are required (scripts/setup.sh installs them)")
        pytest.skip("cmark-gfm or chromium is not installed (scripts/setup.sh installs them)")
    return cmark, chromium


def gfm_to_html(markdown: str) -> str:
    """GitHub-flavoured Markdown to HTML as github.com renders a comment (raw HTML kept, dangerous tags filtered)."""
    cmark, _ = tools_or_skip()
    args = [cmark, "--unsafe", "--github-pre-lang", "--to", "html"]
    for ext in ("table", "strikethrough", "autolink", "tagfilter", "tasklist"):
        args += ["--extension", ext]
    return subprocess.run(args, input=markdown, capture_output=True, text=True, check=True, timeout=30).stdout


def github_page(fragment: str, width: int = COMMENT_WIDTH) -> str:
    """An HTML page showing ``fragment`` as GitHub shows a comment body."""
    return ("<!doctype html><html><head><meta charset='utf-8'><style>"
            + CSS.read_text(encoding="utf-8")
            + f"body{{margin:0}} .markdown-body{{box-sizing:border-box;width:{width}px;padding:16px;"
              "font-size:14px}</style></head><body><article class='markdown-body' id='content'>"
            + fragment + "</article></body></html>")


_MEASURE = ("<script>window.addEventListener('load',()=>{const p=document.createElement('pre');"
            "p.id='logomesh-measure';const c=document.getElementById('content')||document.body;"
            "p.textContent=JSON.stringify({height:Math.ceil(c.getBoundingClientRect().height),"
            "scroll:document.documentElement.scrollHeight});document.body.appendChild(p);});</script>")


def _chromium(args: list[str]) -> subprocess.CompletedProcess[str]:
    _, chromium = tools_or_skip()
    with tempfile.TemporaryDirectory(prefix="logomesh-chromium-") as profile:
        return subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--hide-scrollbars", "--no-first-run", f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=120, check=False)


def measure(html: str, window_width: int = 1280) -> dict[str, int]:
    """The rendered height (px) of the element ``#content`` (or the body) at the given window width."""
    with tempfile.TemporaryDirectory(prefix="logomesh-page-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(html.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
        done = _chromium([f"--window-size={window_width},1000", "--virtual-time-budget=2000", "--dump-dom",
                          page.as_uri()])
    found = re.search(r"<pre id=\"logomesh-measure\">(.*?)</pre>", done.stdout)
    assert found, f"chromium did not render the page: {done.stderr[-2000:]}"
    return {k: int(v) for k, v in json.loads(found.group(1).replace("&quot;", '"')).items()}


_FOLD = ("<script>window.addEventListener('load',()=>{const c=document.getElementById('content')||document.body;"
         "const top=c.getBoundingClientRect().top;const w=document.createTreeWalker(c,NodeFilter.SHOW_TEXT);"
         "const seen=[];const r=document.createRange();while(w.nextNode()){const n=w.currentNode;"
         "if(!n.textContent.trim()||n.parentElement.closest('details:not([open])>:not(summary)'))continue;"
         "r.selectNodeContents(n);const b=r.getBoundingClientRect();if(b.height>0&&b.bottom-top<=FOLD)"
         "seen.push(n.textContent);}const p=document.createElement('pre');p.id='logomesh-fold';"
         "p.textContent=JSON.stringify(seen.join(' '));document.body.appendChild(p);});</script>")


def above_the_fold(html: str, fold: int = 400, window_width: int = 1280) -> str:
    """The text a reader sees in the first ``fold`` px of the page's ``#content`` (whole lines only)."""
    with tempfile.TemporaryDirectory(prefix="logomesh-page-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(html.replace("</body>", _FOLD.replace("FOLD", str(fold)) + "</body>"), encoding="utf-8")
        done = _chromium([f"--window-size={window_width},1000", "--virtual-time-budget=2000", "--dump-dom",
                          page.as_uri()])
    found = re.search(r"<pre id=\"logomesh-fold\">(.*?)</pre>", done.stdout, re.S)
    assert found, f"chromium did not render the page: {done.stderr[-2000:]}"
    import html as html_lib

    text: str = json.loads(html_lib.unescape(found.group(1)))
    return " ".join(text.split())


def dump_dom(url: str) -> str:
    """The DOM of a served page after it loaded (Chromium fetches it like a person's browser)."""
    done = _chromium(["--window-size=1280,1000", "--virtual-time-budget=2000", "--dump-dom", url])
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(url_or_html: str, name: str, height: int = 1400) -> Path:
    """A PNG of a URL (or of an HTML string) saved as a test artefact; returns its path."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTEFACTS / f"{name}.png"
    with tempfile.TemporaryDirectory(prefix="logomesh-page-") as tmp:
        url = url_or_html
        if not url_or_html.startswith(("http://", "https://", "file://")):
            page = Path(tmp) / "page.html"
            page.write_text(url_or_html, encoding="utf-8")
            url = page.as_uri()
        done = _chromium([f"--window-size=1280,{height}", f"--screenshot={out}", url])
    assert out.exists() and out.stat().st_size > 1000, f"no screenshot: {done.stderr[-2000:]}"
    return out


class Node:
    """A parsed HTML element: enough of a DOM to assert a page's structure."""

    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None = None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str) -> list[Node]:
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                if child.tag == tag:
                    found.append(child)
                found += child.find_all(tag)
        return found

    def ancestors(self) -> list[str]:
        out, node = [], self.parent
        while node is not None:
            out.append(node.tag)
            node = node.parent
        return out


_VOID = {"br", "hr", "img", "input", "meta", "link", "col", "area", "base", "embed", "source", "wbr"}


def parse_html(html: str) -> Node:
    from html.parser import HTMLParser

    root = Node("#root", {})

    class Builder(HTMLParser):
        node = root

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            child = Node(tag, dict(attrs), self.node)
            self.node.children.append(child)
            if tag not in _VOID:
                self.node = child

        def handle_endtag(self, tag: str) -> None:
            node: Node | None = self.node
            while node is not None and node.tag != tag:
                node = node.parent
            if node is not None and node.parent is not None:
                self.node = node.parent

        def handle_data(self, data: str) -> None:
            self.node.children.append(data)

    builder = Builder(convert_charrefs=True)
    builder.feed(html)
    return root
