"""The rubric's shape, defined once: these pydantic models are what the loader builds, and the JSON Schema
``rubric.schema.json`` — which validates a rubric document with field paths before it is built — is generated from
them (:mod:`rubric.schema`; ``python -m rubric.schema`` rewrites the file, and a test keeps the two equal).

Constraints a JSON Schema can say live on the fields (ranges, patterns, enums, required keys); the few it cannot
(weights summing to 1, ``fail`` ≤ ``pass``, ``raw_low`` < ``raw_high``, unique criterion ids, a criterion's evidence
kinds) are checked in :func:`rubric.loader.validate_document`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["critical", "high", "medium", "low"]
Component = Literal["rationale", "architecture", "testing", "logic"]

SCHEMA_PATH = Path(__file__).with_name("rubric.schema.json")
SCHEMA_ID = "https://logomesh.dev/schema/rubric.schema.json"
CWE = r"^CWE-[0-9]+$"
RULE_ID = r"^[a-z0-9][a-z0-9_.-]*$"


def unit(description: str | None = None) -> Any:
    """A required number in [0, 1]."""
    return Field(ge=0, le=1, description=description)


def _absent_not_null(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """An optional field (default None) may be left out, not written as null: its schema drops the null branch."""
    for name, field in model.model_fields.items():
        prop = schema.get("properties", {}).get(field.alias or name)
        if prop is None or field.is_required() or field.default is not None or "anyOf" not in prop:
            continue
        branches = [b for b in prop.pop("anyOf") if b != {"type": "null"}]
        prop.pop("default", None)
        prop.update(branches[0] if len(branches) == 1 else {"anyOf": branches})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=_absent_not_null)


class Weights(_Frozen):
    """The CIS weights of the four components; they sum to 1."""

    rationale: float = unit()
    architecture: float = unit()
    testing: float = unit()
    logic: float = unit()


class Calibration(_Frozen):
    raw_low: float = Field(ge=-1, le=1)
    raw_high: float = Field(ge=-1, le=1)


class RationaleRules(_Frozen):
    not_measured: float = unit()
    calibration: Calibration
    top_k: int = Field(ge=1, le=64, description="R_raw is the size-weighted mean of this many best chunk cosines")
    window_words: int = Field(ge=8, le=180, description="words per code chunk; MiniLM reads at most 256 word pieces")
    max_chunks: int = Field(ge=1, le=4096, description="chunks embedded per change; beyond it a deterministic sample")
    min_chunk_words: int = Field(ge=1, le=64,
                                 description="smaller function groups join their file's other added lines")
    echo_ngram: int = Field(ge=2, le=32, description="runs of this many words copied from the intent are removed "
                                                     "from the code text")
    max_intent_words: int = Field(ge=16, le=65536,
                                  description="words of intent text embedded; the rest is ignored")


class IntentRules(_Frozen):
    threshold: float = unit()
    floor: float = unit()
    anchored_threshold: float = Field(0.35, ge=0, le=1, description=(
        "R below which a change is penalised when its intent names code (identifiers) and the change touches none "
        "of them"))
    min_intent_words: int = Field(3, ge=1, description=(
        "fewer meaningful words of stated intent than this: R is not measured"))
    min_change_words: int = Field(6, ge=1, description=(
        "fewer meaningful words added by the change than this: R is not measured"))
    familiar_share: float = Field(0.34, ge=0, le=1, description=(
        "a description naming no code is penalised (R below threshold) only when at most this share of its "
        "content words occur in the change"))
    min_unfamiliar_words: int = Field(3, ge=1, description=(
        "... and at least this many of its content words occur nowhere in the change"))
    min_unfamiliar_words_none_familiar: int = Field(2, ge=1, description=(
        "a description none of whose content words occur in the change is penalised (R below threshold) when it "
        "has at least this many"))
    exempt_kinds: dict[str, list[str]] = Field(default_factory=dict, description=(
        "kinds of change whose description need not read like the code (a refactor, a rename, a dependency bump, "
        "a typo or changelog fix): kind -> the words or phrases of a title that declare it (lower case, matched "
        "as whole words). A description of such a kind that names no code the change leaves untouched is never "
        "penalised"))


class SeverityPenalties(_Frozen):
    critical: float = unit()
    high: float = unit()
    medium: float = unit()
    low: float = unit()


class ArchitectureRules(_Frozen):
    baseline: float = unit()
    floor: float = unit()
    penalties: SeverityPenalties


class ForensicsRules(_Frozen):
    giant_commit_lines: int = Field(ge=1)
    min_message_length: int = Field(ge=0)
    max_commits: int = Field(ge=1)


class MutationRules(_Frozen):
    max_mutants: int = Field(ge=0, le=500)
    seconds: float = Field(ge=0, le=3600)
    weight: float = unit()


class TestingRules(_Frozen):
    """T, version 2: from the differential run (base vs head) and the mutation kill rate (checks/court.py)."""

    version: int = Field(ge=1)
    at_zero: float = unit()
    at_full: float = unit()
    no_tests: float = unit()
    not_measured: float = unit()
    timeout_seconds: int = Field(ge=1, le=3600)
    regressed: float = unit()
    reruns: int = Field(default=2, ge=0, le=5, description="how many times each regressed or new failing test is "
                        "run again before it counts (one its re-runs do not reproduce is flaky: not charged)")
    mutation: MutationRules


class SandboxRules(_Frozen):
    """Limits of one sandboxed run. A repository may lower the size limits; memory, CPU and PIDs it may also
    raise, up to the ceilings the operator sets (``LOGOMESH_SANDBOX_MAX_*``, applied in ``SandboxLimits``)."""

    memory_mb: int = Field(ge=16, le=65536)
    cpus: float = Field(gt=0, le=64)
    pids: int = Field(ge=8, le=4096)
    work_mb: int = Field(ge=1, le=65536)
    tmp_mb: int = Field(ge=1, le=65536)
    nofile: int = Field(ge=16, le=65536)
    fsize_mb: int = Field(ge=1, le=65536)
    output_kb: int = Field(ge=1, le=65536)


class LogicRules(_Frozen):
    bound: float = Field(ge=0, le=0.5)
    anchor_components: tuple[Literal["rationale", "architecture", "testing"], ...] = Field(
        min_length=1, json_schema_extra={"uniqueItems": True})


class RedMultipliers(_Frozen):
    critical: float = unit()
    high: float = unit()
    medium: float = unit()


class RedKindRule(_Frozen):
    """How one attack class is rated: confirmed by a sandbox probe, or only found statically."""

    cwe: str = Field(pattern=CWE)
    confirmed: Severity | None = Field(description=(
        "severity when a sandbox probe confirmed the exploit; null: not confirmable by a probe"))
    unconfirmed: Literal["high", "medium", "low"] = Field(description=(
        "severity of a static finding that no probe confirmed; never critical: critical requires confirmation"))
    assumed: Literal["high", "medium", "low"] | None = Field(default=None, description=(
        "severity of an unconfirmed finding when the PR or the repository says the code must hold up to it (e.g. "
        "'thread-safe', 'shared by request threads'): the stated assumption makes the construct evidence; null: "
        "as unconfirmed"))
    confidence: float = unit()


class RedUntraced(_Frozen):
    """A candidate only a pattern scanner saw, with no traced path from untrusted input."""

    severity: Literal["medium", "low"]
    confidence: float = unit()


class RedRules(_Frozen):
    multipliers: RedMultipliers
    max_steps: int = Field(ge=1, le=1000)
    max_time_seconds: float = Field(gt=0, le=3600)
    mcts_branches: int = Field(ge=1, le=20)
    exploration_weight: float = Field(ge=0)
    probe_timeout_seconds: float = Field(gt=0, le=600)
    severity_table: dict[str, RedKindRule] = Field(
        json_schema_extra={"minProperties": 1, "propertyNames": {"pattern": "^[a-z][a-z0-9-]*$"}})
    untraced: RedUntraced
    confirmed_confidence: float = unit()


class VerdictRules(_Frozen):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, json_schema_extra=_absent_not_null)

    pass_: float = Field(alias="pass", ge=0, le=1)
    fail: float = unit()
    require_measured_tests_for_pass: bool


class SecurityCap(_Frozen):
    criterion_max: int = Field(ge=1, le=5)
    cis_max: float = unit()


class ChiefJusticeRules(_Frozen):
    security_cap: SecurityCap
    evidence_tolerance: int = Field(ge=0, le=4)
    dissent_spread: float = Field(ge=0, le=4)
    rejection_first: bool
    judge_weights: dict[str, dict[str, float]] = Field(json_schema_extra={
        "required": ["default"], "additionalProperties": {"type": "object", "additionalProperties": {
            "type": "number", "minimum": 0}}})

    def weight(self, criterion_id: str, judge: str) -> float:
        table = self.judge_weights.get(criterion_id, self.judge_weights["default"])
        return table.get(judge, self.judge_weights["default"].get(judge, 1.0))


class CallRule(_Frozen):
    name: str = Field(min_length=1)
    severity: Severity
    message: str = Field(min_length=1)
    cwe: str | None = Field(None, pattern=CWE)
    when_keyword: dict[str, list[Any]] | None = None
    unless_keyword: dict[str, list[Any]] | None = None


class ImportRule(_Frozen):
    name: str = Field(min_length=1)
    severity: Severity
    message: str = Field(min_length=1)
    cwe: str | None = Field(None, pattern=CWE)


class NetworkRule(_Frozen):
    prohibited: bool
    modules: tuple[str, ...]
    severity: Severity
    cwe: str


class RequiredPattern(_Frozen):
    id: str = Field(pattern=RULE_ID)
    paths: tuple[str, ...]
    kind: Literal["call", "import", "decorator", "docstring"]
    severity: Severity
    message: str
    name: str | None = None


class BoundaryRule(_Frozen):
    id: str = Field(pattern=RULE_ID)
    source: str = Field(min_length=1, description="glob of files the rule applies to, e.g. checks/**")
    forbidden_imports: tuple[str, ...] = Field(min_length=1)
    severity: Severity
    message: str


class Constraints(_Frozen):
    banned_calls: tuple[CallRule, ...]
    banned_imports: tuple[ImportRule, ...]
    network: NetworkRule
    required_patterns: tuple[RequiredPattern, ...]
    boundaries: tuple[BoundaryRule, ...]


class Criterion(_Frozen):
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: str
    question: str
    component: Component
    security: bool
    levels: dict[str, str] | None = Field(None, description="what each score level 1-5 means for this criterion",
                                          json_schema_extra={"propertyNames": {"pattern": "^[1-5]$"}})
    evidence: tuple[str, ...] | None = Field(None, description=(
        "the evidence kinds (detective facts) this criterion is judged on; required unless it is a security "
        "criterion, which then takes every security fact"))


class JudgePersona(_Frozen):
    title: str
    motto: str
    instructions: str = Field(min_length=40)


class AuditRules(_Frozen):
    """Optional settings of the repository audit mode (``logomesh audit``): the report's depth is its words and
    the theory terms it uses."""

    theory_terms: tuple[Annotated[str, Field(min_length=1)], ...] = Field(
        ("dialectic", "fan-out", "fan-in", "reducer", "metacognition", "synthesis", "persona", "deterministic",
         "state"), json_schema_extra={"uniqueItems": True})
    min_report_words: int = Field(300, ge=0)
    min_theory_terms: int = Field(4, ge=0)


class Assumptions(_Frozen):
    """What the repository states about how its code runs, which a change must not break."""

    concurrent: tuple[Annotated[str, Field(min_length=1)], ...] = Field((), description=(
        "globs of paths whose code runs concurrently (threads or processes), e.g. ratelimit/**: a read-modify-write "
        "of shared state there is probed whatever the budget, and a missing lock is evidence before it is "
        "confirmed"))


class RubricDocument(_Frozen):
    """A rubric document: the rules every review (or audit) is judged by."""

    name: str = Field(min_length=1)
    version: str = Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")
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
    criteria: tuple[Criterion, ...] = Field(min_length=1)
    judges: dict[str, JudgePersona] = Field(json_schema_extra={"minProperties": 1})
    audit: AuditRules = AuditRules()
    assumptions: Assumptions = Assumptions()


class Rubric(RubricDocument):
    """The effective, validated rubric with its identity (version and SHA-256 of its canonical JSON)."""

    sha256: str
    document: dict[str, Any]

    def component_kinds(self, component: str) -> frozenset[str]:
        """The evidence kinds the criteria of ``component`` list: the facts that measure it (A weighs them)."""
        return frozenset(kind for c in self.criteria if c.component == component for kind in c.evidence or ())

    def criterion(self, criterion_id: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(criterion_id)
