"""Links to GitHub and to CWE entries, built only from validated parts (pure: used by the Markdown report,
``checks/render.py``, and the DBOM page, ``app/ledger/render.py``). Every method may answer None: a repository
name, web address, commit or path that is not plain gets no link, never a link built from untrusted text."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import quote

GITHUB_WEB = "https://github.com"
SAFE_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_WEB = re.compile(r"^https?://[^\s\"'<>`]+$")
_CWE = re.compile(r"^CWE-(\d{1,6})$", re.IGNORECASE)


def cwe_url(value: str | None) -> str | None:
    """MITRE's page of a ``CWE-<n>`` id."""
    found = _CWE.match((value or "").strip())
    return f"https://cwe.mitre.org/data/definitions/{int(found.group(1))}.html" if found else None


@dataclass(frozen=True)
class GitHubLinks:
    """Links to one repository at one head commit (and its pull request, when there is one)."""

    repo_url: str | None
    head: str | None
    pr_number: int | None

    @classmethod
    def build(cls, web_url: str, repo: str, head: str | None, pr_number: int | None) -> GitHubLinks:
        web = web_url.rstrip("/")
        safe = bool(_WEB.match(web)) and bool(SAFE_REPO.match(repo)) and not any(
            part in (".", "..") for part in repo.split("/"))
        good_head = head if head is not None and _SHA.match(head) else None
        return cls(f"{web}/{repo}" if safe else None, good_head,
                   pr_number if isinstance(pr_number, int) and pr_number > 0 else None)

    def pull(self) -> str | None:
        return f"{self.repo_url}/pull/{self.pr_number}" if self.repo_url and self.pr_number else None

    def commit(self) -> str | None:
        return f"{self.repo_url}/commit/{self.head}" if self.repo_url and self.head else None

    def blob(self, path: str, line: int | None) -> str | None:
        """The file at the head commit (``#L<line>`` when known); None for a path that is not a plain relative one."""
        if not self.repo_url or not self.head or not _plain(path):
            return None
        url = f"{self.repo_url}/blob/{self.head}/" + "/".join(quote(part, safe="") for part in path.split("/"))
        return url + (f"#L{line}" if line is not None and line > 0 else "")

    def diff(self, path: str, line: int) -> str | None:
        """The line in the pull request's diff (GitHub's anchor: the SHA-256 of the path, ``R`` for the new side)."""
        pull = self.pull()
        if pull is None or not _plain(path) or line <= 0:
            return None
        return f"{pull}/files#diff-{hashlib.sha256(path.encode('utf-8', 'surrogatepass')).hexdigest()}R{line}"


def _plain(path: str) -> bool:
    return bool(path) and len(path) <= 1000 and not any(part in ("", ".", "..") for part in path.split("/"))
