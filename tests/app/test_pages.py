"""The pages a person opens: the DBOM report, ``/setup`` and the error pages.

The renderer is checked as text (escaping, order, links, an audit record); the served pages through a real
uvicorn server, a real ledger (SQLite) and headless Chromium, which fetches them like a person's browser and hands
back the DOM it built, and saves screenshots under ``.test-artefacts/`` for a person to look at.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.ledger import open_ledger, render_dbom_html
from app.ledger.render import MAX_LIST_ROWS
from app.receiver.asgi import create_app
from app.settings import Settings
from checks.audit.models import AuditResult, Claim, ClaimCheck
from checks.dbom import AuditEntanglement, DbomRecord, Entanglement, build_audit_body, build_body, evaluation_payload
from checks.models import (
    SEVERITY_ORDER,
    CriterionRuling,
    Evaluation,
    Evidence,
    Inputs,
    JudicialOpinion,
    Location,
    RedSummary,
    RubricRef,
    TestCaseResult,
    TestRunResult,
)
from tests.app.conftest import REDIS_URL, SECRET, ServerThread
from tests.browser import dump_dom, screenshot

HEAD = "0123456789abcdef0123456789abcdef01234567"
WEB = "https://ghe.example.com"
HOSTILE_PATH = "<img src=x onerror=alert(1)>.py"
HOSTILE_ARGUMENT = "eval() runs the discount code: <script>alert('judge')</script>"
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def failing_evaluation(repo: str = "octo/shop", *, evidence_rows: int = 0) -> Evaluation:
    """A failing review: a failing test, a KILL, a critical CWE finding, and PR text that tries to be HTML."""
    evidence = [
        Evidence(id="e-info", detective="git_history", kind="commits", summary="2 commits, both described"),
        Evidence(id="e-low", detective="mutation", kind="mutant", summary="changing `2` to `3` is not detected",
                 location=Location(path="shop/cart.py", line=32), severity="low"),
        Evidence(id="e-crit", detective="repo_investigator", kind="banned_call",
                 summary="eval() on the discount code", location=Location(path="shop/discount.py", line=3),
                 severity="critical", cwe="CWE-95"),
        Evidence(id="e-high", detective="diff", kind="hostile", summary="a file named <b>like markup</b>",
                 location=Location(path=HOSTILE_PATH, line=9), severity="high"),
        Evidence(id="e-medium", detective="test_runner", kind="failing", summary="1 of 2 tests fail",
                 severity="medium"),
    ]
    evidence += [Evidence(id=f"e-bulk-{i}", detective="bulk", kind="bulk", summary=f"bulk fact {i}")
                 for i in range(evidence_rows)]
    return Evaluation(
        rationale_score=0.5, architecture_score=0.4, testing_score=0.2, logic_score=0.3, cis_raw=0.35,
        cis_score=0.21, red_penalty_applied=0.4, intent_penalty=1.0,
        red_analysis=RedSummary(attack_successful=True, vulnerability_count=1, max_severity="critical"),
        verdict="fail",
        verdict_reasons=("a judge's KILL fails the check (rejection-first)", "CIS 0.21 against fail < 0.50"),
        measured={"rationale": False, "architecture": True, "testing": True},
        evidence=tuple(evidence),
        opinions=(
            JudicialOpinion(judge="prosecutor", criterion_id="security", score=1, argument=HOSTILE_ARGUMENT,
                            verdict="KILL"),
            JudicialOpinion(judge="defense", criterion_id="security", score=4, argument="Effort is visible."),
            JudicialOpinion(judge="tech_lead", criterion_id="testing", score=2, argument="A test fails."),
        ),
        rulings=(CriterionRuling(criterion_id="security", score=1.0, opinions_considered=3,
                                 rules_applied=("security_override",), overruled=("defense",),
                                 dissent="spread 3 > 2: the defense credits effort"),
                 CriterionRuling(criterion_id="testing", score=2.0, opinions_considered=3)),
        dissent=("the defense credits effort the facts do not show",),
        notices=(),
        tests=TestRunResult(status="ran", collected=2, passed=1, failed=1, tests=(
            TestCaseResult(name="tests/test_discount.py::test_discount", outcome="failed",
                           message="assert 110.0 == 90 <script>alert('test')</script>",
                           location="tests/test_discount.py:5"),)),
        semantic=None,
        rubric=RubricRef(name="logomesh-default", version="2.1.0", sha256="d" * 64),
        inputs=Inputs(repo=repo, pr_number=7, base="a" * 40, head=HEAD, intent_sha256="e" * 64,
                      diff_sha256="f" * 64),
    )


def entangled(ev: Evaluation) -> Entanglement:
    return Entanglement.from_evaluation(ev, model_ids={"judges": "offline"}, tool_versions={"logomesh": "test"})


def unsigned_record(ev: Evaluation) -> DbomRecord:
    """A record as the ledger would hold it, without a ledger: the renderer only reads it."""
    payload = evaluation_payload(ev)
    body = build_body(payload, installation_id=None, entanglement=entangled(ev))
    return DbomRecord(id=body.record_id(), log_id="local", leaf_index=0, leaf_hash=body.leaf_hash().hex(),
                      body=body, evaluation_sha256=body.evaluation_sha256, raw_result=payload,
                      signature="c2lnbmF0dXJl", key_id="key-1", created_at=datetime(2025, 1, 2, tzinfo=UTC))


# --- reading a page -------------------------------------------------------------------------------------------


@dataclass
class Table:
    section: str
    rows: list[list[str]] = field(default_factory=list)

    def column(self, name: str) -> list[str]:
        index = self.rows[0].index(name)
        return [row[index] for row in self.rows[1:] if len(row) > index]


class Page(HTMLParser):
    """What the tests look at in a page: every start tag, the headings, the links, the tables, the forms."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.headings: list[str] = []
        self.links: list[tuple[str, str]] = []
        self.tables: list[Table] = []
        self.text: list[str] = []
        self._heading: list[str] | None = None
        self._link: tuple[str, list[str]] | None = None
        self._cell: list[str] | None = None
        self._open_tables: list[Table] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append((tag, values))
        if tag in ("h1", "h2"):
            self._heading = []
        elif tag == "a":
            self._link = (values.get("href", ""), [])
        elif tag == "table":
            table = Table(self.headings[-1] if self.headings else "")
            self.tables.append(table)
            self._open_tables.append(table)
        elif tag == "tr" and self._open_tables:
            self._open_tables[-1].rows.append([])
        elif tag in ("td", "th") and self._open_tables:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "h2") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None
        elif tag == "a" and self._link is not None:
            self.links.append((self._link[0], "".join(self._link[1]).strip()))
            self._link = None
        elif tag == "table" and self._open_tables:
            self._open_tables.pop()
        elif tag in ("td", "th") and self._cell is not None and self._open_tables:
            self._open_tables[-1].rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for sink in (self._heading, self._cell, self._link[1] if self._link else None):
            if sink is not None:
                sink.append(data)

    def table(self, section: str) -> Table:
        return next(t for t in self.tables if t.section.startswith(section))

    def hrefs(self) -> set[str]:
        return {href for href, _ in self.links}

    def all_text(self) -> str:
        return "".join(self.text)


def assert_report(page: Page, record_id: str, web: str) -> None:
    """The structure every rendering of :func:`failing_evaluation` must have, in a browser's DOM or as text."""
    wanted = ["FAIL — CIS 0.2100", "Why", "Scores", "Judges' opinions", "Chief Justice's rulings", "Evidence",
              "Tests", "Inputs (entangled)", "Record, signature and proof", "How to verify this record"]
    found = [next(i for i, h in enumerate(page.headings) if want in h) for want in wanted]
    assert found == sorted(found), page.headings

    severities = page.table("Evidence").column("Severity")
    assert severities[:5] == ["critical", "high", "medium", "low", "info"]
    assert [SEVERITY_ORDER[s] for s in severities] == sorted((SEVERITY_ORDER[s] for s in severities), reverse=True)
    assert page.table("Evidence").rows[2][1] == f"{HOSTILE_PATH}:9"  # shown as text, not as markup

    judges = page.table("Judges' opinions")
    assert judges.rows[0] == ["Criterion", "Judge", "Score", "Veto", "Argument"]
    assert judges.column("Veto") == ["veto", "", ""]
    assert judges.rows[1][2] == "1/5" and judges.rows[1][4] == HOSTILE_ARGUMENT
    assert not any("PASS" in cell for row in judges.rows for cell in row)
    rulings = page.table("Chief Justice's rulings")
    assert rulings.rows[0] == ["Criterion", "Ruling", "Rules applied", "Overruled judges", "Dissent"]
    assert rulings.rows[1] == ["security", "1.00/5", "security_override", "defense",
                               "spread 3 > 2: the defense credits effort"]
    scores = page.table("Scores")
    assert ["R — rationale", "0.50", "not measured"] in scores.rows
    assert ["Red penalty", "−40 %", "worst finding: critical"] in scores.rows
    failing = page.table("Tests")
    assert failing.rows[1][:3] == ["tests/test_discount.py::test_discount", "failed", "tests/test_discount.py:5"]

    repo = f"{web}/octo/shop"
    assert {repo, f"{repo}/pull/7", f"{repo}/commit/{HEAD}", f"{repo}/blob/{HEAD}/shop/discount.py#L3",
            f"{repo}/blob/{HEAD}/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E.py#L9",
            f"{repo}/blob/{HEAD}/tests/test_discount.py#L5",
            "https://cwe.mitre.org/data/definitions/95.html", record_id,
            "../.well-known/logomesh/keys"} <= page.hrefs()
    # a link goes to GitHub, to MITRE's CWE list, or to this record's JSON and the keys beside it: nowhere else
    assert all(h.startswith((f"{repo}/", "https://cwe.mitre.org/")) or h in (repo, record_id,
               "../.well-known/logomesh/keys") for h in page.hrefs()), page.hrefs()
    assert ("https://cwe.mitre.org/data/definitions/95.html", "CWE-95") in page.links
    assert not {tag for tag, _ in page.tags} & {"script", "img", "iframe", "object", "embed"}
    assert f"logomesh dbom verify {record_id}" in page.all_text()


# --- the renderer, as text ------------------------------------------------------------------------------------


def test_the_report_escapes_orders_and_links() -> None:
    record = unsigned_record(failing_evaluation())
    html = render_dbom_html(record, None, web_url=WEB)
    assert "<script" not in html and "<img" not in html and "<b>like markup" not in html
    assert "&lt;script&gt;alert(&#x27;judge&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;.py:9" in html
    assert_report(Page(html), record.id, WEB)
    assert "not yet in a signed tree head" in html  # no proof yet: said, not hidden


def test_github_links_default_to_github_com_and_need_a_plain_repository_name() -> None:
    record = unsigned_record(failing_evaluation())
    assert 'href="https://github.com/octo/shop/pull/7"' in render_dbom_html(record, None)
    for repo in ("local", "octo/../shop", "javascript:alert(1)//x/y", "octo/shop\" onmouseover=\"x", "a/b/c"):
        page = Page(render_dbom_html(unsigned_record(failing_evaluation(repo)), None, web_url=WEB))
        assert not [h for h in page.hrefs() if "ghe.example.com" in h], (repo, page.hrefs())
        assert "https://cwe.mitre.org/data/definitions/95.html" in page.hrefs()
    odd = Page(render_dbom_html(record, None, web_url="javascript:alert(1)"))
    assert not [h for h in odd.hrefs() if "javascript" in h or "octo/shop" in h]


def test_a_huge_record_is_capped() -> None:
    record = unsigned_record(failing_evaluation(evidence_rows=5000))
    page = Page(render_dbom_html(record, None))
    rows = page.table("Evidence").rows
    assert len(rows) == 1 + MAX_LIST_ROWS + 1 and "and 4945 more in the JSON record" in rows[-1][0]


def test_an_audit_record_still_renders_with_its_claims() -> None:
    result = AuditResult(
        repo="octo/courtroom", head_sha=HEAD, rubric=RubricRef(name="audit", version="1.0.0", sha256="c" * 64),
        report=None, score=3.5, unit_score=0.625, verdict="neutral", verdict_reasons=("mean ruling 3.50",),
        fact_scores={"safe_tool_engineering": 0.5},
        evidence=(Evidence(id="a1", detective="ast", kind="call", summary="os.system <script>",
                           location=Location(path="src/tools.py", line=12), severity="high", cwe="CWE-78"),),
        opinions=(JudicialOpinion(judge="prosecutor", criterion_id="safe_tool_engineering", score=2,
                                  argument="shell=True", verdict="KILL"),),
        rulings=(CriterionRuling(criterion_id="safe_tool_engineering", score=3.5, opinions_considered=3),),
        claims=(ClaimCheck(claim=Claim(kind="path", value="src/graph.py", page=2, quote="see src/graph.py"),
                           status="hallucination", detail="no such file"),),
        notices=(),
    )
    payload = result.model_dump(mode="json")
    body = build_audit_body(payload, installation_id=None, entanglement=AuditEntanglement(tree_sha256="9" * 64))
    record = DbomRecord(id=body.record_id(), log_id="local", leaf_index=0, leaf_hash=body.leaf_hash().hex(),
                        body=body, evaluation_sha256=body.evaluation_sha256, raw_result=payload, signature="c2ln",
                        key_id="key-1", created_at=datetime(2025, 1, 2, tzinfo=UTC))
    html = render_dbom_html(record, None, web_url=WEB)
    page = Page(html)
    assert "repository audit" in html and "<script" not in html and "hallucinated" in html
    assert page.headings[0].endswith("Repository audit: NEUTRAL — score 3.50/5")
    assert {f"{WEB}/octo/courtroom", f"{WEB}/octo/courtroom/commit/{HEAD}",
            f"{WEB}/octo/courtroom/blob/{HEAD}/src/tools.py#L12",
            "https://cwe.mitre.org/data/definitions/78.html"} <= page.hrefs()
    assert not [h for h in page.hrefs() if "/pull/" in h]  # an audit has no pull request
    assert page.table("Judges' opinions").column("Veto") == ["veto"]
    assert page.table("The report's claims").rows[1][:3] == ["hallucination", "path", "src/graph.py"]
    assert "Tests" not in page.headings


# --- the served pages, in a browser ---------------------------------------------------------------------------


@dataclass
class Served:
    url: str
    record_id: str
    settings: Settings


def refusing_github() -> Starlette:
    """GitHub's conversion endpoint answering as it does for a used or expired code."""

    async def conversions(request: Request) -> JSONResponse:
        return JSONResponse({"message": "Not Found"}, status_code=404)

    return Starlette(routes=[Route("/app-manifests/{code}/conversions", conversions, methods=["POST"])])


def page_settings(tmp: Path, **overrides: Any) -> Settings:
    prefix = f"logomesh-test:{uuid.uuid4().hex[:12]}:"
    values: dict[str, Any] = {
        "home": tmp / "home", "database_url": f"sqlite+aiosqlite:///{tmp}/pages.db", "webhook_secret": SECRET,
        "github_web_url": WEB, "public_url": "https://logomesh.test", "redis_url": REDIS_URL,
        "redis_prefix": prefix, "queue_name": prefix + "queue", "sandbox": "off", "embedding": "off",
        "red_team": "off", "llm_provider": "offline", **overrides}
    return Settings(_env_file=None, **values)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("pages")
    with ServerThread(refusing_github()) as github_api:
        settings = page_settings(tmp, github_api_url=github_api)

        async def write() -> str:
            ledger = await open_ledger(settings)
            try:
                ev = failing_evaluation()
                record = await ledger.append(ev, installation_id=4242, entanglement=entangled(ev))
                return str(record.id)
            finally:
                await ledger.close()

        record_id = asyncio.run(write())
        with ServerThread(create_app(settings, env_path=tmp / ".env")) as url:
            yield Served(url, record_id, settings)


def test_the_dbom_page_in_a_browser(served: Served) -> None:
    url = f"{served.url}/dbom/{served.record_id}.html"
    answer = httpx.get(url)
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    page = Page(dump_dom(url))
    assert_report(page, served.record_id, WEB)
    assert page.table("Record, signature and proof").rows[0] == ["record id", served.record_id]
    shot = screenshot(url, "dbom-failing-review", height=2600)
    assert shot.stat().st_size > 30_000


def test_the_setup_page_in_a_browser(served: Served) -> None:
    url = f"{served.url}/setup"
    page = Page(dump_dom(url))
    assert page.headings[0] == "Register LogoMesh on GitHub"
    assert {"Where GitHub will call", "Permissions it asks for", "Events it subscribes to", "Next steps"} <= set(
        page.headings)
    where = page.table("Where GitHub will call").rows
    assert ["Webhook URL", "https://logomesh.test/webhook"] in where
    assert ["Callback URL", "https://logomesh.test/setup/callback"] in where
    permissions = page.table("Permissions it asks for")
    assert dict(zip(permissions.column("Permission"), permissions.column("Access"), strict=True)) == {
        "checks": "write", "contents": "read", "issues": "write", "members": "read", "metadata": "read",
        "pull_requests": "write"}
    assert page.table("Events it subscribes to").column("Event") == [
        "pull_request", "issue_comment", "check_run", "check_suite"]
    text = page.all_text()
    assert "logomesh worker" in text and "/recheck" in text and ".env" in text
    assert "LOGOMESH_PUBLIC_URL is not set" not in text
    form = next(attrs for tag, attrs in page.tags if tag == "form" and attrs.get("method") == "post")
    assert form["action"].startswith(f"{WEB}/settings/apps/new?state=")
    manifest = next(attrs for tag, attrs in page.tags if tag == "input" and attrs.get("name") == "manifest")
    assert json.loads(manifest["value"])["hook_attributes"]["url"] == "https://logomesh.test/webhook"
    assert not {tag for tag, _ in page.tags} & {"script", "img"}
    assert screenshot(url, "setup").stat().st_size > 20_000


def test_errors_a_person_meets_are_pages_and_the_json_routes_stay_json(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        bad_org = client.get("/setup", params={"org": "bad name!"})
        assert bad_org.status_code == 400 and bad_org.headers["content-type"].startswith("text/html")
        assert "Not an organisation name" in bad_org.text and "personal account" in bad_org.text

        missing = client.get("/dbom/nosuchrecord.html")
        assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
        assert "No such audit record" in missing.text
        assert missing.headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'"
        as_json = client.get("/dbom/nosuchrecord")
        assert as_json.status_code == 404 and as_json.json() == {"error": "no such record"}
        browsing = client.get("/dbom/nosuchrecord", headers={"Accept": BROWSER})
        assert browsing.status_code == 404 and "No such audit record" in browsing.text
        found = client.get(f"/dbom/{served.record_id}", headers={"Accept": BROWSER})
        assert found.status_code == 200 and found.json()["id"] == served.record_id  # the JSON route is JSON

        forged = client.get("/setup/callback", params={"code": "abc", "state": "forged"})
        assert forged.status_code == 400 and "unknown or has expired" in forged.text
        state = client.get("/setup").text.split("?state=", 1)[1].split('"', 1)[0]
        refused = client.get("/setup/callback", params={"code": "used-code", "state": state})
        assert refused.status_code == 502 and "GitHub answered 404" in refused.text
        assert 'href="../setup"' in refused.text
    assert not (Path(served.settings.home).parent / ".env").exists()
    dom = Page(dump_dom(f"{served.url}/dbom/nosuchrecord.html"))
    assert dom.headings == ["No such audit record"]
    screenshot(f"{served.url}/setup?org=bad%20name!", "setup-bad-org", height=600)


def test_setup_warns_without_a_public_url_and_the_dbom_routes_without_a_ledger(tmp_path: Path) -> None:
    settings = page_settings(tmp_path, public_url=None, host="127.0.0.1", port=8123)
    client = TestClient(create_app(settings, env_path=tmp_path / ".env"))  # no lifespan: no ledger, no Redis
    page = client.get("/setup")
    assert page.status_code == 200 and "LOGOMESH_PUBLIC_URL is not set" in page.text
    assert "http://127.0.0.1:8123/webhook" in page.text
    assert page.headers["cache-control"] == "no-store"
    html = client.get("/dbom/abcdefgh12345678.html")
    assert html.status_code == 503 and "not available here" in html.text
    assert client.get("/dbom/abcdefgh12345678").json() == {"error": "the DBOM ledger is not part of this build"}
    keys = client.get("/.well-known/logomesh/keys", headers={"Accept": BROWSER})
    assert keys.status_code == 503 and keys.headers["content-type"].startswith("text/html")


def test_the_page_of_a_real_failing_review_leads_with_what_to_fix() -> None:
    """The review of the example's tax change (``tests/fixtures/reports/fail.json``): the first section after the
    heading names the broken test, where it failed (a link to the file at the head commit) and its message."""
    fixture = Path(__file__).parent.parent / "fixtures" / "reports" / "fail.json"
    ev = Evaluation.model_validate_json(fixture.read_text(encoding="utf-8"))
    ev = ev.model_copy(update={"inputs": ev.inputs.model_copy(update={"repo": "acme/shop", "pr_number": 7})})
    html = render_dbom_html(unsigned_record(ev), None, web_url=WEB)
    assert html.index('id="fix"') < html.index('id="why"') < html.index('id="scores"' if 'id="scores"' in html
                                                                       else 'id="judges"')
    fixes = html[html.index('id="fix"'):html.index('id="why"')]
    assert "A test that passed before this change fails now" in fixes
    assert "tests/test_cart.py::test_total_includes_tax" in fixes and "assert 3.75 == 3.6" in fixes
    assert f'href="{WEB}/acme/shop/blob/{ev.inputs.head}/tests/test_cart.py#L8"' in fixes
