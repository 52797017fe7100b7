"""The audit's edge: clone a URL (no hooks, no checkout), read a local repo or directory, never follow symlinks,
and read a PDF's text and images with pypdf."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.audit.run import ReportError, SourceError, display_name, is_remote, open_snapshot, read_report
from tests.audit.fixtures import PAGE_ONE, build_report, git


def test_clone_a_file_url_reads_head_and_history_without_running_hooks(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    with open_snapshot(repo.as_uri(), max_commits=250) as snap:
        assert "src/graph.py" in snap.paths
        assert {s.path for s in snap.sources} >= {"src/graph.py", "src/tools.py"}
        assert [c.subject for c in snap.commits][:2] == ["wip", "Add the Chief Justice and its deterministic rules"]
        assert snap.commits[0].files_changed == 2
        assert snap.name == "courtroom"
    assert not marker.exists()


def test_the_ext_transport_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(SourceError):
        from app.audit.run import clone

        clone(f"ext::sh -c touch% {marker}", tmp_path / "c.git")
    assert not marker.exists()


def test_the_clone_ignores_inherited_git_variables(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's clone uses the App's hardened recipe: an inherited GIT_* variable (here one that would turn
    the file transport off and one that points git at another directory) changes nothing."""
    elsewhere = tmp_path / "elsewhere.git"
    monkeypatch.setenv("GIT_DIR", str(elsewhere))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'protocol.file.allow'='never'")
    with open_snapshot(repo.as_uri(), max_commits=250) as snap:
        assert "src/graph.py" in snap.paths
    assert not elsewhere.exists()


def test_a_symlink_in_the_repository_is_listed_never_followed(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("TOKEN = 'do-not-read'\n")
    os.symlink(secret, repo / "src" / "leak.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add a link")
    with open_snapshot(str(repo), max_commits=250) as snap:
        assert "src/leak.py" in snap.paths
        assert all("do-not-read" not in s.text for s in snap.sources)
        assert any(s.startswith("src/leak.py (symlink") for s in snap.skipped)


def test_a_plain_directory_is_walked_without_following_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("import os\nos.system('ls')\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b.py").write_text("SECRET = 1\n")
    os.symlink(outside, root / "linked-dir")
    os.symlink(outside / "b.py", root / "b.py")
    with open_snapshot(str(root), max_commits=250) as snap:
        assert snap.paths == ("pkg/a.py",)
        assert snap.commits == ()
        assert snap.head_sha.startswith("(working tree)")
        assert any(s.startswith("b.py (symlink") for s in snap.skipped)


def test_bad_sources_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such directory"), open_snapshot(str(tmp_path / "nope"), 10):
        pass
    with pytest.raises(SourceError, match="git clone failed"), open_snapshot((tmp_path / "nope").as_uri(), 10):
        pass
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(SourceError, match="no commits"), open_snapshot(str(empty), 10):
        pass


def test_url_detection_and_names_carry_no_credentials() -> None:
    assert is_remote("https://example.com/org/repo.git") and is_remote("git@example.com:org/repo.git")
    assert not is_remote("ext::sh -c touch% /tmp/x") and not is_remote("./repo")
    assert display_name("https://user:token@example.com/org/repo.git") == "repo"
    assert display_name("git@example.com:org/tool.git") == "tool"


def test_read_report_extracts_text_per_page_and_the_embedded_image(report: Path) -> None:
    doc = read_report(report)
    assert doc.name == "report.pdf" and len(doc.pages) == 2
    assert "src/memory/vector_store.py" in " ".join(doc.pages[0].text.split())
    assert PAGE_ONE.split()[0] in doc.pages[0].text
    assert len(doc.images) == 1
    image = doc.images[0]
    assert (image.page, image.width, image.height) == (2, 320, 160)
    assert image.data and image.size == len(image.data)


def test_the_outline_is_the_reports_structure_and_a_report_without_one_says_so(report: Path, tmp_path: Path) -> None:
    from checks.audit.render import render_outline
    from tests.audit.fixtures import build_report

    doc = read_report(report)
    assert [(s.title, s.page, s.level) for s in doc.sections] == [
        ("Architecture", 1, 0), ("Dialectics", 1, 1), ("Synthesis", 2, 0), ("Safety", 2, 1)]
    assert render_outline(doc.sections) == ("The PDF's outline (4 section(s)): Architecture (p. 1); "
                                            "↳ Dialectics (p. 1); Synthesis (p. 2); ↳ Safety (p. 2).")
    hostile = build_report(tmp_path / "h.pdf", outline={1: (("[click](https://evil.example) @octocat", 0),)})
    shown = render_outline(read_report(hostile).sections)
    assert "](https://evil" not in shown and "@octocat" not in shown
    flat = read_report(build_report(tmp_path / "flat.pdf", outline={}))
    assert flat.sections == () and render_outline(flat.sections) == "The PDF has no outline (no bookmarked sections)."


def test_unreadable_reports_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="cannot read"):
        read_report(tmp_path / "missing.pdf")
    fake = tmp_path / "fake.pdf"
    fake.write_text("hello")
    with pytest.raises(ReportError, match="not a PDF"):
        read_report(fake)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n" + b"\x00garbage" * 10)
    with pytest.raises(ReportError):
        read_report(broken)
    big = build_report(tmp_path / "big.pdf")
    with pytest.raises(ReportError, match="larger than"):
        read_report(big, max_bytes=100)


def test_a_directory_inside_a_repository_is_audited_alone(repo: Path) -> None:
    with open_snapshot(str(repo / "src"), max_commits=250) as snap:
        assert snap.name == "src" and snap.commits == ()
        assert "graph.py" in snap.paths and "README.md" not in snap.paths
    bare = repo.parent / "bare.git"
    git(repo.parent, "clone", "-q", "--bare", str(repo), str(bare))
    with open_snapshot(str(bare), max_commits=250) as snap:
        assert len(snap.commits) == 5 and "src/graph.py" in snap.paths


def test_clone_errors_never_show_the_token(tmp_path: Path) -> None:
    from app.audit.run import clone

    with pytest.raises(SourceError) as caught:
        clone(f"http://user:s3cret-token@127.0.0.1:9/{tmp_path.name}.git", tmp_path / "c.git", timeout=30)
    assert "s3cret-token" not in str(caught.value)
    assert "127.0.0.1:9" in str(caught.value)
