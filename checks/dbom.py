"""The Decision Bill of Materials as mathematics: canonical bytes, the record and its hash, the Merkle log.

No I/O, no clocks, no keys: the ledger (``app/ledger``) stores and signs what this module computes, and any
verifier can recompute every hash here from the stored raw evaluation.

- **Canonical JSON** is RFC 8785 (JCS), so key order and float spelling never change a hash.
- **The record** comes in two kinds, told apart by its ``schema``. :class:`DbomBody` (``logomesh.dbom/v1``)
  binds a pull-request evaluation's hash ``H(Δ)``, the intent, the CIS and the verdict to the inputs it was
  computed from (:class:`Entanglement`); :class:`AuditDbomBody` (``logomesh.audit-dbom/v1``) binds a repository
  audit's hash, its per-criterion rulings and verdict to what was read (:class:`AuditEntanglement`). Both are
  re-derived from the stored raw result (:func:`rebuild_body`). Timestamps and leaf positions live outside them,
  so identical reviews hash identically.
- **The log** is an RFC 6962 / RFC 9162 Merkle tree: ``leaf = SHA-256(0x00 ‖ JCS(body))``,
  ``node = SHA-256(0x01 ‖ left ‖ right)``, with inclusion and consistency proofs and their verifiers.
- **DSSE**: the pre-authentication encoding that an in-toto attestation envelope signs.

Exceptions::

    DbomError              a payload cannot be canonicalised or a proof request is out of range
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

import rfc8785
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from checks.models import Evaluation

RECORD_ID_LENGTH = 32  # hex characters of the leaf hash: 128 bits, URL-safe
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()

INTOTO_STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
DBOM_PREDICATE_TYPE = "https://logomesh.dev/dbom/v1"
AUDIT_PREDICATE_TYPE = "https://logomesh.dev/audit-dbom/v1"
GIT_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


class DbomError(ValueError):
    """A value cannot be canonicalised, or a proof was asked for outside the tree."""


# --- canonical JSON ---------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of ``value`` (a JSON-ready value or a pydantic model)."""
    try:
        return rfc8785.dumps(_plain(value))
    except rfc8785.CanonicalizationError as exc:
        raise DbomError(f"cannot canonicalise: {exc}") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def evaluation_payload(evaluation: Evaluation) -> dict[str, Any]:
    """The evaluation as stored in ``raw_result``: exactly what the court returned, JSON-ready."""
    return evaluation.model_dump(mode="json")


def evaluation_sha256(payload: Mapping[str, Any] | Evaluation) -> str:
    """``H(Δ)``: SHA-256 of the evaluation's canonical JSON."""
    if isinstance(payload, Evaluation):
        payload = evaluation_payload(payload)
    return sha256_hex(canonical_json(dict(payload)))


# --- the record -------------------------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Entanglement(_Frozen):
    """The inputs a verdict was computed from. Change any of them and the record's hash changes."""

    repo: str
    pr_number: int | None = None
    base_sha: str
    head_sha: str
    diff_sha256: str
    pr_text_sha256: str
    config_sha256: str | None = Field(default=None, description="the base's .logomesh.yml; None if absent")
    rubric_version: str
    rubric_sha256: str
    sandbox_image: str | None = None
    sandbox_image_digest: str | None = None
    model_ids: dict[str, str] = Field(default_factory=dict, description="role -> model id, e.g. embedding")
    judge_prompt_hashes: dict[str, str] = Field(default_factory=dict, description="persona -> SHA-256 of prompt")
    tool_versions: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def from_evaluation(cls, evaluation: Evaluation, **known: Any) -> Entanglement:
        """Everything the evaluation itself records; ``known`` adds or overrides what only the caller knows."""
        inputs = evaluation.inputs
        model_ids: dict[str, str] = {}
        if evaluation.semantic is not None and evaluation.semantic.model:
            model_ids["embedding"] = evaluation.semantic.model
        fields: dict[str, Any] = {
            "repo": inputs.repo,
            "pr_number": inputs.pr_number,
            "base_sha": inputs.base,
            "head_sha": inputs.head,
            "diff_sha256": inputs.diff_sha256,
            "pr_text_sha256": inputs.intent_sha256,
            "config_sha256": inputs.config_sha256,
            "rubric_version": evaluation.rubric.version,
            "rubric_sha256": evaluation.rubric.sha256,
            "sandbox_image": evaluation.tests.image if evaluation.tests is not None else None,
            "model_ids": model_ids,
        }
        merged_models = {**model_ids, **dict(known.pop("model_ids", {}) or {})}
        fields.update(known)
        fields["model_ids"] = merged_models
        return cls(**fields)


class IntentRef(_Frozen):
    """``v_intent``: the stated intent by hash, and the model that embedded it."""

    text_sha256: str
    model: str | None = None
    similarity: float | None = None


class Components(_Frozen):
    rationale: float
    architecture: float
    testing: float
    logic: float
    cis_raw: float
    red_penalty: float
    intent_penalty: float


class _Body(_Frozen):
    """What every kind of DBOM body can do: its canonical bytes, leaf hash, id and ledger columns."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: str
    installation_id: int | None
    evaluation_sha256: str
    verdict: Literal["pass", "neutral", "fail"]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())

    def leaf_hash(self) -> bytes:
        return leaf_hash(self.canonical())

    def record_id(self) -> str:
        return record_id_for(self.leaf_hash())

    def columns(self) -> dict[str, Any]:
        """The ledger's indexed columns, exactly as the signed body states them."""
        raise NotImplementedError


class DbomBody(_Body):
    """The hashed, signed part of a pull request's DBOM: ``⟨H(Δ), v_intent, Score_CIS, verdict, inputs⟩``."""

    schema_: Literal["logomesh.dbom/v1"] = Field(default="logomesh.dbom/v1", alias="schema")
    intent: IntentRef
    cis_score: float
    components: Components
    entanglement: Entanglement

    def columns(self) -> dict[str, Any]:
        ent = self.entanglement
        return {"installation_id": self.installation_id, "repo": ent.repo, "pr_number": ent.pr_number,
                "head_sha": ent.head_sha, "verdict": self.verdict, "cis_score": self.cis_score}


class AuditEntanglement(_Frozen):
    """What an audit read that its result does not itself hold. Change any of it and the record's hash changes."""

    tree_sha256: str = Field(description="SHA-256 over every path and every source file the audit read")
    markdown_sha256: str | None = Field(default=None, description="the rendered Markdown report, before its footer")
    model_ids: dict[str, str] = Field(default_factory=dict, description="role -> model id, e.g. vision")
    tool_versions: dict[str, str] = Field(default_factory=dict)


class ClaimTally(_Frozen):
    """How the report's claims fared against the repository."""

    verified: int = 0
    hallucination: int = 0
    unverified: int = 0


class AuditDbomBody(_Body):
    """The hashed, signed part of a repository audit's DBOM: the audit's hash, rulings and verdict, and inputs."""

    schema_: Literal["logomesh.audit-dbom/v1"] = Field(default="logomesh.audit-dbom/v1", alias="schema")
    repo: str
    head_sha: str
    rubric_version: str
    rubric_sha256: str
    report_sha256: str | None
    score: float = Field(description="mean ruling, 1–5")
    unit_score: float = Field(description="the same on [0, 1]")
    criteria: dict[str, float] = Field(description="criterion id -> the Chief Justice's ruling, 1–5")
    claims: ClaimTally
    entanglement: AuditEntanglement

    def columns(self) -> dict[str, Any]:
        return {"installation_id": self.installation_id, "repo": self.repo, "pr_number": None,
                "head_sha": self.head_sha, "verdict": self.verdict, "cis_score": self.unit_score}


AnyBody = DbomBody | AuditDbomBody
_BODY = TypeAdapter(Annotated[AnyBody, Field(discriminator="schema_")])


def parse_body(data: Any) -> AnyBody:
    """A stored body (a dict) as the kind its ``schema`` names; raises :class:`DbomError` if it is neither."""
    try:
        return _BODY.validate_python(data)
    except ValidationError as exc:
        raise DbomError(f"not a DBOM body: {str(exc)[:300]}") from exc


def build_body(payload: Mapping[str, Any], *, installation_id: int | None, entanglement: Entanglement) -> DbomBody:
    """The DBOM body for a raw evaluation payload. Verification calls this again on ``raw_result``."""
    semantic = payload.get("semantic") or {}
    try:
        return DbomBody(
            installation_id=installation_id,
            evaluation_sha256=evaluation_sha256(payload),
            intent=IntentRef(
                text_sha256=payload["inputs"]["intent_sha256"],
                model=semantic.get("model"),
                similarity=semantic.get("raw_similarity"),
            ),
            cis_score=payload["cis_score"],
            verdict=payload["verdict"],
            components=Components(
                rationale=payload["rationale_score"],
                architecture=payload["architecture_score"],
                testing=payload["testing_score"],
                logic=payload["logic_score"],
                cis_raw=payload["cis_raw"],
                red_penalty=payload["red_penalty_applied"],
                intent_penalty=payload["intent_penalty"],
            ),
            entanglement=entanglement,
        )
    except (KeyError, TypeError) as exc:
        raise DbomError(f"not an evaluation payload: missing {exc}") from exc


def build_audit_body(payload: Mapping[str, Any], *, installation_id: int | None,
                     entanglement: AuditEntanglement) -> AuditDbomBody:
    """The DBOM body for a raw audit result payload. Verification calls this again on ``raw_result``."""
    try:
        tally = {"verified": 0, "hallucination": 0, "unverified": 0}
        for check in payload["claims"]:
            tally[check["status"]] += 1
        report = payload["report"]
        return AuditDbomBody(
            installation_id=installation_id,
            evaluation_sha256=evaluation_sha256(payload),
            repo=payload["repo"],
            head_sha=payload["head_sha"],
            rubric_version=payload["rubric"]["version"],
            rubric_sha256=payload["rubric"]["sha256"],
            report_sha256=None if report is None else report["sha256"],
            score=payload["score"],
            unit_score=payload["unit_score"],
            verdict=payload["verdict"],
            criteria={r["criterion_id"]: r["score"] for r in payload["rulings"]},
            claims=ClaimTally(**tally),
            entanglement=entanglement,
        )
    except (KeyError, TypeError) as exc:
        raise DbomError(f"not an audit payload: missing {exc}") from exc


def rebuild_body(payload: Mapping[str, Any], like: AnyBody) -> AnyBody:
    """The body ``payload`` yields, of the same kind and with the same outer inputs as the stored ``like``."""
    if isinstance(like, AuditDbomBody):
        return build_audit_body(payload, installation_id=like.installation_id, entanglement=like.entanglement)
    return build_body(payload, installation_id=like.installation_id, entanglement=like.entanglement)


def record_id_for(leaf: bytes) -> str:
    return leaf.hex()[:RECORD_ID_LENGTH]


# --- the Merkle tree (RFC 6962 §2.1, RFC 9162 §2.1) ---------------------------------------------------------


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (n ≥ 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def _mth(leaves: Sequence[bytes], lo: int, hi: int) -> bytes:
    n = hi - lo
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return leaves[lo]
    k = _split(n)
    return node_hash(_mth(leaves, lo, lo + k), _mth(leaves, lo + k, hi))


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """MTH over leaf hashes (already ``leaf_hash``-ed)."""
    return _mth(leaves, 0, len(leaves))


def inclusion_proof(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PATH(m, D[n]): the audit path for leaf ``index`` in the tree of all ``leaves``."""
    if not 0 <= index < len(leaves):
        raise DbomError(f"leaf {index} is outside a tree of size {len(leaves)}")
    path: list[bytes] = []
    lo, hi, m = 0, len(leaves), index
    while hi - lo > 1:
        k = _split(hi - lo)
        if m < k:
            path.append(_mth(leaves, lo + k, hi))
            hi = lo + k
        else:
            path.append(_mth(leaves, lo, lo + k))
            lo, m = lo + k, m - k
    path.reverse()
    return path


def consistency_proof(first_size: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PROOF(m, D[n]): shows the tree of the first ``first_size`` leaves is a prefix of the tree of all."""
    n = len(leaves)
    if not 0 <= first_size <= n:
        raise DbomError(f"tree size {first_size} is outside 0..{n}")
    if first_size in (0, n):
        return []
    proof: list[bytes] = []
    lo, hi, m, complete = 0, n, first_size, True
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            proof.append(_mth(leaves, lo + k, hi))
            hi = lo + k
        else:
            proof.append(_mth(leaves, lo, lo + k))
            lo, m, complete = lo + k, m - k, False
    if not complete:
        proof.append(_mth(leaves, lo, hi))
    proof.reverse()
    return proof


def verify_inclusion(index: int, tree_size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 §2.1.3.2."""
    if not 0 <= index < tree_size:
        return False
    fn, sn, r = index, tree_size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(first_size: int, second_size: int, first_root: bytes, second_root: bytes,
                       proof: Sequence[bytes]) -> bool:
    """RFC 9162 §2.1.4.2, plus the trivial cases (empty first tree, equal sizes)."""
    if not 0 <= first_size <= second_size:
        return False
    if first_size == 0:
        return not proof and first_root == EMPTY_ROOT
    if first_size == second_size:
        return not proof and first_root == second_root
    path = list(proof)
    if first_size & (first_size - 1) == 0:
        path.insert(0, first_root)
    if not path:
        return False
    fn, sn = first_size - 1, second_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_root and sr == second_root and sn == 0


def frontier_append(frontier: Sequence[bytes], size: int, leaf: bytes) -> list[bytes]:
    """Add a leaf to the right edge of a tree of ``size`` leaves kept as its perfect subtrees (largest first).

    The log head keeps only this O(log n) frontier, so an append never reads the whole log.
    """
    if len(frontier) != size.bit_count():
        raise DbomError(f"a frontier of {len(frontier)} subtrees cannot describe {size} leaves")
    stack, h, s = list(frontier), leaf, size
    while s & 1:
        h = node_hash(stack.pop(), h)
        s >>= 1
    stack.append(h)
    return stack


def frontier_root(frontier: Sequence[bytes]) -> bytes:
    if not frontier:
        return EMPTY_ROOT
    h = frontier[-1]
    for left in reversed(frontier[:-1]):
        h = node_hash(left, h)
    return h


# --- signed payloads --------------------------------------------------------------------------------------


def tree_head_payload(log_id: str, tree_size: int, root_hash: bytes, timestamp_ms: int) -> bytes:
    """The bytes a signed tree head signs."""
    return canonical_json({"schema": "logomesh.sth/v1", "log_id": log_id, "tree_size": tree_size,
                           "root_hash": root_hash.hex(), "timestamp": timestamp_ms})


def record_signing_payload(body: AnyBody) -> bytes:
    """The bytes ``σ_judge`` signs: the canonical body behind its schema as a domain tag, so no other message
    (and no body of the other kind) can collide."""
    return body.schema_.encode("ascii") + b"\x00" + body.canonical()


def dsse_pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    pt = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(pt), pt, len(payload), payload)


def intoto_statement(body: AnyBody, record_id: str, raw_result: Mapping[str, Any]) -> dict[str, Any]:
    """An in-toto Statement v1 whose subject is the reviewed (or audited) commit and whose predicate is the DBOM.

    An audit of a plain directory has no commit: its subject is then the SHA-256 of the tree it read.
    """
    if isinstance(body, AuditDbomBody):
        digest = ({"gitCommit": body.head_sha} if GIT_COMMIT.match(body.head_sha)
                  else {"sha256": body.entanglement.tree_sha256})
        return {
            "_type": INTOTO_STATEMENT_TYPE,
            "subject": [{"name": f"{body.repo}@{body.head_sha}", "digest": digest}],
            "predicateType": AUDIT_PREDICATE_TYPE,
            "predicate": {"id": record_id, "dbom": body.to_json(), "audit": dict(raw_result)},
        }
    ent = body.entanglement
    name = f"{ent.repo}@{ent.head_sha}" if ent.pr_number is None else f"{ent.repo}#{ent.pr_number}@{ent.head_sha}"
    return {
        "_type": INTOTO_STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"gitCommit": ent.head_sha}}],
        "predicateType": DBOM_PREDICATE_TYPE,
        "predicate": {"id": record_id, "dbom": body.to_json(), "evaluation": dict(raw_result)},
    }


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise DbomError(f"not base64: {text[:40]!r}") from exc


# --- the stored record ------------------------------------------------------------------------------------


class DbomRecord(_Frozen):
    """A DBOM as the ledger holds it: the signed body, where it sits in its log, and the raw result."""

    id: str
    log_id: str
    leaf_index: int
    leaf_hash: str
    body: Annotated[AnyBody, Field(discriminator="schema_")]
    evaluation_sha256: str
    raw_result: dict[str, Any]
    signature: str
    key_id: str
    created_at: datetime

    @property
    def verdict(self) -> str:
        return self.body.verdict

    @property
    def cis_score(self) -> float:
        """The score on [0, 1]: the CIS of a review, the unit score of an audit."""
        return float(self.body.columns()["cis_score"])
