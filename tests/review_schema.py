"""Every review JSON a test produces is checked against the shipped contract, ``schemas/review.schema.json``."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema

from app.review.schema import SCHEMA_PATH


@cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def review_json(stdout: str) -> dict[str, Any]:
    """The output of ``logomesh review --format json``, validated against the shipped schema."""
    data: dict[str, Any] = json.loads(stdout)
    errors = sorted(validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]]
    return data
