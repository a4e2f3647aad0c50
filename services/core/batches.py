"""Batches: many documents under one id, and one `batch.completed` event when the last of them ends.

A batch's documents are ordinary documents (each uploaded, queued, prioritised by fair share and billed as if sent
alone); the batch only groups them. Completion is set once, by a conditional UPDATE, by whichever of these sees
every document final first: the ending of a document (`events.record_final`), the request that made the batch
(its documents may all have been answered from the result cache), or a read of the batch.

`batch.completed` goes to the tenant's endpoints subscribed to it (every event, or that one), and to the endpoints
the batch's documents were uploaded with (`webhook_url`), once per URL.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.contracts import WebhookTask, to_dict
from services.core.db.models import (
    DOCUMENT_FINAL,
    Batch,
    DeliveryStatus,
    Document,
    WebhookDelivery,
    WebhookEndpoint,
    new_id,
    utcnow,
)
from services.core.db.session import rowcount
from services.core.queues import Job, Queue, TaskName, enqueue

BATCH_COMPLETED = "batch.completed"
MAX_DOCUMENTS = 50  # files and URLs in one `POST /v1/batches`
_FINAL = [status.value for status in DOCUMENT_FINAL]


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else None


def document_statuses(session: Session, batch_id: str) -> list[tuple[str, str]]:
    """(id, status) of the batch's documents, in upload order."""
    rows = session.execute(sa.select(Document.id, Document.status).where(Document.batch_id == batch_id)
                           .order_by(Document.created_at, Document.id))
    return [(row.id, row.status) for row in rows]


def counts(statuses: list[tuple[str, str]]) -> dict[str, int]:
    counted = Counter(status for _, status in statuses)
    return {status: counted.get(status, 0) for status in ("queued", "running", "succeeded", "partial", "failed",
                                                          "cancelled")}


def payload(batch: Batch, statuses: list[tuple[str, str]]) -> dict[str, Any]:
    return {"type": BATCH_COMPLETED, "timestamp": _iso(utcnow()), "data": {
        "batch_id": batch.id, "documents_total": batch.documents_total, "counts": counts(statuses),
        "document_ids": [document_id for document_id, _ in statuses], "metadata": batch.metadata_ or {},
        "completed_at": _iso(batch.completed_at)}}


def complete_if_done(session: Session, batch_id: str) -> bool:
    """Marks the batch completed if every document has ended and nobody has yet, and then writes its
    `batch.completed` deliveries, in the caller's transaction. True when this call completed it."""
    statuses = document_statuses(session, batch_id)
    batch = session.get(Batch, batch_id)
    if batch is None or batch.completed_at is not None or len(statuses) < batch.documents_total:
        return False
    if any(status not in _FINAL for _, status in statuses):
        return False
    now = utcnow()
    done = session.execute(sa.update(Batch).where(Batch.id == batch_id, Batch.completed_at.is_(None))
                           .values(completed_at=now).execution_options(synchronize_session=False))
    if rowcount(done) != 1:
        return False
    session.refresh(batch)
    _deliver(session, batch, statuses)
    return True


def _deliver(session: Session, batch: Batch, statuses: list[tuple[str, str]]) -> None:
    body = json.dumps(payload(batch, statuses), ensure_ascii=False, separators=(",", ":"))
    ids = [document_id for document_id, _ in statuses]
    endpoints = session.execute(sa.select(WebhookEndpoint).where(
        WebhookEndpoint.tenant_id == batch.tenant_id, WebhookEndpoint.deleted_at.is_(None),
        sa.or_(WebhookEndpoint.document_id.is_(None), WebhookEndpoint.document_id.in_(ids)),
    ).order_by(WebhookEndpoint.created_at)).scalars()
    event_id, now, sent_to = new_id("msg"), utcnow(), set()
    for endpoint in endpoints:
        if (endpoint.events and BATCH_COMPLETED not in endpoint.events) or endpoint.url in sent_to:
            continue
        sent_to.add(endpoint.url)
        delivery = WebhookDelivery(
            id=new_id("whd"), endpoint_id=endpoint.id, tenant_id=batch.tenant_id, event_id=event_id,
            event_type=BATCH_COMPLETED, document_id=None, body=body, status=DeliveryStatus.PENDING, attempts=0,
            next_attempt_at=now, created_at=now)
        session.add(delivery)
        # As events.deliver_job (which calls this module when a document ends, so it is not imported here).
        enqueue(Job(TaskName.DELIVER_WEBHOOK, Queue.WEBHOOKS, to_dict(WebhookTask(delivery_id=delivery.id))))
    session.flush()
