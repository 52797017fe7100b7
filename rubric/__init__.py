"""The constitution: ``rubric.json``, its JSON Schema and the loader that validates and hashes it."""

from rubric.loader import (
    Criterion,
    JudgePersona,
    Rubric,
    RubricError,
    Severity,
    build_rubric,
    load_rubric,
    merge_overrides,
    read_document,
)

__all__ = [
    "Criterion",
    "JudgePersona",
    "Rubric",
    "RubricError",
    "Severity",
    "build_rubric",
    "load_rubric",
    "merge_overrides",
    "read_document",
]
