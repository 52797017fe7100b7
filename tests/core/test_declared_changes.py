"""A behaviour removed on purpose and said so in the change's changelog entry: its deleted tests, failing under the
base's tests, are *declared* (never charged, never a pass); without the entry they are a regression.

The change is flask#5054 (pallets/flask c24f8c8, BSD-3-Clause), as merged: "no cookie domain by default"."""

from __future__ import annotations

import re
from pathlib import Path

from checks.declared_changes import declared_deletions, is_changelog
from checks.detectives.test_runner import diff_evidence
from checks.differential import classify
from checks.models import ChangedFile, TestDiff
from checks.testpaths import is_test_path
from tests.core.test_test_verdicts import case, run, verdict_of

FLASK_5054 = (Path(__file__).parents[1] / "realworld" / "fixtures" / "diffs" / "flask-5054.diff").read_text()
DELETED = ("test_session_using_server_name", "test_session_using_server_name_and_port",
           "test_session_using_server_name_port_and_path", "test_session_localhost_warning",
           "test_session_ip_warning")
TESTS = "tests/test_basic.py"
PRODUCT = ChangedFile(path="src/flask/sessions.py", status="modified", added_lines=(1,), content="x = 1\n")
TEST_FILE = ChangedFile(path=TESTS, status="modified", added_lines=(1,), content="x = 1\n")
MESSAGE = "AssertionError: assert 'domain=example.com' in 'session=eyj0; httponly; path=/'"


def without_file(diff: str, path: str) -> str:
    """The diff with one file's section left out."""
    sections = re.split(r"(?m)^(?=diff --git )", diff)
    return "".join(s for s in sections if not s.startswith(f"diff --git a/{path} "))


def runs(declared: dict[tuple[str, str], str]) -> TestDiff:
    """The five deleted tests pass at base and fail under the base's tests with the change's code (the bench's
    facts of flask#5054); the renamed ``test_session_path`` passes at head."""
    kept = case("passed", f"{TESTS}::test_session")
    base = run(kept, *(case("passed", f"{TESTS}::{name}") for name in DELETED))
    guard = run(kept, *(case("failed", f"{TESTS}::{name}", MESSAGE) for name in DELETED))
    head = run(kept, case("passed", f"{TESTS}::test_session_path"))
    return classify(base, head, guard, {TESTS}, {TESTS, "src/flask/sessions.py", "CHANGES.rst"},
                    declared=declared)


def test_the_changelog_entry_of_flask_5054_declares_the_deleted_tests_behaviour() -> None:
    found = declared_deletions(FLASK_5054, is_test_path)
    assert found == {(TESTS, name): "SERVER_NAME" for name in DELETED}
    diff = runs(found)
    assert sorted(c.name for c in diff.declared) == sorted(f"{TESTS}::{name}" for name in DELETED)
    assert not diff.regressed and "SERVER_NAME" in (diff.declared[0].cause or "")
    verdict, reasons = verdict_of(diff, PRODUCT, TEST_FILE)
    assert verdict == "neutral"
    assert any(r.startswith("Rule of the Declared Change: 5 test(s)") and "SERVER_NAME" in r for r in reasons)
    evidence = [e for e in diff_evidence(diff) if e.kind == "test-declared"]
    assert len(evidence) == 5 and all(e.severity == "medium" for e in evidence)
    summary = next(e.summary for e in diff_evidence(diff) if e.kind == "tests-differential")
    assert "5 deleted with a behaviour change the changelog declares" in summary


def test_without_the_changelog_entry_the_deleted_tests_are_a_regression() -> None:
    # hostile: the same deletion with no entry in CHANGES.rst is a regression hidden by deleting its tests
    silent = without_file(FLASK_5054, "CHANGES.rst")
    assert "CHANGES.rst" not in silent and "test_session_ip_warning" in silent
    assert declared_deletions(silent, is_test_path) == {}
    diff = runs(declared_deletions(silent, is_test_path))
    assert len(diff.regressed) == 5 and not diff.declared
    assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == "fail"


def test_an_entry_naming_nothing_the_deleted_tests_use_declares_nothing() -> None:
    # hostile: the entry speaks of SESSION_COOKIE_DOMAIN only, which none of the deleted tests uses (the real
    # entry also declares the ``localhost`` warning removed: that alone declares the localhost test's behaviour)
    narrow = FLASK_5054.replace("does not fall back to ``SERVER_NAME``", "is not set by default")
    assert "fall back to" not in narrow
    assert declared_deletions(narrow, is_test_path) == {(TESTS, "test_session_localhost_warning"): "localhost"}
    narrow = narrow.replace("Warnings about ``localhost`` and IP addresses are also removed.", "")
    assert declared_deletions(narrow, is_test_path) == {}
    assert verdict_of(runs(declared_deletions(narrow, is_test_path)), PRODUCT, TEST_FILE)[0] == "fail"


def test_an_entry_naming_what_the_product_code_does_not_touch_declares_nothing() -> None:
    # hostile: the entry says SERVER_NAME changed, but the change's product code never touches it
    untouched = without_file(without_file(FLASK_5054, "src/flask/sessions.py"), "src/flask/helpers.py")
    assert "SERVER_NAME" in untouched
    assert declared_deletions(untouched, is_test_path) == {}


def test_a_test_that_still_exists_and_fails_is_a_regression_whatever_the_changelog_says() -> None:
    found = declared_deletions(FLASK_5054, is_test_path)
    name = f"{TESTS}::test_session_ip_warning"
    base = run(case("passed", name))
    kept = run(case("failed", name, MESSAGE))
    diff = classify(base, kept, kept, {TESTS}, {TESTS}, declared=found)
    assert [c.name for c in diff.regressed] == [name] and not diff.declared
    assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == "fail"


def test_a_declared_change_beside_a_regression_still_fails() -> None:
    found = declared_deletions(FLASK_5054, is_test_path)
    other = f"{TESTS}::test_session"
    base = run(case("passed", other), case("passed", f"{TESTS}::test_session_ip_warning"))
    guard = run(case("failed", other, "AssertionError"), case("failed", f"{TESTS}::test_session_ip_warning",
                                                              MESSAGE))
    head = run(case("failed", other, "AssertionError"))
    diff = classify(base, head, guard, {TESTS}, {TESTS}, declared=found)
    assert [c.name for c in diff.declared] == [f"{TESTS}::test_session_ip_warning"]
    assert [c.name for c in diff.regressed] == [other]
    assert verdict_of(diff, PRODUCT, TEST_FILE)[0] == "fail"


def test_changelog_files_and_fragments() -> None:
    for path in ("CHANGES.rst", "CHANGELOG.md", "HISTORY.txt", "NEWS", "docs/changelog.rst", "docs/whatsnew.rst",
                 "changelog.d/1234.bugfix.md", "newsfragments/99.removal.rst", "docs/changes/5051.rst"):
        assert is_changelog(path), path
    for path in ("src/pkg/changes.py", "src/pkg/news/feed.py", "README.md", "docs/config.rst", "tests/test_news.py"):
        assert not is_changelog(path), path


def test_an_entry_in_markdown_and_a_bare_code_word_count_common_words_do_not() -> None:
    diff = """diff --git a/CHANGELOG.md b/CHANGELOG.md
--- a/CHANGELOG.md
+++ b/CHANGELOG.md
@@ -1,1 +1,2 @@
 # Changelog
+- `parse()` no longer accepts `str`; the max_depth option is gone.
diff --git a/pkg/core.py b/pkg/core.py
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -1,3 +1,2 @@
 def parse(data, max_depth=None):
-    if isinstance(data, str): data = data.encode()
-    check(max_depth)
+    check(None)
diff --git a/tests/test_core.py b/tests/test_core.py
--- a/tests/test_core.py
+++ b/tests/test_core.py
@@ -1,8 +1,2 @@
 def test_bytes():
     assert parse(b"1")
-
-def test_text():
-    assert parse(str(1))
-
-def test_depth():
-    assert parse(b"1", max_depth=2)
"""
    # max_depth is named (bare, shaped like code) and touched; "str" is too common a word to tie a test to a
    # declaration, and ``parse()``, though named, is not a name the change's product lines touch
    assert declared_deletions(diff, is_test_path) == {("tests/test_core.py", "test_depth"): "max_depth"}

