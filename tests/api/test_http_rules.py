"""What every route answers the same way: HEAD as GET without a body, unknown or repeated query parameters and
form fields refused by name, page numbers out of range refused (never a 500), an expired document's page 410,
the HTML result's security headers, control characters refused in names."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from services.core.db.models import Document, utcnow
from services.core.db.session import session_scope
from services.core.storage import document_result_key, get_store
from services.reconciler.retention import sweep
from tests.api.conftest import Api, error_of
from tests.pdfs import text_pages


def finish(api: Api, database_url: str, document_id: str, *, formats: list[str]) -> None:
    """The document as assembly leaves it: succeeded, with `formats` ready (no worker runs in this tier)."""
    with session_scope(database_url) as session:
        session.execute(sa.update(Document).where(Document.id == document_id).values(
            status="succeeded", finished_at=utcnow() - timedelta(days=400), options={"formats": formats}))


def test_head_answers_every_get_route_with_its_headers_and_no_body(api: Api) -> None:
    created = api.upload(text_pages(2))
    with api.client() as client:
        for path in ("/v1/documents", f"/v1/documents/{created['id']}", f"/v1/documents/{created['id']}/pages/1",
                     "/v1/tenant", "/healthz", "/openapi.json"):
            get, head = client.get(path), client.head(path)
            assert get.status_code == head.status_code == 200, (path, head.status_code)
            assert head.content == b"", path
            assert head.headers["content-type"] == get.headers["content-type"], path
            assert head.headers["content-length"] == get.headers["content-length"], path
        # an open event stream: its headers, then the answer ends (it does not stream for an hour)
        head = client.head(f"/v1/documents/{created['id']}/events")
        assert head.status_code == 200 and head.headers["content-type"].startswith("text/event-stream")
        assert head.content == b""
        # what GET would refuse, HEAD refuses with the same status; a path without GET stays 405, and says HEAD
        assert client.head("/v1/documents/doc_missing").status_code == 404
        with api.client(auth=False) as anonymous:
            assert anonymous.head("/v1/documents").status_code == 401
        response = client.put("/v1/documents")
        assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "POST"}


def test_unknown_or_repeated_query_parameters_are_refused_by_name(api: Api) -> None:
    created = api.upload(text_pages(1))
    with api.client() as client:
        response = client.get("/v1/documents", params={"limt": "5"})
        assert error_of(response) == (422, "validation_error")
        message = response.json()["error"]["message"]
        assert message.startswith("limt: unknown query parameter") and "cursor, limit, status" in message
        response = client.get(f"/v1/documents/{created['id']}", params={"wiat": "30"})
        assert error_of(response) == (422, "validation_error") and "takes wait" in response.json()["error"]["message"]
        response = client.get("/v1/tenant", params={"verbose": "1"})
        assert error_of(response) == (422, "validation_error") and "takes none" in response.json()["error"]["message"]
        response = client.get("/v1/documents", params=[("limit", "1"), ("limit", "2")])
        assert error_of(response) == (422, "validation_error")
        assert response.json()["error"]["message"] == "limit: given more than once"
        # the declared ones still work, and routes outside the schema take what their clients send
        assert client.get("/v1/documents", params={"limit": "1"}).status_code == 200
        assert client.get(f"/v1/documents/{created['id']}", params={"wait": "0"}).status_code == 200
        assert client.get("/metrics", params=[("name[]", "a"), ("name[]", "b")]).status_code == 200


@pytest.mark.parametrize("fields", [{"furnishing": "bogus"}, {"webhookurl": "https://example.com/hook"},
                                    {"pages": "1", "Pages": "2"}])
def test_an_upload_with_an_unknown_form_field_is_refused_and_names_the_fields(api: Api, fields: dict[str, str]
                                                                              ) -> None:
    with api.client() as client:
        response = client.post("/v1/documents", files={"file": ("a.pdf", text_pages(1))}, data=fields)
        assert error_of(response) == (422, "validation_error")
        message = response.json()["error"]["message"]
        assert "unknown form field" in message and "webhook_url" in message and "do_not_cache" in message
        assert client.get("/v1/documents").json()["data"] == []  # nothing was accepted


def test_a_known_form_field_with_a_bad_value_names_its_values(api: Api) -> None:
    with api.client() as client:
        response = client.post("/v1/documents", files={"file": ("a.pdf", text_pages(1))},
                               data={"furniture": "bogus"})
        assert error_of(response) == (422, "validation_error")
        assert response.json()["error"]["message"] == "furniture: must be one of drop, keep"


def test_a_form_field_given_twice_is_refused(api: Api) -> None:
    with api.client() as client:
        response = client.post("/v1/documents", files=[("file", ("a.pdf", text_pages(2), "application/pdf")),
                                                       ("pages", (None, "1")), ("pages", (None, "2"))])
        assert error_of(response) == (422, "validation_error")
        assert response.json()["error"]["message"] == "pages: given more than once"


def test_page_numbers_out_of_range_are_refused_not_a_500(api: Api) -> None:
    created = api.upload(text_pages(2))
    with api.client() as client:
        for page in ("99999999999999999999", str(2**31), "0", "-1"):
            for suffix in ("", "/image"):
                path = f"/v1/documents/{created['id']}/pages/{page}{suffix}"
                assert error_of(client.get(path)) == (422, "validation_error"), path
        assert error_of(client.get(f"/v1/documents/{created['id']}/pages/{2**31 - 1}")) == (404, "not_found")
        assert client.get(f"/v1/documents/{created['id']}/pages/2").status_code == 200


def test_an_expired_documents_pages_answer_410(api: Api, database_url: str) -> None:
    created = api.upload(text_pages(2))
    finish(api, database_url, created["id"], formats=["markdown", "json"])
    assert sweep(api.settings, get_store(api.settings)) == 1  # the retention sweep expires it
    with api.client() as client:
        assert error_of(client.get(f"/v1/documents/{created['id']}/result")) == (410, "result_expired")
        for params in ({}, {"format": "markdown"}):
            response = client.get(f"/v1/documents/{created['id']}/pages/1", params=params)
            assert error_of(response) == (410, "result_expired"), params
        assert error_of(client.get(f"/v1/documents/{created['id']}/pages/1/image")) == (410, "result_expired")
        assert error_of(client.get(f"/v1/documents/{created['id']}/pages/3")) == (404, "not_found")


def test_the_html_result_says_its_content_security_policy_in_headers(api: Api, database_url: str) -> None:
    created = api.upload(text_pages(1))
    html = b'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><p>hi</p></body></html>'
    store = get_store(api.settings)
    store.put(document_result_key(created["id"], "html"), html, content_type="text/html")
    store.put(document_result_key(created["id"], "markdown"), b"hi\n", content_type="text/markdown")
    finish(api, database_url, created["id"], formats=["markdown", "html"])
    with api.client() as client:
        response = client.get(f"/v1/documents/{created['id']}/result", params={"format": "html"})
        assert response.status_code == 200 and response.content == html
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy and "frame-ancestors 'none'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"
        response = client.get(f"/v1/documents/{created['id']}/result")
        assert response.status_code == 200 and response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("name", ["nul\x00byte", "bell\x07", "line\nbreak", "esc\x1b[2J"])
def test_a_tenant_or_key_name_with_a_control_character_is_refused(api: Api, name: str) -> None:
    with api.admin() as admin:
        response = admin.post("/v1/admin/tenants", json={"name": name})
        assert error_of(response) == (422, "validation_error"), response.text
        assert "control characters" in response.json()["error"]["message"]
        response = admin.post(f"/v1/admin/tenants/{api.tenant.id}/keys", json={"name": name})
        assert error_of(response) == (422, "validation_error"), response.text
        assert name not in [tenant["name"] for tenant in admin.get("/v1/admin/tenants").json()]
        # printable text, accents and all, is a name
        assert admin.post("/v1/admin/tenants", json={"name": "Zoë & Co — 東京"}).status_code == 201


@pytest.mark.parametrize("overlap", [False, True, "60"])
def test_a_number_field_refuses_a_boolean_or_a_string(api: Api, overlap: object) -> None:
    """JSON `false` is not 0 seconds (pydantic's lax mode made it one; the schema fuzzer found it)."""
    with api.client() as client:
        before = client.get("/v1/tenant").json()["webhook_secret"]
        response = client.post("/v1/tenant/rotate-webhook-secret", json={"overlap_s": overlap})
        assert error_of(response) == (422, "validation_error")
        assert client.get("/v1/tenant").json()["webhook_secret"] == before  # nothing rotated
        assert client.post("/v1/tenant/rotate-webhook-secret", json={"overlap_s": 60}).status_code == 200
