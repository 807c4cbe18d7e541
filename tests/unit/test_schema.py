"""gbls.schema.json: a valid JSON Schema, and as strict as gbls's output (tests/schema.py checks every
JSON output of the suite against it)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from gbls.engine.model import failure_report
from gbls.formats import json as json_format

from ..support.schema import SCHEMA, gbls_json


def test_the_schema_is_a_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_an_undocumented_property_is_refused() -> None:
    document = json.loads(
        json_format.render([failure_report("/m.py", "io", "cannot read the file")], "2.13.0", {})
    )
    assert gbls_json(json.dumps(document))["files"][0]["failure"]["kind"] == "io"
    document["files"][0]["extra"] = 1
    with pytest.raises(jsonschema.ValidationError, match="'extra' was unexpected"):
        gbls_json(json.dumps(document))
