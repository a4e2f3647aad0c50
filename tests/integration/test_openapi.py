"""The OpenAPI document says what the live gateway does: every error answer in the one error shape, the limits
the server enforces, `Allow` on 405, 403 for a tenant's key on the admin API — and schemathesis, run against a
real gateway from that document (every built-in check, bounded examples), finds no 5xx and no answer the
document does not describe."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform

pytestmark = pytest.mark.slow

MAX_FILE_BYTES = 5_000_000


@pytest.fixture
def gateway(platform_factory: PlatformFactory, sqlite_url: str) -> Platform:
    return platform_factory(sqlite_url, engine="fake", extra_env={
        "PAGEMILL_LIMITS__MAX_FILE_BYTES": str(MAX_FILE_BYTES)}).start(worker=False)


def operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def error_schema(operation: dict[str, Any], status: int) -> Any:
    return operation["responses"][str(status)]["content"]["application/json"]["schema"]


def test_every_error_answer_and_limit_is_in_the_schema(gateway: Platform) -> None:
    with gateway.client() as client:
        schema = client.get("/openapi.json").json()
    assert schema["components"]["schemas"]["ErrorResponse"]["required"] == ["error"]
    for path, method, operation in operations(schema):
        if not path.startswith("/v1/"):
            continue
        expected = {400, 401, 422, 503} | ({403} if path.startswith("/v1/admin/") else set()) | \
            ({404} if "{" in path else set())
        for status in expected:
            assert error_schema(operation, status) == {"$ref": "#/components/schemas/ErrorResponse"}, \
                (method, path, status)
    upload = schema["paths"]["/v1/documents"]["post"]
    for status in (408, 413, 415, 429):
        assert error_schema(upload, status) == {"$ref": "#/components/schemas/ErrorResponse"}
    assert "Retry-After" in upload["responses"]["429"]["headers"]
    key = next(p for p in upload["parameters"] if p["name"] == "Idempotency-Key")
    assert key["schema"]["anyOf"][0]["maxLength"] == 255
    form = upload["requestBody"]["content"]["multipart/form-data"]
    assert form["schema"]["required"] == ["file"]
    assert form["schema"]["properties"]["file"]["x-max-bytes"] == MAX_FILE_BYTES
    assert set(form["encoding"]["file"]["contentType"].split(", ")) == {
        "application/pdf", "image/png", "image/jpeg", "image/tiff", "image/webp"}
    assert form["schema"]["properties"]["metadata"]["maxLength"] == 16_384
    assert form["schema"]["properties"]["webhook_url"]["maxLength"] == 2048
    hook = schema["components"]["schemas"]["WebhookCreate"]["properties"]["url"]
    assert hook["maxLength"] == 2048 and hook["pattern"].startswith("^") and "[sS]?://" in hook["pattern"]
    usage = {p["name"]: p for p in schema["paths"]["/v1/usage"]["get"]["parameters"]}
    assert all(usage[name]["schema"]["anyOf"][0]["pattern"].startswith(r"^(\d{4}-") for name in ("from", "to"))


def test_live_answers_match_the_schema(gateway: Platform) -> None:
    with gateway.client() as client, gateway.client(auth=False) as anonymous:
        # 405 says which methods the path has (every route of it, not only the first)
        response = client.put("/v1/documents")
        assert response.status_code == 405 and response.json()["error"]["code"] == "method_not_allowed"
        assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "POST"}  # HEAD: as GET, no body
        response = client.post("/v1/webhooks/whe_x")
        assert response.status_code == 405
        assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "PATCH", "DELETE"}
        # a tenant's key on the admin API: 403 (it is a key, just not that one); no or a wrong key: 401
        response = client.get("/v1/admin/tenants")
        assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")
        assert anonymous.get("/v1/admin/tenants").status_code == 401
        assert anonymous.get("/v1/admin/tenants", headers={"Authorization": "Bearer pm_nope"}).status_code == 401
        # the limits in the schema are the server's
        response = client.get("/v1/usage", params={"from": "yesterday"})
        assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_error")
        response = client.post("/v1/documents", files={"file": ("a.pdf", b"%PDF-1.7\n")},
                               headers={"Idempotency-Key": "k" * 256})
        assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_error")
        response = client.post("/v1/webhooks", json={"url": "ftp://example.com/hook"})
        assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_error")
        # a query parameter given twice is refused (which value was meant?), not silently read as the last one
        response = client.get("/v1/documents", params=[("limit", "1"), ("limit", "2")])
        assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_error")
