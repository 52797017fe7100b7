"""Verification of one log from its stored rows alone: recompute, re-check signatures, replay the tree.

Everything is recomputed from ``raw_result``; the stored hashes, scores and the body are only compared against
what that raw evaluation yields. The checks, by name:

- ``record``     the body parses and matches what ``raw_result`` yields; hashes and id match; columns agree
- ``signature``  the record's Ed25519 signature over its body, by a known key
- ``sequence``   leaf indices run 0, 1, 2, … without a gap (a gap is a deleted record)
- ``tree-head``  each signed tree head's signature, and the log head row, agree with the records
- ``consistency`` every signed tree head is a prefix of the tree recomputed now (RFC 9162 consistency proof)
- ``inclusion``  each checked record is in the latest signed tree head (RFC 9162 inclusion proof)
- ``document``   (on request) an audit's Markdown report is the one its record names, byte for byte
- ``recompute``  (on request) R recomputed from the vectors the evaluation records (``v_intent`` and the code
  chunks' vectors) agrees with the R it states (:mod:`checks.rationale_vectors`)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from checks.audit.render import markdown_sha256, split_dbom_footer
from checks.dbom import (
    AuditDbomBody,
    DbomError,
    DbomRecord,
    b64decode,
    consistency_proof,
    evaluation_sha256,
    inclusion_proof,
    merkle_root,
    parse_body,
    rebuild_body,
    record_id_for,
    record_signing_payload,
    tree_head_payload,
    verify_consistency,
    verify_inclusion,
)
from checks.models import SemanticResult
from checks.rationale_vectors import recompute_mismatches

# Above this many records, per-record inclusion proofs (O(n) each) are replaced by the equivalent check that the
# recomputed root over all leaves equals the signed root.
INCLUSION_PROOF_LIMIT = 1024

VerifyFn = Callable[[str, bytes, bytes], bool | None]  # (key_id, signature, message) -> ok, or None: unknown key


@dataclass(frozen=True)
class Problem:
    check: str
    message: str
    log_id: str
    record_id: str | None = None
    leaf_index: int | None = None

    def __str__(self) -> str:
        where = self.log_id
        if self.record_id is not None:
            where += f" record {self.record_id}"
        if self.leaf_index is not None:
            where += f" (leaf {self.leaf_index})"
        return f"[{self.check}] {where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "message": self.message, "log_id": self.log_id, "record_id": self.record_id,
                "leaf_index": self.leaf_index}


@dataclass
class VerifyReport:
    """What ``verify`` found. ``ok`` only if nothing broke."""

    logs: int = 0
    records_checked: int = 0
    tree_heads_checked: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def merge(self, other: VerifyReport) -> None:
        self.logs += other.logs
        self.records_checked += other.records_checked
        self.tree_heads_checked += other.tree_heads_checked
        self.problems.extend(other.problems)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "logs": self.logs, "records_checked": self.records_checked,
                "tree_heads_checked": self.tree_heads_checked, "problems": [p.to_json() for p in self.problems]}


def check_document(record: DbomRecord, text: str) -> list[Problem]:
    """Does ``text`` (an audit report as ``logomesh audit`` wrote it) match ``record``? The record holds the
    SHA-256 of the report above its DBOM footer, and the footer names the record."""

    def bad(message: str) -> Problem:
        return Problem("document", message, record.log_id, record.id, record.leaf_index)

    body = record.body
    if not isinstance(body, AuditDbomBody) or body.entanglement.markdown_sha256 is None:
        return [bad("this record is not an audit with a Markdown report; there is no document to check")]
    report, named = split_dbom_footer(text)
    problems: list[Problem] = []
    if named is None:
        problems.append(bad("the document has no DBOM footer"))
    elif named != record.id:
        problems.append(bad(f"the document's footer names DBOM {named}, not {record.id}"))
    digest = markdown_sha256(report)
    if digest != body.entanglement.markdown_sha256:
        problems.append(bad(f"the report hashes to {digest[:16]}…, the signed record says "
                            f"{body.entanglement.markdown_sha256[:16]}…: it was edited"))
    return problems


def recompute_problems(raw: Mapping[str, Any]) -> list[str]:
    """Where R recomputed from an evaluation's recorded vectors disagrees with its stated R (an audit, or an
    evaluation whose R was not measured, has nothing to recompute)."""
    semantic = raw.get("semantic")
    if semantic is None:
        return []
    try:
        result = SemanticResult.model_validate(semantic)
    except ValidationError as exc:
        return [f"the semantic result does not parse: {str(exc)[:200]}"]
    return recompute_mismatches(result)


def _check_record(row: Mapping[Any, Any], log_id: str, verify_sig: VerifyFn,
                  say: Callable[..., None], recompute: bool = False) -> bytes:
    """Check one row; return the leaf hash recomputed from ``raw_result`` (or the stored one if impossible)."""
    rid, index = str(row["id"]), int(row["leaf_index"])

    def bad(check: str, message: str) -> None:
        say(Problem(check, message, log_id, rid, index))

    try:
        stored_leaf = bytes.fromhex(str(row["leaf_hash"]))
    except ValueError:
        bad("record", "the stored leaf hash is not hex")
        stored_leaf = b""
    try:
        body = parse_body(json.loads(row["body"]))
    except ValueError as exc:
        bad("record", f"the stored body does not parse: {str(exc)[:200]}")
        return stored_leaf
    try:
        raw = json.loads(row["raw_result"])
        if not isinstance(raw, dict):
            raise DbomError("raw_result is not a JSON object")
        raw_hash = evaluation_sha256(raw)
        rebuilt = rebuild_body(raw, body)
    except (ValueError, ValidationError) as exc:
        kind = "an audit" if isinstance(body, AuditDbomBody) else "an evaluation"
        bad("record", f"raw_result does not parse as {kind}: {str(exc)[:200]}")
        return body.leaf_hash()
    if recompute:
        for message in recompute_problems(raw):
            bad("recompute", message)
    if raw_hash != row["evaluation_sha256"] or raw_hash != body.evaluation_sha256:
        bad("record", f"raw_result hashes to {raw_hash[:16]}…, the record says "
                      f"{str(row['evaluation_sha256'])[:16]}… (body {body.evaluation_sha256[:16]}…)")
    elif rebuilt != body:
        bad("record", "the signed body disagrees with raw_result (scores, verdict, intent or rulings)")
    leaf = rebuilt.leaf_hash()
    if body.leaf_hash() != stored_leaf:
        bad("record", "the stored leaf hash is not the hash of the stored body")
    if record_id_for(body.leaf_hash()) != rid:
        bad("record", "the record id is not derived from its leaf hash")
    for name, expected in body.columns().items():
        if row[name] != expected:
            bad("record", f"column {name} is {row[name]!r}, the signed body says {expected!r}")
    try:
        signature = b64decode(str(row["signature"]))
    except DbomError:
        bad("signature", "the signature is not base64")
    else:
        ok = verify_sig(str(row["key_id"]), signature, record_signing_payload(body))
        if ok is None:
            bad("signature", f"signed by unknown key {row['key_id']}")
        elif not ok:
            bad("signature", f"the signature does not verify under key {row['key_id']}")
    return leaf


def verify_log(log_id: str, rows: Sequence[Mapping[Any, Any]], heads: Sequence[Mapping[Any, Any]],
               log_head: Mapping[Any, Any] | None, verify_sig: VerifyFn, only: str | None = None,
               recompute: bool = False) -> VerifyReport:
    """Verify one log. ``rows`` ordered by leaf index, ``heads`` by tree size; ``only`` limits record checks;
    ``recompute`` adds the ``recompute`` check to them."""
    report = VerifyReport(logs=1)
    say = report.problems.append
    leaves: list[bytes] = []
    for expected, row in enumerate(rows):
        index = int(row["leaf_index"])
        if index != expected:
            say(Problem("sequence", f"leaf index {index} where {expected} was expected: a record was deleted or "
                                    "moved", log_id, str(row["id"]), index))
        if only is None or row["id"] == only:
            report.records_checked += 1
            leaves.append(_check_record(row, log_id, verify_sig, say, recompute))
        else:
            # other records still feed the tree, recomputed from their raw_result all the same
            leaves.append(_check_record(row, log_id, verify_sig, lambda _p: None))
    n = len(leaves)
    root = merkle_root(leaves)

    if log_head is not None:
        if int(log_head["tree_size"]) != n:
            say(Problem("tree-head", f"the log head counts {log_head['tree_size']} records, {n} are stored", log_id))
        elif log_head["root_hash"] != root.hex():
            say(Problem("tree-head", "the log head's root is not the root of the stored records", log_id))

    latest: tuple[int, bytes] | None = None
    for head in heads:
        report.tree_heads_checked += 1
        size = int(head["tree_size"])
        try:
            head_root = bytes.fromhex(str(head["root_hash"]))
            signature = b64decode(str(head["signature"]))
        except (ValueError, DbomError):
            say(Problem("tree-head", f"tree head {size} is malformed", log_id))
            continue
        ok = verify_sig(str(head["key_id"]), signature,
                        tree_head_payload(log_id, size, head_root, int(head["timestamp_ms"])))
        if not ok:
            reason = "unknown key" if ok is None else "bad signature"
            say(Problem("tree-head", f"signed tree head of size {size}: {reason}", log_id))
            continue
        if size > n:
            say(Problem("consistency", f"a tree head was signed at size {size} but only {n} records remain: "
                                       "records were deleted", log_id))
            continue
        if not verify_consistency(size, n, head_root, root, consistency_proof(size, leaves)):
            say(Problem("consistency", f"the records no longer match the tree head signed at size {size}", log_id))
        if latest is None or size >= latest[0]:
            latest = (size, head_root)

    if n and (latest is None or latest[0] < n):
        covered = 0 if latest is None else latest[0]
        say(Problem("tree-head", f"records {covered}..{n - 1} are not covered by a signed tree head", log_id))
    if latest is not None:
        size, head_root = latest
        targets = [i for i, row in enumerate(rows[:size]) if only is None or row["id"] == only]
        if only is None and len(targets) > INCLUSION_PROOF_LIMIT:
            if merkle_root(leaves[:size]) != head_root:
                say(Problem("inclusion", f"the records do not hash to the signed root at size {size}", log_id))
        else:
            for i in targets:
                if not verify_inclusion(i, size, leaves[i], inclusion_proof(i, leaves[:size]), head_root):
                    say(Problem("inclusion", f"not included in the signed tree head of size {size}", log_id,
                                str(rows[i]["id"]), i))
    return report
