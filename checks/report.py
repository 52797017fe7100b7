"""The review as ``logomesh review --format json`` prints it: a versioned contract for CI and scripts.

:class:`ReviewReport` holds what a reader acts on — the verdict, the rules that decided it, what to fix (and what
is not the change's fault, with who can act on it), the check run's title, the DBOM id — and the whole
:class:`~checks.models.Evaluation` under ``evaluation`` (the record the DBOM signs). Its JSON Schema is generated
from these models (``python -m checks.report_schema``) and shipped as ``schemas/review.schema.json``.
``schema_version`` changes when a field is removed or changes meaning; fields may be added within a version.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from checks.deciding import deciding_rules
from checks.fixes import MAINTAINER, OPERATOR, Fix, what_to_fix
from checks.models import Evaluation, Location, Model, Severity, Verdict
from checks.redaction import redact_internal_paths
from checks.render import render_title

SCHEMA_VERSION: Literal["1"] = "1"
Audience = Literal["author", "maintainer", "operator"]


class FixItem(Model):
    """One thing to fix, in words: where, the failure message or finding, a hint, and who can act on it."""

    title: str
    severity: Severity
    location: Location | None = None
    subject: str | None = Field(default=None, description="the test or symbol it is about")
    detail: str = ""
    hint: str = ""
    kind: str = Field(default="", description="the evidence kind it comes from (e.g. test-regressed)")
    for_whom: Audience = Field(
        default="author", description="author: the PR's; maintainer: on the base branch (e.g. .logomesh.yml); "
        "operator: whoever runs LogoMesh (e.g. start the Docker engine)")


class DecidingRule(Model):
    rule: str = Field(description="the Chief Justice's name for it, e.g. 'Rule of Regression'")
    words: str = Field(description="what it means, e.g. 'a test that passed before fails now'")


class ReviewReport(Model):
    """``logomesh review --format json``."""

    schema_version: Literal["1"] = SCHEMA_VERSION
    verdict: Verdict
    title: str = Field(description="the check run's title: the verdict and what decided it")
    deciding_rules: tuple[DecidingRule, ...] = Field(
        description="the named rules that reached this verdict, the deciding one first; empty when the score did")
    what_to_fix: tuple[FixItem, ...] = Field(description="the author's first, worst first; then what is not the "
                                             "change's fault")
    dbom_id: str | None = Field(description="the signed audit record of this review (logomesh dbom show ID); "
                                "null when it was not recorded")
    nothing_to_review: bool = Field(default=False, description="the range was empty: nothing ran")
    evaluation: Evaluation | None = Field(description="the whole record; null when there was nothing to review")

    def pretty_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False)


AUDIENCE: dict[str, Audience] = {"": "author", MAINTAINER: "maintainer", OPERATOR: "operator"}


def _item(fix: Fix) -> FixItem:
    shown = redact_internal_paths
    return FixItem.model_validate({"title": shown(fix.title), "severity": fix.severity, "location": fix.location,
                                   "subject": fix.subject, "detail": shown(fix.detail), "hint": shown(fix.hint),
                                   "kind": fix.kind, "for_whom": AUDIENCE.get(fix.for_whom, "author")})


def review_report(e: Evaluation, dbom_id: str | None) -> ReviewReport:
    """The JSON report of ``e``, recorded as DBOM ``dbom_id``."""
    return ReviewReport(
        verdict=e.verdict, title=render_title(e), dbom_id=dbom_id, evaluation=e,
        deciding_rules=tuple(DecidingRule(rule=r.prefix, words=r.words) for r in deciding_rules(e)),
        what_to_fix=tuple(_item(fix) for fix in what_to_fix(e)))


def nothing_to_review(why: str) -> ReviewReport:
    return ReviewReport(verdict="neutral", title="Neutral · nothing to review", dbom_id=None, nothing_to_review=True,
                        evaluation=None, what_to_fix=(),
                        deciding_rules=(DecidingRule(rule="Rule of Measurement: nothing to review", words=why),))
