"""DocAnalyst: claims in the PR text checked against the diff."""

from __future__ import annotations

from checks.detectives.doc_analyst import DocAnalyst, is_test_path
from checks.models import Case, ChangedFile
from rubric import load_rubric


def case(title: str, body: str, paths: list[str], head_paths: list[str] | None = None) -> Case:
    files = tuple(ChangedFile(path=p, status="modified", added_lines=(1,)) for p in paths)
    return Case(base_sha="a" * 40, head_sha="b" * 40, title=title, body=body, diff="", files=files,
                head_paths=tuple(head_paths if head_paths is not None else paths))


async def kinds(c: Case) -> dict[str, tuple[str, str]]:
    report = await DocAnalyst().investigate(c, load_rubric())
    return {e.id: (e.kind, e.severity) for e in report.evidence}


async def test_mentioned_paths_are_checked() -> None:
    found = await kinds(case("Fix parser", "Touches `src/parser.py` and src/ghost.py, see README.md",
                             ["src/parser.py"], ["src/parser.py", "README.md"]))
    assert found["doc.path:src/parser.py"] == ("claim-verified", "info")
    assert found["doc.path:src/ghost.py"] == ("claim-unsupported", "medium")
    assert found["doc.path:README.md"] == ("claim-unsupported", "low")


async def test_test_claims_need_test_files() -> None:
    assert (await kinds(case("Add cache", "Adds unit tests for the cache.", ["cache.py"])))["doc.tests"] == \
        ("claim-unsupported", "medium")
    assert (await kinds(case("Add cache", "Adds unit tests for the cache.", ["cache.py", "tests/test_cache.py"])))[
        "doc.tests"] == ("claim-verified", "info")


async def test_fix_claims_need_code_changes() -> None:
    found = await kinds(case("Docs", "Fixes #12", ["docs/guide.md"]))
    assert found["doc.fixes:12"] == ("claim-unsupported", "medium")
    assert (await kinds(case("Bug", "closes #7", ["app.py"])))["doc.fixes:7"] == ("claim-verified", "info")


async def test_html_comments_in_the_template_are_ignored_and_empty_body_noted() -> None:
    found = await kinds(case("T", "<!-- mention ghost.py and add tests here -->", ["a.py"]))
    assert "doc.path:ghost.py" not in found and "doc.tests" not in found
    assert (await kinds(case("T", "  ", ["a.py"])))["doc.empty-body"] == ("empty-description", "low")


def test_test_path_detection() -> None:
    assert is_test_path("tests/test_x.py") and is_test_path("pkg/test_x.py") and is_test_path("x_test.go")
    assert not is_test_path("src/contest.py")
