"""The rubric's JSON Schema, generated from :class:`rubric.model.RubricDocument` and checked in as
``rubric/rubric.schema.json`` (what :func:`rubric.loader.validate_document` validates with, field paths and all).

    python -m rubric.schema            # rewrite rubric/rubric.schema.json after changing rubric/model.py
    python -m rubric.schema --check    # exit 1 when the checked-in file is not what the models generate
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from rubric.model import SCHEMA_ID, SCHEMA_PATH, RubricDocument


class _Generator(GenerateJsonSchema):
    """Property titles are pydantic's echo of the field name: left out."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a rubric document (draft 2020-12), generated from :class:`RubricDocument`."""
    schema = RubricDocument.model_json_schema(by_alias=True, mode="validation", schema_generator=_Generator)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            **{k: v for k, v in schema.items() if k != "title"}, "title": "LogoMesh rubric (the constitution)"}


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m rubric.schema [--check]
    if sys.argv[1:] == ["--check"]:
        sys.exit(0 if SCHEMA_PATH.read_text(encoding="utf-8") == schema_text() else 1)
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
