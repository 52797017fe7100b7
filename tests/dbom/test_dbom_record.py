"""The DBOM body, its hash and id, signatures, keys and the DSSE export — no database."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.ledger.errors import SigningKeyError
from app.ledger.export import dsse_envelope, open_dsse
from app.ledger.keys import KeyRing, SigningKey, verify_signature
from checks.dbom import (
    INTOTO_PAYLOAD_TYPE,
    DbomError,
    DbomRecord,
    Entanglement,
    b64decode,
    build_body,
    canonical_json,
    dsse_pae,
    evaluation_payload,
    record_signing_payload,
)
from tests.dbom.factory import entanglement, evaluation

GOLDEN_PAYLOAD = {
    "rationale_score": 0.5, "architecture_score": 0.8, "testing_score": 0.5, "logic_score": 0.7,
    "cis_raw": 0.625, "cis_score": 0.625, "red_penalty_applied": 0.0, "intent_penalty": 1.0,
    "verdict": "neutral", "semantic": None,
    "inputs": {"intent_sha256": "1" * 64},
}
GOLDEN_ENTANGLEMENT = Entanglement(
    repo="octo/calc", pr_number=7, base_sha="a" * 40, head_sha="b" * 40, diff_sha256="d" * 64,
    pr_text_sha256="1" * 64, rubric_version="1.0.0", rubric_sha256="e" * 64,
)

GOLDEN_BODY = (
    '{"cis_score":0.625,"components":{"architecture":0.8,"cis_raw":0.625,"intent_penalty":1,"logic":0.7,"'
    'rationale":0.5,"red_penalty":0,"testing":0.5},"entanglement":{"base_sha":"aaaaaaaaaaaaaaaaaaaaaaaaaa'
    'aaaaaaaaaaaaaa","config_sha256":null,"diff_sha256":"dddddddddddddddddddddddddddddddddddddddddddddddd'
    'dddddddddddddddd","head_sha":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","judge_prompt_hashes":{},"mo'
    'del_ids":{},"pr_number":7,"pr_text_sha256":"11111111111111111111111111111111111111111111111111111111'
    '11111111","repo":"octo/calc","rubric_sha256":"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'
    'eeeeeeeeee","rubric_version":"1.0.0","sandbox_image":null,"sandbox_image_digest":null,"tool_versions'
    '":{}},"evaluation_sha256":"3afbf5b802d637c0b3cc2eb13d422f483b4becc351d92b2d7db48ffad49ab523","instal'
    'lation_id":null,"intent":{"model":null,"similarity":null,"text_sha256":"1111111111111111111111111111'
    '111111111111111111111111111111111111"},"schema":"logomesh.dbom/v1","verdict":"neutral"}'
)


def test_golden_body_bytes_and_hash() -> None:
    body = build_body(GOLDEN_PAYLOAD, installation_id=None, entanglement=GOLDEN_ENTANGLEMENT)
    assert body.canonical().decode() == GOLDEN_BODY
    # both hashes checked with `sha256sum` outside Python
    assert body.evaluation_sha256 == "3afbf5b802d637c0b3cc2eb13d422f483b4becc351d92b2d7db48ffad49ab523"
    assert body.leaf_hash().hex() == "71b07451c919969dbaef76c0ba52da41665545aa2a2af3f8ccc04532e75b2c13"
    assert body.record_id() == body.leaf_hash().hex()[:32]


def test_reordered_keys_and_respelled_floats_give_the_same_record() -> None:
    ev = evaluation()
    payload = evaluation_payload(ev)
    respelled = json.loads(json.dumps(payload, sort_keys=True).replace("0.5,", "5e-1,").replace(": 1.0,", ": 1,"))
    reordered = dict(reversed(list(respelled.items())))
    one = build_body(payload, installation_id=3, entanglement=entanglement(ev))
    two = build_body(reordered, installation_id=3, entanglement=entanglement(ev))
    assert one.leaf_hash() == two.leaf_hash()


def test_every_entangled_input_changes_the_hash() -> None:
    ev = evaluation()
    base = entanglement(ev)
    body = build_body(evaluation_payload(ev), installation_id=None, entanglement=base)
    changes = {"repo": "x/y", "pr_number": 8, "base_sha": "c" * 40, "head_sha": "c" * 40,
               "diff_sha256": "0" * 64, "pr_text_sha256": "0" * 64, "config_sha256": "0" * 64,
               "rubric_version": "9", "rubric_sha256": "0" * 64, "sandbox_image_digest": "sha256:" + "0" * 64,
               "model_ids": {"embedding": "other"}, "judge_prompt_hashes": {"prosecutor": "0" * 64},
               "tool_versions": {"logomesh": "9"}}
    for field, value in changes.items():
        other = build_body(evaluation_payload(ev), installation_id=None,
                           entanglement=base.model_copy(update={field: value}))
        assert other.leaf_hash() != body.leaf_hash(), field
    assert build_body(evaluation_payload(ev), installation_id=1, entanglement=base).leaf_hash() != body.leaf_hash()


def test_not_an_evaluation_is_a_clear_error() -> None:
    with pytest.raises(DbomError, match="missing"):
        build_body({"verdict": "pass"}, installation_id=None, entanglement=GOLDEN_ENTANGLEMENT)


def test_signature_round_trip_and_a_flipped_byte_fails() -> None:
    key = SigningKey.from_private(Ed25519PrivateKey.generate())
    body = build_body(GOLDEN_PAYLOAD, installation_id=None, entanglement=GOLDEN_ENTANGLEMENT)
    message = record_signing_payload(body)
    signature = key.sign(message)
    assert verify_signature(key.public, signature, message)
    for i in (0, 31, 63):
        flipped = bytearray(signature)
        flipped[i] ^= 0x01
        assert not verify_signature(key.public, bytes(flipped), message)
    tampered = bytearray(message)
    tampered[len(message) // 2] ^= 0x01
    assert not verify_signature(key.public, signature, bytes(tampered))
    other = SigningKey.from_private(Ed25519PrivateKey.generate())
    assert not verify_signature(other.public, signature, message)


def test_key_is_created_0600_reused_and_rotated_with_old_keys_listed(tmp_path: Path) -> None:
    directory = tmp_path / "keys"
    ring = KeyRing.load(directory)
    key_file = directory / "signing.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert KeyRing.load(directory).active.key_id == ring.active.key_id
    old = ring.active.key_id
    new = ring.rotate().key_id
    assert new != old
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    reloaded = KeyRing.load(directory)
    assert reloaded.active.key_id == new
    listing = {k["key_id"]: k["status"] for k in reloaded.listing()}
    assert listing == {new: "active", old: "retired"}
    assert reloaded.listing()[0]["alg"] == "Ed25519"
    assert "PUBLIC KEY" in reloaded.listing()[0]["public_key"]


def test_a_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "keys"
    KeyRing.load(directory)
    os.chmod(directory / "signing.pem", 0o644)
    with pytest.raises(SigningKeyError, match="0644"):
        KeyRing.load(directory)


def test_a_key_supplied_as_pem_wins(tmp_path: Path) -> None:
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    ring = KeyRing.load(tmp_path / "keys", pem)
    assert ring.active.key_id == SigningKey.from_private(private).key_id
    assert not (tmp_path / "keys" / "signing.pem").exists()
    with pytest.raises(SigningKeyError):
        KeyRing.load(None, "not a key")


def test_dsse_envelope_round_trip_and_tamper(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    ev = evaluation()
    body = build_body(evaluation_payload(ev), installation_id=None, entanglement=entanglement(ev))
    record = DbomRecord(id=body.record_id(), log_id="local", leaf_index=0, leaf_hash=body.leaf_hash().hex(),
                        body=body, evaluation_sha256=body.evaluation_sha256, raw_result=evaluation_payload(ev),
                        signature="", key_id="", created_at=datetime.now(UTC))
    key = SigningKey.from_private(Ed25519PrivateKey.generate())
    envelope = dsse_envelope(record, key)
    assert envelope["payloadType"] == INTOTO_PAYLOAD_TYPE
    statement = open_dsse(envelope, {key.key_id: key.public})
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"][0]["digest"] == {"gitCommit": ev.inputs.head}
    assert statement["predicate"]["dbom"] == body.to_json()
    # the signature is over the DSSE PAE, not the bare payload
    payload = b64decode(envelope["payload"])
    sig = b64decode(envelope["signatures"][0]["sig"])
    assert verify_signature(key.public, sig, dsse_pae(INTOTO_PAYLOAD_TYPE, payload))
    assert not verify_signature(key.public, sig, payload)
    forged = json.loads(payload)
    forged["predicate"]["dbom"]["cis_score"] = 1.0
    with pytest.raises(DbomError):
        open_dsse({**envelope, "payload": __import__("base64").b64encode(canonical_json(forged)).decode()},
                  {key.key_id: key.public})
