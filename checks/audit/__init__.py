"""Repository audit mode: a whole repository and its PDF report, judged per criterion of any rubric.

Pure like the rest of the court: the edge (``app/audit/run.py``) reads the repository and the PDF into
:class:`RepoSnapshot` and :class:`ReportDocument`; :func:`run_audit` judges them; :func:`render_audit` writes
the Markdown report.
"""

from checks.audit.court import AuditParts, run_audit
from checks.audit.models import (
           AuditResult,
           HistoryCommit,
           ReportDocument,
           ReportImage,
           ReportPage,
           ReportSection,
           RepoSnapshot,
           SourceFile,
)
from checks.audit.render import render_audit
from checks.audit.vision import DiagramAssessment, DiagramClassifier, StructureSummary

__all__ = [
           "AuditParts",
           "AuditResult",
           "DiagramAssessment",
           "DiagramClassifier",
           "HistoryCommit",
           "RepoSnapshot",
           "ReportDocument",
           "ReportImage",
           "ReportPage",
           "ReportSection",
           "SourceFile",
           "StructureSummary",
           "render_audit",
           "run_audit",
]
