"""Office uploads are stored with their full media type on PostgreSQL as on SQLite. The docx type is 71
characters: with the 64 of migration 0001, PostgreSQL refused every .docx, .xlsx and .pptx upload with a 500 —
found when the compose stack first ran on PostgreSQL (make test-deploy); SQLite does not enforce lengths."""

from __future__ import annotations

from pathlib import Path

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


def test_word_html_epub_and_mail_need_no_libreoffice_where_they_are_read_natively(api_factory: ApiFactory,
                                                                                 tmp_path: Path) -> None:
    """`auto` accepts what the worker reads itself even on a host without `soffice`; `false` refuses all."""
    empty = tmp_path / "bin"
    empty.mkdir()
    page = b"<!DOCTYPE html><html><body><h1>Ducks</h1><p>Quack.</p></body></html>"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(empty))  # no soffice to be found
        native = api_factory(convert={"enabled": "auto"})
        assert native.upload(page, filename="ducks.html")["status"] == "queued"
        assert native.upload(plain_docx(), filename="report.docx")["status"] == "queued"
        converted = api_factory(convert={"enabled": "auto", "native": False})
        converted.upload(page, filename="ducks.html", expect=415)
    api_factory(convert={"enabled": "false"}).upload(page, filename="ducks.html", expect=415)


def test_a_document_read_natively_is_not_answered_by_a_converted_ones_cache(api_factory: ApiFactory) -> None:
    """The two routes make different results (one page without boxes, or rendered pages): different keys."""
    import sqlalchemy as sa

    from services.core.db.models import Document
    from services.core.db.session import session_scope

    api = api_factory(convert={"enabled": "true"})
    keys = []
    docx = plain_docx()  # made once: the file's zip entries carry the time they were written
    for native in (True, False, True):  # one app, its setting switched between uploads
        api.settings.convert.native = native
        document_id = api.upload(docx, filename="report.docx", cache="false")["id"]
        with session_scope(api.settings.resolved_database_url()) as session:
            keys.append(session.execute(sa.select(Document.cache_key).where(Document.id == document_id)).scalar())
    assert keys[0] == keys[2] != keys[1] and keys[0] is not None
