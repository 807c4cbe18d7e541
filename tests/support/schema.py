"""gbls's JSON output read through gbls.schema.json: every test that reads it checks it against the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = json.loads((Path(__file__).parents[2] / "gbls.schema.json").read_text())


def gbls_json(text: str) -> Any:
    """The output of ``gbls check --format json``, parsed, once it is valid by the schema."""
    document = json.loads(text)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    return document
