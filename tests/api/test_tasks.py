"""The `task` form field of an upload, as the gateway alone decides it: refused at submit when no vLLM engine
runs or a parameter is wrong, stored on the document when it is accepted (the answers themselves are made by
the results service against a real vLLM server: tests/vllm/test_tasks.py)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from services.core.db.models import Document
from services.core.db.session import session_scope
from tests.api.conftest import Api, ApiFactory, error_of
from tests.pdfs import text_pages

INVOICE = {"type": "object", "required": ["total"], "additionalProperties": False,
           "properties": {"total": {"type": "number"}, "currency": {"enum": ["EUR", "USD"]},
                          "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}}},
           "$defs": {"line": {"type": "object", "properties": {"label": {"type": "string"}}}}}


@pytest.fixture
def vllm_api(api_factory: ApiFactory) -> Api:
    # Nothing listens on this port: the gateway decides at submit without asking the server anything.
    return api_factory(engine={"kind": "vllm", "vllm_url": "http://127.0.0.1:9"})


def submit(api: Api, **fields: str) -> tuple[int, str, dict[str, object]]:
    with api.client() as client:
        response = client.post("/v1/documents", files={"file": ("a.pdf", text_pages(2))}, data=fields)
    body = response.json()
    code = error_of(response)[1] if response.status_code >= 400 else ""
    return response.status_code, code, body


@pytest.mark.parametrize("database_url", ["sqlite_url"], indirect=True)
@pytest.mark.parametrize("fields", [{"task": "summarize"}, {"task": "translate", "target_language": "German"},
                                    {"task": "extract", "schema": json.dumps(INVOICE)}])
def test_a_model_task_without_a_vllm_engine_is_refused_at_submit(api: Api, fields: dict[str, str]) -> None:
    status, code, body = submit(api, **fields)  # the app of `api` runs the fake engine
    assert (status, code) == (422, "task_needs_model"), body
    with api.client() as client:
        assert client.get("/v1/documents").json()["data"] == []  # nothing was made


@pytest.mark.parametrize("database_url", ["sqlite_url"], indirect=True)
def test_parse_is_the_default_task_everywhere(api: Api) -> None:
    created = api.upload(text_pages(1))
    with api.client() as client:
        assert client.get(f"/v1/documents/{created['id']}").json()["task"] == "parse"
    assert api.upload(text_pages(1), task="parse")["status"] == "queued"


@pytest.mark.parametrize("database_url", ["sqlite_url"], indirect=True)
@pytest.mark.parametrize(("fields", "code"), [
    ({"task": "classify"}, "validation_error"),
    ({"task": "translate"}, "validation_error"),  # no target_language
    ({"task": "translate", "target_language": "x" * 65}, "validation_error"),
    ({"task": "summarize", "schema": "{}"}, "validation_error"),
    ({"task": "parse", "target_language": "German"}, "validation_error"),
    ({"task": "extract"}, "invalid_json_schema"),
    ({"task": "extract", "schema": "{not json"}, "invalid_json_schema"),
    ({"task": "extract", "schema": "[1, 2]"}, "invalid_json_schema"),
    ({"task": "extract", "schema": json.dumps({"type": "objekt"})}, "invalid_json_schema"),
    ({"task": "extract", "schema": json.dumps({"type": "object", "properties": {"a": {"minLength": -1}}})},
     "invalid_json_schema"),
    ({"task": "extract", "schema": json.dumps({"$ref": "https://example.com/schema.json"})}, "invalid_json_schema"),
])
def test_wrong_task_parameters_are_refused_with_their_code(vllm_api: Api, fields: dict[str, str],
                                                           code: str) -> None:
    status, got, body = submit(vllm_api, **fields)
    assert (status, got) == (422, code), body


@pytest.mark.parametrize("database_url", ["sqlite_url"], indirect=True)
def test_an_accepted_task_is_stored_on_the_document(vllm_api: Api) -> None:
    extract = submit(vllm_api, task="extract", schema=json.dumps(INVOICE), mode="accurate")[2]
    translate = submit(vllm_api, task="translate", target_language=" Deutsch ")[2]
    with session_scope(vllm_api.settings.resolved_database_url()) as session:
        rows = {d.id: (d.task, d.task_params) for d in session.execute(sa.select(Document)).scalars()}
    assert rows[str(extract["id"])] == ("extract", {"schema": INVOICE})
    assert rows[str(translate["id"])] == ("translate", {"target_language": "Deutsch"})
    with vllm_api.client() as client:
        assert client.get(f"/v1/documents/{extract['id']}").json()["task"] == "extract"


@pytest.mark.parametrize("database_url", ["sqlite_url"], indirect=True)
def test_the_task_is_part_of_what_an_idempotency_key_means(vllm_api: Api) -> None:
    headers, pdf = {"Idempotency-Key": "task-key-1"}, text_pages(1)
    first = vllm_api.upload(pdf, headers=headers, task="summarize")
    assert vllm_api.upload(pdf, headers=headers, expect=200, task="summarize")["id"] == first["id"]
    vllm_api.upload(pdf, headers=headers, expect=409, task="translate", target_language="French")


def test_the_openapi_schema_declares_the_task_fields(api: Api) -> None:
    with api.client() as client:
        schema = client.get("/openapi.json").json()
    form = schema["paths"]["/v1/documents"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["properties"]["task"]["enum"] == ["parse", "translate", "extract", "summarize"]
    assert {"target_language", "schema"} <= set(form["properties"])
    formats = next(p for p in schema["paths"]["/v1/documents/{document_id}/result"]["get"]["parameters"]
                   if p["name"] == "format")
    enum = formats["schema"].get("enum") or schema["components"]["schemas"][
        formats["schema"]["$ref"].split("/")[-1]]["enum"]
    assert {"extraction", "translation", "summary"} <= set(enum)
