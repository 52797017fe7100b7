"""The constitution loads, validates, hashes, and says exactly which field is wrong."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from checks.config import parse_repo_config
from checks.errors import ConfigError
from rubric import RubricError, load_rubric, read_document
from rubric.loader import build_rubric
from rubric.model import SCHEMA_PATH, RubricDocument
from rubric.schema import schema_text


def test_default_rubric_holds_the_seed_constants() -> None:
    r = load_rubric()
    assert (r.weights.rationale, r.weights.architecture, r.weights.testing, r.weights.logic) == (0.25,) * 4
    assert (r.testing.at_zero, r.testing.at_full) == (0.20, 0.85)
    assert r.architecture.baseline == 0.80
    assert r.logic.bound == 0.10
    assert (r.red.multipliers.critical, r.red.multipliers.high, r.red.multipliers.medium) == (0.60, 0.75, 0.85)
    assert (r.intent.threshold, r.intent.floor) == (0.35, 0.30)
    red = r.red
    assert (red.max_steps, red.max_time_seconds, red.mcts_branches, red.exploration_weight) == (10, 60, 3, 1.414)
    assert {"prosecutor", "defense", "tech_lead"} <= set(r.judges)
    assert len(r.sha256) == 64


def test_hash_is_independent_of_key_order_and_changes_with_content() -> None:
    doc = read_document()
    reordered = json.loads(json.dumps(doc, sort_keys=True))
    assert build_rubric(reordered).sha256 == load_rubric().sha256
    doc["verdict"]["pass"] = 0.71
    assert build_rubric(doc).sha256 != load_rubric().sha256


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["weights"].__setitem__("testing", "high"), "weights.testing"),
        (lambda d: d["weights"].__setitem__("testing", 0.5), "weights"),
        (lambda d: d["architecture"].pop("baseline"), "architecture.baseline"),
        (lambda d: d["red"]["multipliers"].__setitem__("critical", 1.5), "red.multipliers.critical"),
        (lambda d: d.__setitem__("surprise", 1), "surprise"),
        (lambda d: d["constraints"]["banned_calls"][0].__setitem__("severity", "fatal"),
         "constraints.banned_calls.0.severity"),
        (lambda d: d["verdict"].__setitem__("fail", 0.9), "verdict.fail"),
        (lambda d: d["chief_justice"]["judge_weights"].pop("default"), "chief_justice.judge_weights.default"),
    ],
)
def test_invalid_rubric_names_the_bad_field(mutate: Callable[[dict[str, Any]], object], field: str) -> None:
    doc = read_document()
    mutate(doc)
    with pytest.raises(RubricError) as info:
        build_rubric(doc)
    assert info.value.field == field
    assert field in str(info.value)


def test_the_checked_in_schema_is_the_one_the_models_generate() -> None:
    """One definition: rubric/model.py. After changing it, ``python -m rubric.schema`` rewrites the file."""
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()


def _bounded_fields(model: type[BaseModel], document: dict[str, Any],
                    path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], float | None, float | None]]:
    """(path, lowest allowed, highest allowed) of every number with a bound in the models, where the document
    has a value: walked from the models, not from the schema."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in document:
            continue
        low = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), None)
        high = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
        if low is not None or high is not None:
            yield (*path, key), low, high
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and isinstance(document[key], dict):
            yield from _bounded_fields(sub, document[key], (*path, key))


def test_every_bound_the_models_declare_is_enforced_with_its_field_path() -> None:
    document = read_document()
    bounded = list(_bounded_fields(RubricDocument, document))
    assert len(bounded) > 50
    for path, low, high in bounded:
        for value in ((low - 1) if low is not None else None, (high + 1) if high is not None else None):
            if value is None:
                continue
            doc = read_document()
            target = doc
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
            with pytest.raises(RubricError) as info:
                build_rubric(doc)
            assert info.value.field == ".".join(path), (path, value)


def test_an_optional_field_may_be_left_out_but_not_written_as_null() -> None:
    doc = read_document()
    doc["criteria"][0]["levels"] = None
    with pytest.raises(RubricError) as info:
        build_rubric(doc)
    assert info.value.field == "criteria.0.levels"
    doc = read_document()
    doc["red"]["severity_table"]["sql-injection"]["confirmed"] = None  # required, and null is a value: no probe
    assert build_rubric(doc).red.severity_table["sql-injection"].confirmed is None


def test_the_audit_section_is_read_through_the_model() -> None:
    auditor = load_rubric(Path(__file__).resolve().parents[2] / "rubric" / "auditor.json")
    assert auditor.audit.theory_terms and "dialectic" in auditor.audit.theory_terms
    default = load_rubric().audit  # the PR rubric has no audit section: the model's defaults apply
    assert "dialectic" in default.theory_terms and (default.min_report_words, default.min_theory_terms) == (300, 4)
    doc = read_document()
    doc["audit"] = {"theory_terms": ["x", "x"]}
    with pytest.raises(RubricError) as info:
        build_rubric(doc)
    assert info.value.field == "audit.theory_terms"


def test_unreadable_and_non_json_rubrics_are_clear(tmp_path: Path) -> None:
    with pytest.raises(RubricError, match="cannot read"):
        load_rubric(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(RubricError, match="not valid JSON"):
        load_rubric(bad)


def test_repo_config_overrides_are_merged_validated_and_hashed() -> None:
    config = parse_repo_config(
        "thresholds: {pass: 0.8}\nrubric:\n  constraints:\n    network: {prohibited: true}\n"
    )
    r = load_rubric(None, config.rubric_overrides())
    assert r.verdict.pass_ == 0.8
    assert r.constraints.network.prohibited is True
    assert r.constraints.banned_calls  # lists untouched by the override survive
    assert r.sha256 != load_rubric().sha256
    with pytest.raises(RubricError, match="weights"):
        load_rubric(None, {"weights": {"testing": 0.9}})


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("thresholds: [1, 2", "<yaml>"),
        ("- a\n- b\n", "<root>"),
        ("thresholds: {pass: 2}", "thresholds.pass"),
        ("test: {timeout_seconds: -1}", "test.timeout_seconds"),
        ("unknown_key: 1", "unknown_key"),
        ("test: {command: 12}", "test.command"),
        ("sandbox: {image: 'evil; rm -rf /'}", "sandbox.image"),
    ],
)
def test_invalid_repo_config_names_the_field(text: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_repo_config(text)
    assert info.value.field == field


def test_repo_config_parses_commands_and_hash() -> None:
    config = parse_repo_config("test:\n  command: python -m pytest -q\n  setup: [pip, install, -e, .]\n")
    assert config.test.command == ("python", "-m", "pytest", "-q")
    assert config.test.setup == ("pip", "install", "-e", ".")
    assert config.sha256 and len(config.sha256) == 64
    assert parse_repo_config(None).sha256 is None


def test_the_rubric_s_assumptions_come_from_the_repository_config_and_are_validated() -> None:
    """``assumptions.concurrent``: the paths whose code runs concurrently; absent, none (the default rubric's hash
    does not move); a path that is not a non-empty string, or an unknown assumption, is an error naming it."""
    assert load_rubric().assumptions.concurrent == ()
    config = parse_repo_config("rubric:\n  assumptions:\n    concurrent: [\"app/limits/**\", \"workers/*.py\"]\n")
    r = load_rubric(None, config.rubric_overrides())
    assert r.assumptions.concurrent == ("app/limits/**", "workers/*.py") and r.sha256 != load_rubric().sha256
    with pytest.raises(RubricError) as empty:
        load_rubric(None, {"assumptions": {"concurrent": [""]}})
    assert empty.value.field == "assumptions.concurrent.0"
    with pytest.raises(RubricError) as unknown:
        load_rubric(None, {"assumptions": {"reentrant": ["app/**"]}})
    assert unknown.value.field == "assumptions.reentrant"


def test_the_readme_s_repository_config_parses_and_its_rubric_loads() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Per-repository configuration", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    rubric = load_rubric(None, parse_repo_config(example).rubric_overrides())
    assert rubric.assumptions.concurrent == ("app/limits/**",) and rubric.constraints.network.prohibited
