"""The OpenAPI document, completed with what the routes do not say themselves: every error answer a route can
give (in the one error shape), the `Retry-After` header, and the limits the server enforces.

    401  every /v1 route (tenant key, or the admin key on /v1/admin)
    403  /v1/admin (a tenant's key, or the admin API switched off)
    404  routes with a path parameter
    400, 422, 503  every /v1 route (a malformed request, a field out of bounds or a query parameter given twice,
                   Redis unreachable)
    429  where a tenant's limits are counted (uploads)
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from services.core.settings import Settings
from services.gateway.documents.upload_schema import set_file_limit

ERROR_REF = {"$ref": "#/components/schemas/ErrorResponse"}
DESCRIPTIONS = {400: "Bad request", 401: "No, unknown or revoked key", 403: "Forbidden", 404: "Not found",
                408: "The request body stalled", 409: "Conflict", 410: "Gone", 413: "Too large",
                415: "Unsupported media type", 422: "Validation error", 429: "Rate limited (see Retry-After)",
                503: "A dependency (Redis) is unreachable (see Retry-After)"}
RETRY_AFTER = {"Retry-After": {"description": "seconds to wait before trying again",
                               "schema": {"type": "string", "pattern": "^[0-9]+$"}}}
# `from`/`to` of /v1/usage: an ISO 8601 date or date-time (services/gateway/usage/router.py `parse_moment`).
# Empty means the default (the 1st of the month, now).
MOMENT = {"type": "string",
          "pattern": r"^(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?)?$",
          "examples": ["2026-11-01", "2026-11-01T00:00:00Z"]}


# The drop-in routes' own ways of sending the key (services/gateway/compat).
SECURITY_SCHEMES = {"UnstructuredApiKey": {"type": "apiKey", "in": "header", "name": "unstructured-api-key",
                                           "description": "a tenant's API key, as unstructured-client sends it"}}


def error_statuses(path: str, method: str) -> list[int]:
    if not path.startswith("/v1/"):
        return []
    statuses = [400, 401, 422, 503]
    if path.startswith("/v1/admin/"):
        statuses.append(403)
    if "{" in path:
        statuses.append(404)
    if (path, method) == ("/v1/documents", "post"):
        statuses += [408, 409, 413, 415, 429]
    return statuses


def complete(schema: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """Adds the error answers, headers and limits to a built schema (in place) and returns it."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for status in error_statuses(path, method):
                answer = responses.setdefault(str(status), {"description": DESCRIPTIONS[status]})
                # FastAPI declares its own 422 body; pagemill answers every error in the one shape.
                answer["content"] = {"application/json": {"schema": ERROR_REF}}
                if status in (429, 503):
                    answer["headers"] = RETRY_AFTER
            for parameter in operation.get("parameters", []):
                if path == "/v1/usage" and parameter["name"] in ("from", "to"):
                    parameter["schema"] = {"anyOf": [MOMENT, {"type": "null"}]}
    upload = schema.get("paths", {}).get("/v1/documents", {}).get("post")
    if upload is not None and "202" in upload["responses"]:  # an Idempotency-Key replay: the original document
        upload["responses"]["200"] = {**upload["responses"]["202"], "description": "Idempotency-Key replay",
                                      "headers": {"Idempotent-Replayed": {"schema": {"type": "string",
                                                                                     "enum": ["true"]}}}}
    if path_readyz := schema.get("paths", {}).get("/readyz", {}).get("get"):
        path_readyz["responses"]["503"] = {"description": "a dependency is down",
                                           "content": {"application/json": {"schema": {"type": "object"}}}}
    schema.setdefault("components", {}).setdefault("securitySchemes", {}).update(SECURITY_SCHEMES)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        if f'"#/components/schemas/{unused}"' not in json.dumps(schema.get("paths", {})):
            components.pop(unused, None)
    set_file_limit(schema, settings.limits.max_file_bytes)
    return schema


def install(app: FastAPI, settings: Settings) -> None:
    """`app.openapi()` builds the completed document once."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(get_openapi(title=app.title, version=app.version, summary=app.summary,
                                                      routes=app.routes), settings)
        return app.openapi_schema

    app.openapi = build  # type: ignore[method-assign]
