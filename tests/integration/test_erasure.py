"""Deleting or expiring a document erases the customer's data from every table, through the HTTP API on
PostgreSQL: a distinctive value put in the upload's metadata, filename and Idempotency-Key is searched for in
every column of every table the database has (so a future table cannot escape), while the `document.cancelled`
webhook of the DELETE still goes out whole, and the structural facts (ids, types, statuses, attempts) stay."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from services.core import erasure
from services.core.db.models import (
    Base,
    DeliveryStatus,
    Document,
    DocumentEventRow,
    IdempotencyKey,
    Page,
    WebhookAttempt,
    WebhookDelivery,
    utcnow,
)
from services.core.db.session import get_engine, session_scope
from tests.conftest import PlatformFactory
from tests.harness import Platform, wait_until
from tests.pdfs import repeat_pages
from tests.receivers import Receiver

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"
FIVE_PAGES = Path("dev") / "docling_multi_page" / "multi_page.pdf"


# The DELETE must meet a running document. One worker slot and 0.3 s a page make these pages last at least
# 120 s, longer than every wait before the DELETE allows (60 s + 30 s), however loaded the machine: with 20
# pages a loaded machine saw the document end first and the DELETE answered `succeeded`.
RUNNING_PAGES = 400


@pytest.fixture
def platform(platform_factory: PlatformFactory, postgres_url: str) -> Platform:
    return platform_factory(postgres_url, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "300", "PAGEMILL_WEBHOOKS__RETRY_BACKOFF_S": "0.5",
        "PAGEMILL_WEBHOOKS__PROGRESS_INTERVAL_S": "0", "PAGEMILL_RETENTION__SWEEP_INTERVAL_S": "1",
    }).start(webhook_worker=True, reconciler=True, concurrency=1)


def rows_containing(database_url: str, needle: str) -> dict[str, int]:
    """`{"table.column": rows}` for every column of every table whose text holds `needle`. Every column is
    cast to text, whatever its type, so nothing depends on knowing which columns can hold customer data."""
    found: dict[str, int] = {}
    with get_engine(database_url).connect() as connection:
        inspector = sa.inspect(connection)
        tables = inspector.get_table_names()
        assert set(Base.metadata.tables) <= set(tables)
        for table in tables:
            for column in inspector.get_columns(table):
                count = connection.execute(sa.select(sa.func.count()).select_from(sa.table(table)).where(
                    sa.cast(sa.column(column["name"]), sa.Text).contains(needle, autoescape=True))).scalar_one()
                if count:
                    found[f"{table}.{column['name']}"] = count
    return found


def accepted(receiver: Receiver, event_type: str) -> list[dict[str, Any]]:
    with receiver.lock:
        return [r.json for r in receiver.received if r.json["type"] == event_type and r.answered < 300]


@pytest.mark.slow
def test_delete_and_expiry_erase_the_customer_data_from_every_table(platform: Platform, corpus: Path,
                                                                    tmp_path: Path) -> None:
    db = platform.database_url
    distinct = f"acme-{uuid.uuid4().hex}"
    with platform.client() as client:
        tenant_secret = client.get("/v1/tenant").json()["webhook_secret"]
    # Two endpoints hear the document: its own `webhook_url` and one of the tenant's. Both refuse the
    # `document.cancelled` webhook twice, and echo bodies back (the delivery log keeps an excerpt).
    own = Receiver(secret=tenant_secret, fail_event="document.cancelled", fail_times=2, echo=True)
    shared = Receiver(fail_event="document.cancelled", fail_times=2, echo=True)
    with platform.client() as client:
        endpoint = client.post("/v1/webhooks", json={"url": shared.url}).json()
    shared.secret = endpoint["secret"]

    source = tmp_path / f"{distinct}.pdf"
    source.write_bytes(repeat_pages(corpus / FIVE_PAGES, RUNNING_PAGES))
    metadata = {"customer_ref": distinct, "note": "confidential"}
    created = platform.upload(source, metadata=json.dumps(metadata), webhook_url=own.url,
                              headers={"Idempotency-Key": f"key-{distinct}"})
    with platform.client() as client:
        wait_until(lambda: client.get(f"/v1/documents/{created['id']}").json()["pages_done"] >= 2, 60, "two pages")
    wait_until(lambda: accepted(own, "document.progress"), 30, "a progress webhook")

    # The search works: before the delete the value is in the document, its events, its webhook bodies, the
    # receivers' echoes and the idempotency key.
    before = rows_containing(db, distinct)
    assert {"documents.metadata", "documents.filename", "document_events.payload", "webhook_deliveries.body",
            "webhook_attempts.response_excerpt", "idempotency_keys.key"} <= set(before), before

    with platform.client() as client:
        assert client.delete(f"/v1/documents/{created['id']}").json() == {
            "id": created["id"], "status": "cancelled", "deleted": True}
    # At once, in the DELETE's own transaction: the document, its events and its idempotency key.
    at_once = rows_containing(db, distinct)
    assert not {"documents.metadata", "documents.filename", "document_events.payload",
                "idempotency_keys.key"} & set(at_once), at_once

    # The cancelled webhooks are delivered whole (after two refusals each) — the metadata is how receivers
    # know which of their records the document was — and only then scrubbed.
    for receiver in (own, shared):
        cancelled = wait_until(lambda r=receiver: accepted(r, "document.cancelled"), 60, "the cancelled webhook")
        assert cancelled[0]["data"]["metadata"] == metadata and cancelled[0]["data"]["document_id"] == created["id"]
        assert all(r.verified for r in receiver.received)
    wait_until(lambda: not rows_containing(db, distinct), 60, "the scrub after the deliveries ended")

    # What the operator needs is still there: the delivery log with every attempt, the events, the row.
    with platform.client() as client:
        log = client.get(f"/v1/webhooks/{created['webhook_id']}/deliveries").json()["data"]
    cancelled_delivery = next(d for d in log if d["event_type"] == "document.cancelled")
    assert cancelled_delivery["status"] == "succeeded" and cancelled_delivery["document_id"] == created["id"]
    assert [a["status_code"] for a in cancelled_delivery["attempt_log"]] == [500, 500, 200]
    assert {d["event_type"] for d in log} >= {"document.queued", "document.progress", "document.cancelled"}
    with get_engine(db).connect() as connection:
        row = connection.execute(sa.text(
            "SELECT status, error_code, deleted_at, scrubbed_at, metadata, filename, pages_total FROM documents "
            "WHERE id = :id"), {"id": created["id"]}).one()
        types = connection.execute(sa.text("SELECT type FROM document_events WHERE document_id = :id ORDER BY seq"),
                                   {"id": created["id"]}).scalars().all()
        payload = connection.execute(sa.text(
            "SELECT payload FROM document_events WHERE document_id = :id AND type = 'document.cancelled'"),
            {"id": created["id"]}).scalar_one()
    assert (row.status, row.error_code, row.pages_total) == ("cancelled", "cancelled", RUNNING_PAGES)
    assert row.deleted_at and row.scrubbed_at and row.metadata == {} and row.filename == ""
    assert types[0] == "document.queued" and types[-1] == "document.cancelled"
    payload = payload if isinstance(payload, dict) else json.loads(payload)
    assert payload["data"]["metadata"] == {} and payload["data"]["error"] == {"code": "cancelled", "message": ""}
    assert payload["data"]["status"] == "cancelled" and payload["data"]["pages_total"] == RUNNING_PAGES

    # Expiry erases the same way: a tenant keeping results 2 seconds.
    brief = platform.create_tenant("brief", retention_days=2 / 86400)
    with platform.client(key=brief.key) as client:
        brief_secret = client.get("/v1/tenant").json()["webhook_secret"]
    late = Receiver(secret=brief_secret, echo=True)
    other = f"globex-{uuid.uuid4().hex}"
    short = tmp_path / f"{other}.pdf"
    short.write_bytes((corpus / ONE_PAGE).read_bytes())
    expiring = platform.upload(short, key=brief.key, metadata=json.dumps({"customer_ref": other}),
                               webhook_url=late.url)
    assert platform.wait_done(expiring["id"], key=brief.key)["status"] == "succeeded"
    wait_until(lambda: accepted(late, "document.succeeded"), 30, "the succeeded webhook")
    assert accepted(late, "document.succeeded")[0]["data"]["metadata"] == {"customer_ref": other}
    with platform.client(key=brief.key) as client:
        wait_until(lambda: client.get(f"/v1/documents/{expiring['id']}/result").status_code == 410, 60,
                   "the retention sweep")
        wait_until(lambda: not rows_containing(db, other), 60, "the scrub of the expired document")
        state = client.get(f"/v1/documents/{expiring['id']}").json()
    assert state["status"] == "succeeded" and state["expired_at"] and state["pages_done"] == 1
    assert state["metadata"] == {} and state["filename"] == ""
    for receiver in (own, shared, late):
        receiver.close()


@pytest.mark.parametrize("database", ["sqlite_url", "postgres_url"])
def test_scrub_reaches_page_errors_attempt_logs_and_waits_for_pending_deliveries(
        database: str, request: pytest.FixtureRequest) -> None:
    """The rows a real engine can leave (a failed page's message, an engine's refusal in the attempt log of a
    page that fell back), on SQLite and PostgreSQL built by the migrations."""
    url = request.getfixturevalue(database)
    secret = f"initech-{uuid.uuid4().hex}"
    now = utcnow()
    payload = {"type": "document.failed", "timestamp": "t", "data": {
        "document_id": "doc_1", "status": "failed", "metadata": {"ref": secret},
        "error": {"code": "corrupt_document", "message": f"cannot read {secret}.pdf"}}}
    body = json.dumps(payload)
    with session_scope(url) as session:
        session.add(Document(id="doc_1", tenant_id="ten_1", status="failed", filename=f"{secret}.pdf",
                             media_type="application/pdf", size_bytes=1, sha256="0" * 64, source_key="k",
                             page_numbers=[1, 2], pages_total=2, metadata_={"ref": secret}, options={},
                             error_code="corrupt_document", error_message=f"cannot read {secret}.pdf",
                             created_at=now, updated_at=now, finished_at=now))
        session.flush()
        session.add_all([
            Page(document_id="doc_1", index=0, page_number=1, status="failed", error_code="page_too_large",
                 error_message=f"page of {secret} too large", details={}),
            Page(document_id="doc_1", index=1, page_number=2, status="succeeded", is_fallback=True, details={
                "fallback_reason": "bad_request", "attempt_log": [
                    {"temperature": 0.1, "error": "bad_request", "message": f"vLLM said: {secret}"}]}),
            DocumentEventRow(id="msg_1", document_id="doc_1", tenant_id="ten_1", type="document.failed",
                             payload=payload, created_at=now),
            IdempotencyKey(tenant_id="ten_1", key=f"key-{secret}", request_hash="h", document_id="doc_1",
                           created_at=now, expires_at=now),
        ])
        for delivery_id, status in (("whd_done", DeliveryStatus.SUCCEEDED), ("whd_wait", DeliveryStatus.PENDING)):
            session.add(WebhookDelivery(id=delivery_id, endpoint_id="whe_1", tenant_id="ten_1", event_id="msg_1",
                                        event_type="document.failed", document_id="doc_1", body=body,
                                        status=status, attempts=1, created_at=now))
            session.flush()
            session.add(WebhookAttempt(delivery_id=delivery_id, number=1, started_at=now, duration_ms=3,
                                       status_code=200 if status == DeliveryStatus.SUCCEEDED else 500,
                                       response_excerpt=body))
    assert len(rows_containing(url, secret)) == 9

    with session_scope(url) as session:
        session.execute(sa.update(Document).where(Document.id == "doc_1").values(deleted_at=now))
        assert erasure.scrub_document(session, "doc_1", now) is False  # a delivery is still pending
    assert rows_containing(url, secret) == {"webhook_deliveries.body": 1}  # the pending one, sent whole
    with session_scope(url) as session:
        assert erasure.unfinished(session) == ["doc_1"]
        assert erasure.finish_pending(session, now) == 0  # still pending: nothing changes
        session.execute(sa.update(WebhookDelivery).where(WebhookDelivery.id == "whd_wait")
                        .values(status=DeliveryStatus.FAILED))
    with session_scope(url) as session:
        assert erasure.finish_pending(session, now) == 1
        assert erasure.unfinished(session) == []
    assert rows_containing(url, secret) == {}
    with session_scope(url) as session:
        pages = {p.index: p for p in session.execute(sa.select(Page)).scalars()}
        assert (pages[0].error_code, pages[0].error_message) == ("page_too_large", None)
        assert pages[1].details == {"fallback_reason": "bad_request",
                                    "attempt_log": [{"temperature": 0.1, "error": "bad_request"}]}
        document = session.get(Document, "doc_1")
        assert document is not None and document.scrubbed_at is not None
        assert (document.error_code, document.status, document.pages_total) == ("corrupt_document", "failed", 2)
        delivery = session.get(WebhookDelivery, "whd_wait")
        assert delivery is not None and json.loads(delivery.body)["data"] == {
            "document_id": "doc_1", "status": "failed", "metadata": {},
            "error": {"code": "corrupt_document", "message": ""}}
        assert [a.status_code for a in session.execute(sa.select(WebhookAttempt)
                                                       .order_by(WebhookAttempt.id)).scalars()] == [200, 500]


@pytest.mark.slow
def test_a_cached_copy_carries_its_own_filename_once_the_original_is_deleted(platform: Platform, corpus: Path,
                                                                            tmp_path: Path) -> None:
    """A copy made by the result cache shows its own upload's filename in every format, so deleting the original
    leaves its filename nowhere: not in the copy's results, not in any stored object, not in any row."""
    distinct = f"Acme-merger-with-Globex-CONFIDENTIAL-{uuid.uuid4().hex}"
    original_file = tmp_path / f"{distinct}.pdf"
    original_file.write_bytes((corpus / ONE_PAGE).read_bytes())
    original = platform.upload(original_file)
    assert platform.wait_done(original["id"])["status"] == "succeeded"
    assert distinct in platform.result(original["id"], "html")  # the search works: the original shows it
    copy_file = tmp_path / "board-minutes.pdf"
    copy_file.write_bytes(original_file.read_bytes())
    copy = platform.upload(copy_file)
    assert copy["cached"] is True and copy["status"] == "succeeded"

    with platform.client() as client:
        assert client.delete(f"/v1/documents/{original['id']}").status_code == 200
        formats = client.get(f"/v1/documents/{copy['id']}").json()["formats"]
    assert set(formats) >= {"markdown", "html", "latex", "json", "chunks"}
    bodies = {fmt: platform.result(copy["id"], fmt) for fmt in formats}
    assert "<title>board-minutes.pdf</title>" in bodies["html"]
    assert bodies["json"]["filename"] == "board-minutes.pdf"
    assert [fmt for fmt, body in bodies.items() if distinct in json.dumps(body)] == []
    stored = platform.workdir / "data"

    def objects_naming_it() -> list[str]:
        return [str(p.relative_to(stored)) for p in stored.rglob("*") if p.is_file()
                and distinct.encode() in p.read_bytes()]

    wait_until(lambda: not objects_naming_it(), 60, "no stored object naming the original")
    wait_until(lambda: not rows_containing(platform.database_url, distinct), 60, "the scrub of the original")
