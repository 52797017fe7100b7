"""Load, validate and hash the rubric — the constitution every review is judged by.

Exceptions::

    RubricError            the rubric (or an override) is invalid; ``field`` names the bad field
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict

Severity = Literal["critical", "high", "medium", "low"]
Component = Literal["rationale", "architecture", "testing", "logic"]

DEFAULT_RUBRIC = "rubric.json"
SCHEMA_FILE = "rubric.schema.json"


class RubricError(ValueError):
    """A rubric failed validation; ``field`` is a dotted path such as ``weights.testing``."""

    def __init__(self, field: str, message: str, source: str = "rubric") -> None:
        self.field = field
        self.message = message
        self.source = source
        super().__init__(f"{source}: invalid field '{field}': {message}")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Weights(_Frozen):
    rationale: float
    architecture: float
    testing: float
    logic: float


class Calibration(_Frozen):
    raw_low: float
    raw_high: float


class RationaleRules(_Frozen):
    not_measured: float
    calibration: Calibration
    top_k: int
    window_words: int
    max_chunks: int
    min_chunk_words: int
    echo_ngram: int
    max_intent_words: int


class IntentRules(_Frozen):
    threshold: float
    floor: float
    anchored_threshold: float = 0.65
    min_intent_words: int = 3
    min_change_words: int = 6


class SeverityPenalties(_Frozen):
    critical: float
    high: float
    medium: float
    low: float


class ArchitectureRules(_Frozen):
    baseline: float
    floor: float
    penalties: SeverityPenalties


class ForensicsRules(_Frozen):
    giant_commit_lines: int
    min_message_length: int
    max_commits: int


class MutationRules(_Frozen):
    max_mutants: int
    seconds: float
    weight: float


class TestingRules(_Frozen):
    """T, version 2: from the differential run (base vs head) and the mutation kill rate (checks/court.py)."""

    version: int
    at_zero: float
    at_full: float
    no_tests: float
    not_measured: float
    timeout_seconds: int
    regressed: float
    mutation: MutationRules


class SandboxRules(_Frozen):
    """Limits of one sandboxed run. A repository may lower the size limits; memory, CPU and PIDs it may also
    raise, up to the ceilings the operator sets (``LOGOMESH_SANDBOX_MAX_*``, applied in ``SandboxLimits``)."""

    memory_mb: int
    cpus: float
    pids: int
    work_mb: int
    tmp_mb: int
    nofile: int
    fsize_mb: int
    output_kb: int


# Limits a repository's overrides may only lower: raising them would let a PR buy itself more resources.
# (memory, CPU, PIDs and time may be raised: the operator's ceilings in settings bound them.)
LOWER_ONLY = (("sandbox", "work_mb"), ("sandbox", "tmp_mb"), ("sandbox", "nofile"), ("sandbox", "fsize_mb"),
              ("sandbox", "output_kb"))


class LogicRules(_Frozen):
    bound: float
    anchor_components: tuple[Component, ...]


class RedMultipliers(_Frozen):
    critical: float
    high: float
    medium: float


class RedKindRule(_Frozen):
    """How one attack class is rated: confirmed by a sandbox probe, or only found statically."""

    cwe: str
    confirmed: Severity | None
    unconfirmed: Literal["high", "medium", "low"]
    confidence: float


class RedUntraced(_Frozen):
    """A candidate only a pattern scanner saw, with no traced path from untrusted input."""

    severity: Literal["medium", "low"]
    confidence: float


class RedRules(_Frozen):
    multipliers: RedMultipliers
    max_steps: int
    max_time_seconds: float
    mcts_branches: int
    exploration_weight: float
    probe_timeout_seconds: float
    severity_table: dict[str, RedKindRule]
    untraced: RedUntraced
    confirmed_confidence: float


class VerdictRules(_Frozen):
    pass_: float
    fail: float
    require_measured_tests_for_pass: bool

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VerdictRules:
        return cls(
            pass_=data["pass"],
            fail=data["fail"],
            require_measured_tests_for_pass=data["require_measured_tests_for_pass"],
        )


class SecurityCap(_Frozen):
    criterion_max: int
    cis_max: float


class ChiefJusticeRules(_Frozen):
    security_cap: SecurityCap
    evidence_tolerance: int
    dissent_spread: float
    rejection_first: bool
    judge_weights: dict[str, dict[str, float]]

    def weight(self, criterion_id: str, judge: str) -> float:
        table = self.judge_weights.get(criterion_id, self.judge_weights["default"])
        return table.get(judge, self.judge_weights["default"].get(judge, 1.0))


class CallRule(_Frozen):
    name: str
    severity: Severity
    message: str
    cwe: str | None = None
    when_keyword: dict[str, list[Any]] | None = None
    unless_keyword: dict[str, list[Any]] | None = None


class ImportRule(_Frozen):
    name: str
    severity: Severity
    message: str
    cwe: str | None = None


class NetworkRule(_Frozen):
    prohibited: bool
    modules: tuple[str, ...]
    severity: Severity
    cwe: str


class RequiredPattern(_Frozen):
    id: str
    paths: tuple[str, ...]
    kind: Literal["call", "import", "decorator", "docstring"]
    severity: Severity
    message: str
    name: str | None = None


class BoundaryRule(_Frozen):
    id: str
    source: str
    forbidden_imports: tuple[str, ...]
    severity: Severity
    message: str


class Constraints(_Frozen):
    banned_calls: tuple[CallRule, ...]
    banned_imports: tuple[ImportRule, ...]
    network: NetworkRule
    required_patterns: tuple[RequiredPattern, ...]
    boundaries: tuple[BoundaryRule, ...]


class Criterion(_Frozen):
    id: str
    title: str
    question: str
    component: Component
    security: bool
    levels: dict[str, str] | None = None
    evidence: tuple[str, ...] | None = None


class JudgePersona(_Frozen):
    title: str
    motto: str
    instructions: str


class Rubric(_Frozen):
    """The effective, validated rubric with its identity (version and SHA-256 of its canonical JSON)."""

    name: str
    version: str
    sha256: str
    weights: Weights
    rationale: RationaleRules
    intent: IntentRules
    architecture: ArchitectureRules
    forensics: ForensicsRules
    testing: TestingRules
    sandbox: SandboxRules
    logic: LogicRules
    red: RedRules
    verdict: VerdictRules
    chief_justice: ChiefJusticeRules
    constraints: Constraints
    criteria: tuple[Criterion, ...]
    judges: dict[str, JudgePersona]
    document: dict[str, Any]

    def component_kinds(self, component: str) -> frozenset[str]:
        """The evidence kinds the criteria of ``component`` list: the facts that measure it (A weighs them)."""
        return frozenset(kind for c in self.criteria if c.component == component for kind in c.evidence or ())

    def criterion(self, criterion_id: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(criterion_id)


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """Canonical JSON of a rubric document: sorted keys, no insignificant white space."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    text = resources.files("rubric").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required" and isinstance(error.message, str):
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        parts.append(missing)
    elif error.validator == "additionalProperties" and "'" in error.message:
        parts.append(error.message.split("'")[1])
    return ".".join(parts) or "<root>"


def merge_overrides(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``overrides`` into a copy of ``base``: mappings merge, everything else replaces."""
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            merged[key] = merge_overrides(current, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def validate_document(document: Mapping[str, Any], source: str = "rubric") -> None:
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        raise RubricError(_field_path(first), first.message, source)
    weights = document["weights"]
    total = sum(weights.values())
    if abs(total - 1.0) > 1e-9:
        raise RubricError("weights", f"weights must sum to 1.0, got {total:g}", source)
    if document["verdict"]["fail"] > document["verdict"]["pass"]:
        raise RubricError("verdict.fail", "the fail threshold must not exceed the pass threshold", source)
    calibration = document["rationale"]["calibration"]
    if calibration["raw_low"] >= calibration["raw_high"]:
        raise RubricError("rationale.calibration.raw_low", "raw_low must be below raw_high", source)
    ids = [c["id"] for c in document["criteria"]]
    if len(ids) != len(set(ids)):
        raise RubricError("criteria", "criterion ids must be unique", source)
    for index, criterion in enumerate(document["criteria"]):
        if "evidence" not in criterion and not criterion["security"]:
            raise RubricError(f"criteria.{index}.evidence", "a criterion must list the evidence kinds it is judged "
                              "on (only a security criterion may leave them out: it takes every security fact)",
                              source)
    if "default" not in document["chief_justice"]["judge_weights"]:
        raise RubricError("chief_justice.judge_weights.default", "a default weight table is required", source)


def build_rubric(document: Mapping[str, Any], source: str = "rubric") -> Rubric:
    validate_document(document, source)
    doc = copy.deepcopy(dict(document))
    return Rubric(
        name=doc["name"],
        version=doc["version"],
        sha256=hashlib.sha256(canonical_bytes(doc)).hexdigest(),
        weights=Weights(**doc["weights"]),
        rationale=RationaleRules(**doc["rationale"]),
        intent=IntentRules(**doc["intent"]),
        architecture=ArchitectureRules(**doc["architecture"]),
        forensics=ForensicsRules(**doc["forensics"]),
        testing=TestingRules(**doc["testing"]),
        sandbox=SandboxRules(**doc["sandbox"]),
        logic=LogicRules(**doc["logic"]),
        red=RedRules(**doc["red"]),
        verdict=VerdictRules.from_json(doc["verdict"]),
        chief_justice=ChiefJusticeRules(**doc["chief_justice"]),
        constraints=Constraints(**doc["constraints"]),
        criteria=tuple(Criterion(**c) for c in doc["criteria"]),
        judges={k: JudgePersona(**v) for k, v in doc["judges"].items()},
        document=doc,
    )


def read_document(path: Path | None = None) -> dict[str, Any]:
    if path is None:
        text = resources.files("rubric").joinpath(DEFAULT_RUBRIC).read_text(encoding="utf-8")
        source = DEFAULT_RUBRIC
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise RubricError("<file>", f"cannot read {path}: {exc.strerror}", str(path)) from exc
        source = str(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RubricError("<json>", f"not valid JSON: {exc.msg} at line {exc.lineno}", source) from exc
    if not isinstance(document, dict):
        raise RubricError("<root>", "the rubric must be a JSON object", source)
    return document


def check_lower_only(base: Mapping[str, Any], overrides: Mapping[str, Any], source: str) -> None:
    """Refuse overrides that raise a resource limit (see ``LOWER_ONLY``)."""
    for section, key in LOWER_ONLY:
        wanted = overrides.get(section, {})
        if not isinstance(wanted, Mapping) or key not in wanted:
            continue
        current = base.get(section, {}).get(key)
        value = wanted[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue  # the schema names the type error
        if isinstance(current, int | float) and value > current:
            raise RubricError(f"{section}.{key}", f"a repository may lower this limit, never raise it "
                              f"({value} > {current})", source)


def load_rubric(path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> Rubric:
    """Load the rubric at ``path`` (the bundled default when None), apply overrides, validate, hash."""
    document = read_document(path)
    source = str(path) if path else DEFAULT_RUBRIC
    if overrides:
        check_lower_only(document, overrides, f"{source} + .logomesh.yml overrides")
        document = merge_overrides(document, overrides)
        source = f"{source} + .logomesh.yml overrides"
    return build_rubric(document, source)
