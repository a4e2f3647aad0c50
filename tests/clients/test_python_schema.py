"""The Python SDK's models against the gateway's OpenAPI schema: a field added, removed or retyped on either side
fails here, so the SDK cannot drift from the API."""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import datetime
from typing import Any, Union

import pagemill_client
import pytest
from pagemill_client._base import build_upload
from pagemill_client._models import Model

from services.core.elements import Element as ServerElement
from services.core.settings import Settings
from services.gateway.app import create_app

MODELS = [m for m in vars(pagemill_client).values()
          if isinstance(m, type) and issubclass(m, Model) and m.__schema__]
SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app(Settings(redis_url="redis://127.0.0.1:1/0", database_url="sqlite://")).openapi()


def python_type(schema: dict[str, Any]) -> Any:
    """The Python annotation a JSON schema stands for, in the SDK's vocabulary."""
    if "anyOf" in schema:
        options = [python_type(s) for s in schema["anyOf"] if s.get("type") != "null"]
        nullable = any(s.get("type") == "null" for s in schema["anyOf"])
        (single,) = options
        return single | None if nullable else single
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        name = {"PageErrorRead": "ErrorBody"}.get(name, name)  # the same {code, message} shape
        return next(m for m in (*MODELS, pagemill_client.Element) if (m.__schema__ or m.__name__) == name)
    if schema.get("type") == "array":
        return list[python_type(schema["items"])]  # type: ignore[misc]
    if schema.get("type") == "object":
        return dict[str, Any]
    if schema.get("format") == "date-time":
        return datetime
    return SCALARS[schema["type"]]


def same_type(a: Any, b: Any) -> bool:
    if typing.get_origin(a) in (Union, types.UnionType) and typing.get_origin(b) in (Union, types.UnionType):
        return set(typing.get_args(a)) == set(typing.get_args(b))
    return bool(a == b)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_sdk_model_has_the_fields_and_types_of_its_schema(model: type[Model], openapi: dict[str, Any]) -> None:
    schema = openapi["components"]["schemas"][model.__schema__]
    hints = typing.get_type_hints(model)
    fields = {f.metadata.get("json_name", f.name): f for f in dataclasses.fields(model)  # type: ignore[arg-type]
              if not f.metadata.get("sdk_only")}
    assert set(fields) == set(schema["properties"]), f"{model.__name__} drifted from {model.__schema__}"
    for name, prop in schema["properties"].items():
        f = fields[name]
        assert same_type(hints[f.name], python_type(prop)), (model.__name__, name, hints[f.name], prop)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        assert has_default == (name not in schema.get("required", [])), (model.__name__, name)


def test_the_upload_sends_exactly_the_form_fields_the_api_declares(openapi: dict[str, Any]) -> None:
    upload = build_upload(b"%PDF-", filename="a.pdf", pages="1", mode="fast", metadata={"a": 1},
                          webhook_url="https://example.com/h", cache=False, do_not_cache=True, idempotency_key=None,
                          task="extract", target_language="German", schema={"type": "object"}, figures=False,
                          furniture="keep", merge_tables=False)
    body = openapi["paths"]["/v1/documents"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert {"file", *upload.fields} == set(body["properties"])


def test_the_sdk_knows_every_result_format_the_server_serves(openapi: dict[str, Any]) -> None:
    (param,) = [p for p in openapi["paths"]["/v1/documents/{document_id}/result"]["get"]["parameters"]
                if p["name"] == "format"]
    schema = param["schema"]
    if "$ref" in schema:
        schema = openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    served = schema["enum"]
    assert "markdown" in served and set(served) <= set(pagemill_client.FORMATS)


def test_the_sdk_element_is_the_element_tree_contract() -> None:
    names = [f.name for f in dataclasses.fields(pagemill_client.Element)]
    assert names == list(ServerElement.model_fields)
