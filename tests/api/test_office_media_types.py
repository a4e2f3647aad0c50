"""Office uploads are stored with their full media type on PostgreSQL as on SQLite. The docx type is 71
characters: with the 64 of migration 0001, PostgreSQL refused every .docx, .xlsx and .pptx upload with a 500 —
found when the compose stack first ran on PostgreSQL (make test-deploy); SQLite does not enforce lengths."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api, ApiFactory
from tests.office_files import plain_docx

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@pytest.fixture
def office_api(api_factory: ApiFactory) -> Api:
    return api_factory(convert={"enabled": "true"})  # as on the gateway image: LibreOffice is on the workers


def test_an_office_upload_is_stored_with_its_long_media_type(office_api: Api) -> None:
    body = office_api.upload(plain_docx(), filename="report.docx")
    with office_api.client() as client:
        stored = client.get(f"/v1/documents/{body['id']}").json()
    assert stored["media_type"] == DOCX and len(DOCX) > 64
    assert stored["status"] == "queued"
