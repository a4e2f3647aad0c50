"""An e-mail's attachments parsed as child documents: through the platform, and its conversion job run twice.

The e-mails are built here (`email.message.EmailMessage`) with a corpus PDF, a DOCX made by `tests/office_files.py`
and a plain-text file; the platform converts them with a real LibreOffice and parses them with the cpu engine.
"""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from services.worker.office.libreoffice import available
from tests import office_files
from tests.harness import CORPUS, Platform
from tests.textmatch import words

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="LibreOffice is not installed (make office-tools)"),
              pytest.mark.skipif(not (CORPUS / "dev").is_dir(), reason=f"no shared corpus at {CORPUS}")]

FIVE_PAGES = CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf"
ONE_PAGE = CORPUS / "dev" / "docling_2305.03393v1-pg9" / "2305.03393v1-pg9.pdf"
DOCX_TEXT = "Attached minutes of the harbour committee"
PDF_TYPE = ("application", "pdf")
DOCX_TYPE = ("application", "vnd.openxmlformats-officedocument.wordprocessingml.document")


def mail(*attachments: tuple[str, tuple[str, str], bytes]) -> bytes:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ana@example.com", "ops@example.com", "Quarterly papers"
    message.set_content("Please find the papers for the meeting attached.")
    for filename, (main, sub), data in attachments:
        message.add_attachment(data, maintype=main, subtype=sub, filename=filename)
    return message.as_bytes()


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Platform:
    from services.core.db.session import migrate

    workdir = tmp_path_factory.mktemp("attachments")
    url = f"sqlite:///{workdir / 'pagemill.db'}"
    migrate(url)
    platform = Platform(workdir=workdir, database_url=url, redis_base_url=redis_server, engine="cpu")
    platform.start(concurrency=2)
    yield platform
    platform.stop()


def _get(platform: Platform, document_id: str, key: str | None = None) -> Any:
    with platform.client(key=key) as client:
        return client.get(f"/v1/documents/{document_id}")


def test_pdf_and_docx_attachments_become_child_documents_and_go_with_the_email(platform: Platform,
                                                                            tmp_path: Path) -> None:
    source = office_files.write(tmp_path, "papers.eml", mail(
        ("report.pdf", PDF_TYPE, FIVE_PAGES.read_bytes()),
        ("minutes.docx", DOCX_TYPE, office_files.plain_docx(DOCX_TEXT)),
        ("notes.txt", ("text", "plain"), b"just some notes")))
    created = platform.upload(source)
    parent = platform.wait_done(created["id"], timeout=300)
    assert parent["status"] == "succeeded", parent  # on its own body: it does not wait for the children
    assert parent["parent_id"] is None
    listed = parent["attachments"]
    assert [(a["index"], a["filename"], a["media_type"]) for a in listed] == [
        (0, "report.pdf", "application/pdf"), (1, "minutes.docx", "/".join(DOCX_TYPE)),
        (2, "notes.txt", "text/plain")]
    assert listed[2]["id"] is None and listed[2]["status"] == "rejected"
    assert listed[2]["error"]["code"] == "unsupported_media_type"
    report, minutes = listed[0]["id"], listed[1]["id"]
    assert report and minutes
    for child in (report, minutes):
        state = platform.wait_done(child, timeout=300)
        assert state["status"] == "succeeded", state
        assert state["parent_id"] == created["id"]
    assert platform.wait_done(report)["pages_total"] == 5
    truth = set(words((FIVE_PAGES.with_suffix(".md")).read_text()))
    found = set(words(platform.result(report)))
    assert len(truth & found) / len(truth) > 0.9
    assert DOCX_TEXT.lower() in platform.result(minutes).lower()
    # The e-mail's own result says which documents its attachments became; its Markdown is the body alone.
    document = platform.result(created["id"], "json")
    assert [a["id"] for a in document["attachments"]] == [report, minutes, None]
    assert "Please find the papers" in platform.result(created["id"])
    assert "harbour committee" not in platform.result(created["id"])
    now = _get(platform, created["id"]).json()
    assert [a["status"] for a in now["attachments"]] == ["succeeded", "succeeded", "rejected"]

    def stored(document_id: str) -> list[Path]:
        return [p for p in (platform.workdir / "data").rglob("*") if document_id in str(p) and p.is_file()]

    assert stored(report) and stored(minutes)
    with platform.client() as client:
        assert client.delete(f"/v1/documents/{created['id']}").status_code == 200
    for document_id in (created["id"], report, minutes):
        assert _get(platform, document_id).status_code == 404
        assert not stored(document_id)


def test_attachments_beyond_the_page_limit_are_refused_with_the_reason(platform: Platform, tmp_path: Path) -> None:
    """The limit counts the e-mail and its children together: 4 pages = the body, a 1-page PDF and a 1-page DOCX;
    a 5-page PDF does not fit and is listed as refused."""
    tenant = platform.create_tenant("small", max_pages=4)
    source = office_files.write(tmp_path, "limits.eml", mail(
        ("big.pdf", PDF_TYPE, FIVE_PAGES.read_bytes()),
        ("small.pdf", PDF_TYPE, ONE_PAGE.read_bytes()),
        ("minutes.docx", DOCX_TYPE, office_files.plain_docx(DOCX_TEXT))))
    created = platform.upload(source, key=tenant.key)
    parent = platform.wait_done(created["id"], timeout=300, key=tenant.key)
    assert parent["status"] == "succeeded", parent
    big, small, minutes = parent["attachments"]
    assert big["status"] == "rejected" and big["error"]["code"] == "too_many_pages", big
    assert "limit of 4 pages" in big["error"]["message"]
    for child in (small, minutes):
        state = platform.wait_done(child["id"], timeout=300, key=tenant.key)
        assert state["status"] == "succeeded" and state["pages_total"] == 1, state
    # Another tenant sees none of them.
    assert _get(platform, small["id"]).status_code == 404


def test_a_docx_attachment_over_what_its_family_left_fails_too_many_pages(platform: Platform,
                                                                          tmp_path: Path) -> None:
    """An office attachment's pages are known once it is converted: then it may use what is left, no more."""
    tenant = platform.create_tenant("tight", max_pages=2)
    source = office_files.write(tmp_path, "tight.eml", mail(
        ("small.pdf", PDF_TYPE, ONE_PAGE.read_bytes()),
        ("minutes.docx", DOCX_TYPE, office_files.plain_docx(DOCX_TEXT))))
    created = platform.upload(source, key=tenant.key)
    parent = platform.wait_done(created["id"], timeout=300, key=tenant.key)
    small, minutes = parent["attachments"]
    assert platform.wait_done(small["id"], key=tenant.key)["status"] == "succeeded"
    state = platform.wait_done(minutes["id"], timeout=300, key=tenant.key)
    assert state["status"] == "failed" and state["error"]["code"] == "too_many_pages", state
    assert "e-mail" in state["error"]["message"]


def test_a_conversion_job_run_again_makes_no_second_child(redis_server: str, sqlite_url: str,
                                                          tmp_path: Path) -> None:
    """A redelivered conversion job (the claim written, or not yet) finds the children it made."""
    from services.core.db.models import Document
    from services.core.db.session import session_scope
    from services.core.queues import make_celery, outbox
    from services.core.settings import Settings
    from services.core.storage import get_store
    from services.gateway.documents.service import create_document
    from services.worker.office.attachments import insert_children
    from services.worker.office.stage import prepare_office_document
    from tests.pdfs import stored_upload

    settings = Settings(redis_url=redis_server, database_url=sqlite_url, data_dir=tmp_path)
    store = get_store(settings)
    app = make_celery(settings)
    data = mail(("small.pdf", PDF_TYPE, ONE_PAGE.read_bytes()),
                ("minutes.docx", DOCX_TYPE, office_files.plain_docx(DOCX_TEXT)))
    with outbox(app), session_scope(sqlite_url) as session:
        parent_id = create_document(session, store, settings, stored_upload(data, tmp_path, "a.eml"),
                                    tenant_id=None, request_id=None).id
    with outbox(app):
        assert prepare_office_document(parent_id, settings, store) is not None
        assert prepare_office_document(parent_id, settings, store) is not None  # converted.pdf read back
    with outbox(app), session_scope(sqlite_url) as session:
        parent = session.get(Document, parent_id)
        assert parent is not None
        insert_children(session, parent, parent.options["attachments"], settings)  # the plan once more: nothing new
    with session_scope(sqlite_url) as session:
        children = session.execute(sa.select(Document.id, Document.media_type).where(
            Document.parent_id == parent_id).order_by(Document.id)).all()
    assert [media for _, media in children] == ["application/pdf", "/".join(DOCX_TYPE)]


def test_the_emails_webhook_url_hears_its_children_and_their_events_name_the_email(platform: Platform,
                                                                                  tmp_path: Path) -> None:
    from tests.receivers import Receiver
    from tests.servers import wait_for

    with platform.client() as client:
        secret = client.get("/v1/tenant").json()["webhook_secret"]
    receiver = Receiver(secret=secret)
    source = office_files.write(tmp_path, "hooked.eml", mail(("small.pdf", PDF_TYPE, ONE_PAGE.read_bytes())))
    created = platform.upload(source, webhook_url=receiver.url)
    (child,) = platform.wait_done(created["id"], timeout=300)["attachments"]
    assert platform.wait_done(child["id"], timeout=300)["status"] == "succeeded"
    wait_for(lambda: len(receiver.of_type("document.succeeded")) == 2, 30, "both final events")
    finals = {r.json["data"]["document_id"]: r.json["data"] for r in receiver.of_type("document.succeeded")}
    assert finals[created["id"]]["parent_id"] is None
    assert finals[child["id"]]["parent_id"] == created["id"]
    assert all(r.verified for r in receiver.received)
    receiver.close()


def test_each_refused_attachment_is_listed_with_its_reason(tmp_path: Path) -> None:
    """The plan of an e-mail's attachments, on a folder store: what is accepted is stored under its child's id."""
    from services.core.storage import LocalStore
    from services.core.tenants import TenantLimits
    from services.worker.office.attachments import MAX_CHILDREN, Parent, plan_children
    from services.worker.office.mail import Attachment, read_mail

    forwarded = EmailMessage()
    forwarded["From"], forwarded["Subject"] = "bo@example.com", "Fwd: figures"
    forwarded.set_content("the figures, forwarded")
    outer = EmailMessage()
    outer["From"], outer["Subject"] = "ana@example.com", "Several things"
    outer.set_content("see attached")
    outer.add_attachment(forwarded, filename="figures.eml")
    outer.add_attachment(b"%PDF-1.4 not really", maintype="application", subtype="pdf", filename="broken.pdf")
    outer.add_attachment(ONE_PAGE.read_bytes(), maintype="application", subtype="pdf", filename="fits.pdf")
    outer.add_attachment(ONE_PAGE.read_bytes(), maintype="application", subtype="pdf", filename="too-big.pdf")
    attachments = read_mail(outer.as_bytes()).attachments
    store = LocalStore(tmp_path / "store")
    limits = TenantLimits(requests_per_minute=60, pages_in_flight=100, max_file_bytes=ONE_PAGE.stat().st_size + 1000,
                          max_pages=10, retention_days=1)
    plan = plan_children(Parent("doc_mail", 1, is_child=False), attachments, limits, store)
    assert [(p["filename"], p["status"], (p["error"] or {}).get("code")) for p in plan] == [
        ("figures.eml", "queued", None), ("broken.pdf", "rejected", "corrupt_document"),
        ("fits.pdf", "queued", None), ("too-big.pdf", "rejected", "file_too_large")]
    assert plan[0]["media_type"] == "message/rfc822" and plan[2]["pages"] == 1
    assert store.exists("documents/doc_mail_3/source.pdf") and not store.exists("documents/doc_mail_4/source.pdf")
    # An attached e-mail's own attachments are listed, not parsed; past the 50th, none is.
    nested = plan_children(Parent("doc_fwd", 1, is_child=True), attachments[2:3], limits, store)
    assert nested[0]["error"]["code"] == "nested_attachment" and nested[0]["id"] is None
    many = [Attachment(f"{n}.txt", "text/plain", b"x") for n in range(MAX_CHILDREN + 1)]
    assert plan_children(Parent("doc_many", 1, False), many, limits, store)[-1]["error"]["code"] == \
        "too_many_attachments"
