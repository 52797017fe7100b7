"""The audit's data: a whole repository as read at one commit, a PDF report as extracted, and the result.

The edge (``app/audit/run.py``) builds :class:`RepoSnapshot` and :class:`ReportDocument`; everything after that
is pure. Image bytes travel with the report so a vision provider can look at them, but never serialise.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import Field

from checks.models import (
    Commit,
    CriterionRuling,
    Evidence,
    JudicialOpinion,
    Location,
    Model,
    RubricRef,
    Verdict,
)

ClaimKind = Literal["path", "component", "feature"]
ClaimStatus = Literal["verified", "hallucination", "unverified"]


class SourceFile(Model):
    """One text file of the repository (only files under the size cap are carried)."""

    path: str
    text: str


class HistoryCommit(Commit):
    """A commit of the audited history: a PR's :class:`~checks.models.Commit` with its author time."""

    timestamp: int = Field(description="author time, seconds since the epoch")


class RepoSnapshot(Model):
    """The whole repository at ``head_sha``: every path, the readable sources, and the history (newest first)."""

    name: str
    head_sha: str
    paths: tuple[str, ...]
    sources: tuple[SourceFile, ...] = ()
    commits: tuple[HistoryCommit, ...] = ()
    history_truncated: bool = False
    skipped: tuple[str, ...] = Field(default=(), description="paths left out: symlinks, binary or oversized files")

    def content_sha256(self) -> str:
        """SHA-256 over every path and every source text the audit read, in order: what the verdict saw."""
        digest = hashlib.sha256()
        for path in self.paths:
            digest.update(b"P\x00" + path.encode("utf-8", "surrogatepass") + b"\x00")
        for source in self.sources:
            text = hashlib.sha256(source.text.encode("utf-8", "surrogatepass")).digest()
            digest.update(b"S\x00" + source.path.encode("utf-8", "surrogatepass") + b"\x00" + text)
        return digest.hexdigest()


class ReportPage(Model):
    number: int
    text: str


class ReportImage(Model):
    page: int
    name: str
    format: str
    width: int | None = None
    height: int | None = None
    size: int
    sha256: str
    data: bytes = Field(default=b"", exclude=True, repr=False)


class ReportSection(Model):
    """One entry of the PDF's outline (its bookmarks): the report's own table of contents."""

    title: str
    page: int | None = Field(default=None, description="1-based; None when the entry points nowhere readable")
    level: int = Field(default=0, description="0 for a top-level section")


class ReportDocument(Model):
    """A PDF report as extracted: its text per page, its outline and its embedded images."""

    name: str
    sha256: str
    pages: tuple[ReportPage, ...]
    sections: tuple[ReportSection, ...] = ()
    images: tuple[ReportImage, ...] = ()
    notices: tuple[str, ...] = ()


class Claim(Model):
    """Something the report asserts about the repository, with where it says so."""

    kind: ClaimKind
    value: str
    page: int
    quote: str
    negated: bool = Field(default=False, description="the report says this is absent (\"does not run in parallel\")")


class ClaimCheck(Model):
    claim: Claim
    status: ClaimStatus
    detail: str
    location: Location | None = None


class ReportRef(Model):
    name: str
    sha256: str
    pages: int
    images: int
    sections: tuple[ReportSection, ...] = ()


class AuditResult(Model):
    """The audit court's ruling on one repository (and its report) under one rubric."""

    repo: str
    head_sha: str
    rubric: RubricRef
    report: ReportRef | None
    score: float = Field(description="mean of the criterion rulings, 1–5")
    unit_score: float = Field(description="the same on [0, 1]")
    verdict: Verdict
    verdict_reasons: tuple[str, ...]
    fact_scores: dict[str, float | None]
    evidence: tuple[Evidence, ...]
    opinions: tuple[JudicialOpinion, ...]
    rulings: tuple[CriterionRuling, ...]
    claims: tuple[ClaimCheck, ...]
    notices: tuple[str, ...]

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
