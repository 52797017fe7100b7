"""Model text in the posted report stays inert: no live mention, link, image, HTML, entity or cross-reference."""

from __future__ import annotations

import re

import pytest

from checks.render import escape_md

HOSTILE = [
    ("mention", "thanks @octocat and @org/team", [r"(?<!\u200b)@\w"]),
    ("link", "[click](https://evil.example)", [r"(?<!\\)\]\(", r"https:"]),
    ("image", "![x](http://evil.example/p.png)", [r"(?<!\\)!\[", r"http:"]),
    ("autolink", "<https://evil.example> www.evil.example", [r"(?<!\\)<h", r"www\."]),
    ("html", "<img src=x onerror=alert(1)><a href=x>y</a>", [r"(?<!\\)<"]),
    ("entity", "&#64;octocat &lt;img&gt; &#91;x&#93;&#40;y&#41;", [r"(?<!\\)&"]),
    ("issue-ref", "fixes #12, closes org/repo#7, GH-3", [r"#\d", r"GH-\d"]),
    ("email", "mailto:someone@example.com", [r"\w@\w"]),
    ("table", "a | b\n| c |", [r"(?<!\\)\|", "\n"]),
    ("bidi", "safe\u202egnp.exe", ["\u202e"]),
]


@pytest.mark.parametrize(("name", "text", "forbidden"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_escape_md_neutralises(name: str, text: str, forbidden: list[str]) -> None:
    out = escape_md(text)
    for pattern in forbidden:
        assert not re.search(pattern, out), (name, pattern, out)


def test_escaped_text_stays_readable() -> None:
    out = escape_md("Fixes #12 for @octocat, see www.example.com")
    assert out.replace("\u200b", "").replace("\\", "") == "Fixes #12 for @octocat, see www.example.com"
