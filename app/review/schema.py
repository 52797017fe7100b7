"""The JSON Schema of ``logomesh review --format json``, generated from :class:`checks.report.ReviewReport` and
shipped as ``schemas/review.schema.json`` (draft 2020-12).

    python -m app.review.schema            # rewrite schemas/review.schema.json after changing the models
    python -m app.review.schema --check    # exit 1 when the shipped file is not what the models generate
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from checks.report import SCHEMA_VERSION, ReviewReport

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "review.schema.json"
SCHEMA_ID = f"https://logomesh.dev/schemas/review-{SCHEMA_VERSION}.schema.json"


class _Generator(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema() -> dict[str, Any]:
    """What ``--format json`` prints, as a JSON Schema (the serialized form: every field is always present)."""
    schema = ReviewReport.model_json_schema(mode="serialization", schema_generator=_Generator)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            **{k: v for k, v in schema.items() if k != "title"},
            "title": f"LogoMesh review (logomesh review --format json), schema version {SCHEMA_VERSION}"}


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m app.review.schema [--check]
    if sys.argv[1:] == ["--check"]:
        sys.exit(0 if SCHEMA_PATH.read_text(encoding="utf-8") == schema_text() else 1)
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
