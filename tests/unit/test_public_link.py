"""Links pagemill hands out follow `PAGEMILL_PUBLIC_URL` when it is set, else the address the request came to."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from services.core.settings import Settings
from services.gateway.deps import public_link


def _client(settings: Settings) -> TestClient:
    app = FastAPI()

    @app.get("/v1/documents/{document_id}", name="get_document")
    def get_document(document_id: str, request: Request) -> dict[str, str]:
        return {"link": public_link(request, settings, "get_document", document_id=document_id)}

    return TestClient(app, base_url="http://10.0.0.7:8000")


def test_links_use_the_request_address_when_no_public_url_is_set() -> None:
    body = _client(Settings(public_url=None)).get("/v1/documents/doc_1").json()
    assert body["link"] == "http://10.0.0.7:8000/v1/documents/doc_1"


def test_links_use_the_public_url_behind_a_proxy() -> None:
    body = _client(Settings(public_url="https://pagemill.example.com/")).get("/v1/documents/doc_1").json()
    assert body["link"] == "https://pagemill.example.com/v1/documents/doc_1"
