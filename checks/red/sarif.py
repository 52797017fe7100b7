"""SARIF 2.1.0 export of red-team findings, for GitHub code scanning (``logomesh review --sarif out.sarif``).

One rule per attack class (``logomesh/red/<kind>``) with its CWE as a tag and a numeric
``security-severity`` (GitHub's scale: critical ≥ 9.0, high ≥ 7.0, medium ≥ 4.0); one result per finding with
its location, level, confirmation status, payload and observed effect, and a ``partialFingerprints`` entry so
re-runs update rather than duplicate alerts. Pure: returns a dict, the caller writes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from checks.models import RedFinding
from checks.red.severity import TITLES

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_VERSION = "2.1.0"
LEVELS = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}


def finding_kind(finding: RedFinding) -> str:
    """The attack class, the first field of a finding id (``kind:path:line:function``)."""
    return finding.id.split(":", 1)[0]


def _rule(kind: str, cwe: str | None, severity: str) -> dict[str, Any]:
    tags = ["security"]
    if cwe:
        tags.append(f"external/cwe/{cwe.lower()}")
    rule: dict[str, Any] = {
        "id": f"logomesh/red/{kind}",
        "name": "".join(part.capitalize() for part in kind.split("-")),
        "shortDescription": {"text": TITLES.get(kind, kind)},
        "fullDescription": {"text": f"{TITLES.get(kind, kind)} found by the LogoMesh red agent"
                                    + (f" ({cwe})" if cwe else "")},
        "defaultConfiguration": {"level": LEVELS[severity]},
        "properties": {"tags": tags, "security-severity": SECURITY_SEVERITY[severity], "precision": "high"},
    }
    if cwe:
        number = cwe.split("-", 1)[1]
        rule["helpUri"] = f"https://cwe.mitre.org/data/definitions/{number}.html"
    return rule


def _message(finding: RedFinding) -> str:
    parts = [finding.title]
    if finding.payload:
        parts.append(f"Payload: {finding.payload}.")
    if finding.effect:
        parts.append(f"Observed: {finding.effect}.")
    return " ".join(parts)


def to_sarif(findings: Sequence[RedFinding], tool_version: str = "0.0.0") -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run of the red agent."""
    rules: dict[str, dict[str, Any]] = {}
    worst: dict[str, str] = {}
    order = list(LEVELS)
    for finding in findings:
        kind = finding_kind(finding)
        if kind not in worst or order.index(finding.severity) < order.index(worst[kind]):
            worst[kind] = finding.severity
            rules[kind] = _rule(kind, finding.cwe, finding.severity)
    rule_ids = sorted(rules)
    results: list[dict[str, Any]] = []
    for finding in findings:
        kind = finding_kind(finding)
        result: dict[str, Any] = {
            "ruleId": f"logomesh/red/{kind}",
            "ruleIndex": rule_ids.index(kind),
            "level": LEVELS[finding.severity],
            "message": {"text": _message(finding)},
            "partialFingerprints": {
                "logomeshFindingId/v1": hashlib.sha256(finding.id.encode()).hexdigest()[:32],
            },
            "properties": {"severity": finding.severity, "confirmed": finding.confirmed,
                           "confidence": finding.confidence, "security-severity": SECURITY_SEVERITY[finding.severity]},
        }
        if finding.location is not None:
            region: dict[str, Any] = {}
            if finding.location.line:
                region["startLine"] = finding.location.line
                if finding.location.end_line:
                    region["endLine"] = finding.location.end_line
            physical: dict[str, Any] = {"artifactLocation": {"uri": finding.location.path, "uriBaseId": "%SRCROOT%"}}
            if region:
                physical["region"] = region
            result["locations"] = [{"physicalLocation": physical}]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {"name": "LogoMesh Red Agent", "semanticVersion": tool_version, "version": tool_version,
                                "rules": [rules[k] for k in rule_ids]}},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The repository root at the head commit"}}},
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    }
