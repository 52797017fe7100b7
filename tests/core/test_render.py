"""Reports escape everything that came from the PR."""

from __future__ import annotations

from checks.render import escape_md


def test_escape_md_neutralises_links_images_mentions_html_and_tables() -> None:
    hostile = "![x](https://evil.example/p.png) [click](javascript:alert(1)) @octocat <img src=x> | col\nnew"
    out = escape_md(hostile)
    assert "](" not in out.replace("\\](", "")
    assert "![" not in out
    assert "@octocat" not in out and "@\u200boctocat" in out
    assert "<img" not in out.replace("\\<", "")
    assert "\n" not in out
    assert "https:" not in out and "javascript:" not in out
    assert "\\|" in out


def test_escape_md_caps_length() -> None:
    assert len(escape_md("a" * 5000, 100)) == 100
