"""DSSE envelopes around in-toto Statement v1 DBOMs, signed with the ledger's key, so attestation tooling can
carry a verdict (``logomesh dbom export ID --format dsse``)."""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from app.ledger.keys import SigningKey, verify_signature
from checks.dbom import (
    INTOTO_PAYLOAD_TYPE,
    DbomError,
    DbomRecord,
    b64decode,
    b64encode,
    canonical_json,
    dsse_pae,
    intoto_statement,
)


def dsse_envelope(record: DbomRecord, key: SigningKey) -> dict[str, Any]:
    statement = intoto_statement(record.body, record.id, record.raw_result)
    payload = canonical_json(statement)
    signature = key.sign(dsse_pae(INTOTO_PAYLOAD_TYPE, payload))
    return {"payloadType": INTOTO_PAYLOAD_TYPE, "payload": b64encode(payload),
            "signatures": [{"keyid": key.key_id, "sig": b64encode(signature)}]}


def open_dsse(envelope: dict[str, Any], keys: dict[str, Ed25519PublicKey]) -> dict[str, Any]:
    """Check an envelope's signature with one of ``keys`` (by key id) and return its statement."""
    try:
        payload_type = str(envelope["payloadType"])
        payload = b64decode(str(envelope["payload"]))
        signatures = list(envelope["signatures"])
    except (KeyError, TypeError) as exc:
        raise DbomError(f"not a DSSE envelope: missing {exc}") from exc
    for entry in signatures:
        key = keys.get(str(entry.get("keyid")))
        if key is not None and verify_signature(key, b64decode(str(entry.get("sig", ""))),
                                                dsse_pae(payload_type, payload)):
            statement = json.loads(payload)
            if not isinstance(statement, dict):
                raise DbomError("the DSSE payload is not a JSON object")
            return statement
    raise DbomError("no signature on the envelope verifies under a known key")
