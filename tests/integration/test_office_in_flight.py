"""Office documents and e-mail attachments count in their tenant's pages in flight once they are converted (their
pages are unknown at upload): pages that do not fit wait, converted but unclaimed, and are claimed when the
tenant's earlier pages have ended; more pages than the limit fail `too_many_pages`. Real LibreOffice conversions
of DOCX files and an e-mail, on PostgreSQL and Redis, with the real split and page tasks (fake engine)."""

from __future__ import annotations

import base64
import json
from email.message import EmailMessage
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from services.core.contracts import DocumentTask, from_dict, to_dict
from services.core.db.models import Document, Page
from services.core.db.session import session_scope
from services.core.queues import Queue, TaskName, make_celery, outbox
from services.core.settings import Settings
from services.core.storage import get_store
from services.core.tenants import create_tenant, pages_in_flight
from services.gateway.documents.service import create_document
from services.worker.office.libreoffice import available
from services.worker.split import split_document
from services.worker.tasks import register_worker_tasks
from tests import office_files
from tests.integration.test_chunks import page_messages
from tests.integration.test_outbox import messages
from tests.pdfs import stored_upload, text_pages

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="LibreOffice is not installed (make office-tools)")]

LIMIT = 5
_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def paged_docx(pages: int, name: str) -> bytes:
    """A DOCX of `pages` pages: one short paragraph each, a page break between them."""
    breaks = '<w:r><w:br w:type="page"/></w:r>'
    body = "".join(f"<w:p><w:r><w:t>{name} page {n}</w:t></w:r>{breaks if n < pages else ''}</w:p>"
                   for n in range(1, pages + 1))
    return office_files.docx(f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {_W}>'
                             f"<w:body>{body}</w:body></w:document>".encode())


def held_splits(client: redis.Redis) -> dict[str, str | None]:
    """The split messages waiting, by document: their `eta` (a split sent again later carries one)."""
    found = {}
    for message in messages(client, Queue.DOCUMENTS):
        body = json.loads(base64.b64decode(message["body"]))
        found[from_dict(DocumentTask, body[0][0]).document_id] = message["headers"].get("eta")
    client.delete(*[name for name in client.keys("documents*")])
    return found


def test_converted_pages_wait_for_room_in_the_tenants_pages_in_flight(
        broker: tuple[str, redis.Redis], postgres_url: str, tmp_path: Path) -> None:
    url, client = broker
    # DOCX converted by LibreOffice (not read natively, as one page): the pages of a paged document are under test
    settings = Settings(redis_url=url, database_url=postgres_url, data_dir=tmp_path, engine={"kind": "fake"},
                        convert={"native": False})
    app = make_celery(settings)
    register_worker_tasks(app, settings)
    store = get_store(settings)
    with session_scope(postgres_url) as session:
        tenant_id = create_tenant(session, "acme", limits={"pages_in_flight": LIMIT}).id

    def upload(data: bytes, filename: str) -> str:
        with outbox(app), session_scope(postgres_url) as session:
            document_id = create_document(session, store, settings, stored_upload(data, tmp_path, filename),
                                          tenant_id=tenant_id, request_id=None).id
        assert held_splits(client) == {document_id: None}  # its conversion job, sent with the upload
        return document_id

    def split(document_id: str) -> int:
        with outbox(app):
            return split_document(document_id, settings, store)

    def in_flight() -> int:
        with session_scope(postgres_url) as session:
            return pages_in_flight(session, tenant_id)

    def row(document_id: str) -> Document:
        with session_scope(postgres_url) as session:
            document = session.get(Document, document_id)
            assert document is not None
            return document

    first, second = upload(paged_docx(3, "First"), "first.docx"), upload(paged_docx(3, "Second"), "second.docx")
    assert in_flight() == 0  # accepted without pages: unknown until converted
    assert split(first) == 3 and in_flight() == 3
    # 3 + 3 > 5: the second waits, converted but unclaimed, its split sent again later
    assert split(second) == 0
    assert in_flight() == 3, "the second document's pages were claimed over the limit"
    waiting = row(second)
    assert (waiting.status, waiting.pages_total) == ("queued", 0)
    assert held_splits(client).get(second) is not None  # sent again, with an ETA
    assert split(second) == 0 and in_flight() == 3  # looked again too early: still waiting (its conversion read back)
    assert held_splits(client).get(second) is not None

    # The first document's pages run (the real page task, fake engine): room for the second.
    for task, _ in page_messages(client):
        with outbox(app):
            app.tasks[TaskName.PARSE_PAGE.value].apply(args=[to_dict(task)])
    assert in_flight() == 0
    assert split(second) == 3 and in_flight() == 3
    with session_scope(postgres_url) as session:
        assert session.execute(sa.select(sa.func.count()).select_from(Page)
                               .where(Page.document_id == second)).scalar_one() == 3

    # An e-mail whose body and PDF attachment (1 + 2 pages) do not fit beside the 3 in flight waits whole: no
    # child is made until they fit.
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ana@example.com", "ops@example.com", "Papers"
    message.set_content("Please find the papers attached.")
    message.add_attachment(text_pages(2), maintype="application", subtype="pdf", filename="papers.pdf")
    mail = upload(message.as_bytes(), "papers.eml")
    assert split(mail) == 0 and in_flight() == 3
    assert (row(mail).status, row(mail).pages_total) == ("queued", 0)
    with session_scope(postgres_url) as session:
        assert session.execute(sa.select(Document.id).where(Document.parent_id == mail)).all() == []
    held_splits(client)

    # More pages than the limit itself can never fit: the document fails at once, as such an upload would.
    too_big = upload(paged_docx(LIMIT + 1, "Big"), "big.docx")
    assert split(too_big) == 0
    failed = row(too_big)
    assert (failed.status, failed.error_code) == ("failed", "too_many_pages")
    assert "at most 5 pages in flight" in (failed.error_message or "")
    assert in_flight() == 3
