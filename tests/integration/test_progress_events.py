"""A chunk's progress event on PostgreSQL (`events.record_progress_now`): two statements without a transaction
when no webhook endpoint may hear it, its deliveries written with it when one may; at most one per interval."""

from __future__ import annotations

import sqlalchemy as sa

from services.core import events
from services.core.db.models import (
    Document,
    DocumentEventRow,
    DocumentStatus,
    Tenant,
    WebhookDelivery,
    WebhookEndpoint,
    new_id,
    utcnow,
)
from services.core.db.session import session_scope
from services.core.outbox import open_outbox


def running_document(url: str, tenant_id: str | None) -> str:
    document_id = new_id("doc")
    with session_scope(url) as session:
        session.add(Document(id=document_id, tenant_id=tenant_id, status=DocumentStatus.RUNNING,
                             media_type="application/pdf", size_bytes=1, sha256="0" * 64, source_key="k",
                             pages_total=4, pages_done=1, page_numbers=[1, 2, 3, 4], split_at=utcnow()))
    return document_id


def written(url: str, document_id: str) -> tuple[list[dict[str, object]], int]:
    """The document's progress events' payloads, and its webhook deliveries."""
    with session_scope(url) as session:
        payloads = list(session.execute(sa.select(DocumentEventRow.payload).where(
            DocumentEventRow.document_id == document_id, DocumentEventRow.type == "document.progress")).scalars())
        deliveries = session.execute(sa.select(sa.func.count()).select_from(WebhookDelivery).where(
            WebhookDelivery.document_id == document_id)).scalar_one()
    return payloads, int(deliveries)


def test_a_progress_event_no_endpoint_hears_is_written_alone_and_one_heard_with_its_delivery(
        postgres_url: str) -> None:
    with session_scope(postgres_url) as session:
        session.add_all([Tenant(id="ten_quiet", name="quiet", webhook_secret="whsec_q", limits={}),
                         Tenant(id="ten_heard", name="heard", webhook_secret="whsec_h", limits={})])
        session.flush()
        session.add(WebhookEndpoint(id=new_id("whe"), tenant_id="ten_heard", url="https://example.com/hook",
                                    events=["document.progress"], secret="whsec_h"))
    quiet, heard, alone = (running_document(postgres_url, tenant) for tenant in ("ten_quiet", "ten_heard", None))
    with open_outbox(lambda jobs: None):  # the delivery's job and the notices are not sent anywhere here
        for document_id in (quiet, heard, alone):
            event = events.record_progress_now(postgres_url, document_id, interval_s=60)
            assert event is not None and event.document_id == document_id and event.pages_done == 1
            # the interval holds: a second ask within it writes nothing
            assert events.record_progress_now(postgres_url, document_id, interval_s=60) is None
    for document_id, deliveries in ((quiet, 0), (heard, 1), (alone, 0)):
        payloads, made = written(postgres_url, document_id)
        assert made == deliveries
        assert len(payloads) == 1 and payloads[0]["type"] == "document.progress"
        assert payloads[0]["data"]["document_id"] == document_id  # type: ignore[index]
        assert payloads[0]["data"]["pages_done"] == 1  # type: ignore[index]
