"""Load, validate and hash the rubric — the constitution every review is judged by.

Exceptions::

    RubricError            the rubric (or an override) is invalid; ``field`` names the bad field

The rubric's shape is :mod:`rubric.model`; a document is validated against the JSON Schema generated from it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from rubric.model import SCHEMA_PATH, Criterion, JudgePersona, Rubric, Severity

DEFAULT_RUBRIC = "rubric.json"


class RubricError(ValueError):
    """A rubric failed validation; ``field`` is a dotted path such as ``weights.testing``."""

    def __init__(self, field: str, message: str, source: str = "rubric") -> None:
        self.field = field
        self.message = message
        self.source = source
        super().__init__(f"{source}: invalid field '{field}': {message}")


# Limits a repository's overrides may only lower: raising them would let a PR buy itself more resources.
# (memory, CPU, PIDs and time may be raised: the operator's ceilings in settings bound them.)
LOWER_ONLY = (("sandbox", "work_mb"), ("sandbox", "tmp_mb"), ("sandbox", "nofile"), ("sandbox", "fsize_mb"),
              ("sandbox", "output_kb"))


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
    """Canonical JSON of a rubric document: sorted keys, no insignificant white space."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    """The checked-in schema (generated from :mod:`rubric.model`; a test keeps it current)."""
    text = resources.files("rubric").joinpath(SCHEMA_PATH.name).read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


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
    errors = sorted(_validator().iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
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


def build_rubric(document: Mapping[str, Any], source: str = "rubric") -> Rubric:
    validate_document(document, source)
    doc = copy.deepcopy(dict(document))
    return Rubric.model_validate({**doc, "sha256": hashlib.sha256(canonical_bytes(doc)).hexdigest(),
                                  "document": doc})


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


__all__ = ["Criterion", "JudgePersona", "Rubric", "RubricError", "Severity", "build_rubric", "load_rubric",
           "merge_overrides", "read_document"]
