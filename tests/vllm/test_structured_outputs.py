"""The extract task's request against a real vLLM server: structured outputs hold even random weights to the
schema, `$ref`s and all, and the element ids to the document's own."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from services.core.settings import Settings
from services.results.document_task import TaskModel, extract
from tests.vllm_server import VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

ENTRIES = [{"status": "succeeded", "page_number": n, "markdown": f"Page {n}", "elements": [
    {"id": f"p{n}-e1", "markdown": f"# Invoice {n}"}, {"id": f"p{n}-e2", "markdown": "Total: 1,204.50 EUR"},
    {"id": f"p{n}-e3", "markdown": "<table><tr><td>Paper</td><td>3</td></tr></table>"}]} for n in (1, 2)]

SCHEMAS: dict[str, dict[str, Any]] = {
    "flat": {"type": "object", "required": ["total", "paid"], "additionalProperties": False,
             "properties": {"total": {"type": "number", "minimum": 0, "maximum": 1e6}, "paid": {"type": "boolean"}}},
    "enum_and_bounded_string": {"type": "object", "required": ["currency", "ref"], "additionalProperties": False,
                                "properties": {"currency": {"enum": ["EUR", "USD"]},
                                               "ref": {"type": "string", "minLength": 1, "maxLength": 6}}},
    "nested_with_refs": {"type": "object", "required": ["items"], "additionalProperties": False,
                         "properties": {"items": {"type": "array", "minItems": 1, "maxItems": 2,
                                                  "items": {"$ref": "#/$defs/item"}}},
                         "$defs": {"item": {"type": "object", "required": ["qty"], "additionalProperties": False,
                                            "properties": {"qty": {"type": "integer", "minimum": 0,
                                                                   "maximum": 9}}}}},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_extraction_is_valid_against_the_schema_even_from_random_weights(vllm_server: VllmServer,
                                                                             name: str) -> None:
    settings = Settings(engine=vllm_server.engine, tasks={"max_tokens": 1024})
    model = TaskModel(settings)
    try:
        answer = extract(model, ENTRIES, SCHEMAS[name], settings)
    finally:
        model.close()
    jsonschema.validate(answer["data"], SCHEMAS[name])
    ids = {e["id"] for page in ENTRIES for e in page["elements"]}
    assert set(answer["element_ids"]) <= ids and answer["finish_reason"] == "stop"
    assert answer["prompt_tokens"] > 0 and answer["model"] == "tiny-vlm"
