"""Document events: recorded in the transaction that changes the document, then fanned out.

    state change ──same transaction──▶ document_events row ──after commit──▶ notice (Redis pub/sub) ──▶ SSE
                                     │                                      stream (`/v1/documents/{id}/events`)
                                     └▶ webhook_deliveries rows ──after commit──▶ `webhooks` queue

Because the event and its deliveries are written with the state change, an event is never lost: if the
job is not sent (the process dies between commit and send, Redis is down), the reconciler finds the
pending delivery and sends it. Delivery jobs go through the outbox (`queues.enqueue`): sent after the commit.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import batches, notices
from services.core.contracts import DocumentEvent, WebhookTask, timestamp, to_dict
from services.core.db.models import (
    DOCUMENT_FINAL,
    DeliveryStatus,
    Document,
    DocumentEventRow,
    DocumentStatus,
    WebhookDelivery,
    WebhookEndpoint,
    new_id,
    utcnow,
)
from services.core.queues import Job, Queue, TaskName, enqueue


class EventType(StrEnum):
    QUEUED = "document.queued"
    PROGRESS = "document.progress"
    SUCCEEDED = "document.succeeded"
    PARTIAL = "document.partial"
    FAILED = "document.failed"
    CANCELLED = "document.cancelled"


FINAL_EVENTS = {DocumentStatus.SUCCEEDED: EventType.SUCCEEDED, DocumentStatus.PARTIAL: EventType.PARTIAL,
                DocumentStatus.FAILED: EventType.FAILED, DocumentStatus.CANCELLED: EventType.CANCELLED}
# The document events, and the one a batch sends when its last document ends (services/core/batches.py).
EVENT_TYPES = frozenset(e.value for e in EventType) | {batches.BATCH_COMPLETED}


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else None


def build_event(document: Document, event_type: EventType) -> DocumentEvent:
    return DocumentEvent(
        id=new_id("msg"), type=event_type.value, document_id=document.id, tenant_id=document.tenant_id or "",
        status=document.status, pages_total=document.pages_total, pages_done=document.pages_done,
        pages_failed=document.pages_failed, occurred_at=timestamp(), error_code=document.error_code or "",
        error_message=document.error_message or "", request_id=document.request_id or "",
        metadata_json=json.dumps(document.metadata_ or {}, ensure_ascii=False), parent_id=document.parent_id or "",
    )


def ready_formats(document: Document) -> list[str]:
    """The result formats a client can fetch now (`?format=`): none before the end, after a cancel, once erased.
    Assembly records them in the document's options; documents assembled before it had Markdown and JSON."""
    if (document.status not in DOCUMENT_FINAL or document.status == DocumentStatus.CANCELLED
            or document.expired_at is not None or document.deleted_at is not None):
        return []
    return [str(f) for f in (document.options or {}).get("formats") or ("markdown", "json")]


def public_payload(event: DocumentEvent, finished_at: datetime | None = None,
                   formats: list[str] | None = None) -> dict[str, Any]:
    """The JSON a customer receives (webhook body and SSE data): `{"type", "timestamp", "data"}`."""
    fields = to_dict(event)
    error = {"code": event.error_code, "message": event.error_message} if event.error_code else None
    return {
        "type": event.type,
        "timestamp": fields["occurred_at"],
        "data": {
            "event_id": event.id, "document_id": event.document_id, "status": event.status,
            "pages_total": event.pages_total, "pages_done": event.pages_done, "pages_failed": event.pages_failed,
            "error": error, "metadata": json.loads(event.metadata_json or "{}"), "request_id": event.request_id,
            "finished_at": _iso(finished_at), "formats": formats or [], "parent_id": event.parent_id or None,
        },
    }


def deliver_job(delivery_id: str, *, countdown: float | None = None) -> Job:
    return Job(TaskName.DELIVER_WEBHOOK, Queue.WEBHOOKS, to_dict(WebhookTask(delivery_id=delivery_id)),
               countdown=countdown)


def _load(session: Session, document_id: str) -> Document | None:
    return session.execute(
        sa.select(Document).where(Document.id == document_id).execution_options(populate_existing=True)
    ).scalar_one_or_none()


def record(session: Session, document: Document | str, event_type: EventType) -> DocumentEvent | None:
    """Writes the event and one delivery per subscribed endpoint, in the caller's transaction."""
    loaded = _load(session, document) if isinstance(document, str) else document
    if loaded is None:
        return None
    event = build_event(loaded, event_type)
    payload = public_payload(event, loaded.finished_at, ready_formats(loaded))
    row = {"id": event.id, "document_id": loaded.id, "tenant_id": loaded.tenant_id, "type": event.type,
           "payload": payload, "created_at": utcnow()}
    subscribed = _subscribed(loaded)
    if loaded.tenant_id and session.get_bind().dialect.name == "postgresql":
        # The event's row, and whether the tenant has an endpoint that may hear it, in one round trip: most
        # tenants have none, and then no second statement is made.
        session.flush()  # what the caller added first (the document itself) is written before its event
        may_hear = session.execute(sa.insert(DocumentEventRow).values(row).returning(
            sa.exists().where(subscribed))).scalar_one()
    else:
        session.add(DocumentEventRow(**row))
        may_hear = bool(loaded.tenant_id)
    if may_hear:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        endpoints = session.execute(sa.select(WebhookEndpoint).where(subscribed)).scalars()
        now = utcnow()
        for endpoint in endpoints:
            if endpoint.events and event.type not in endpoint.events:
                continue
            delivery = WebhookDelivery(
                id=new_id("whd"), endpoint_id=endpoint.id, tenant_id=loaded.tenant_id, event_id=event.id,
                event_type=event.type, document_id=loaded.id, body=body, status=DeliveryStatus.PENDING,
                attempts=0, next_attempt_at=now, created_at=now)
            session.add(delivery)
            enqueue(deliver_job(delivery.id))
    session.flush()
    notices.notify(loaded.id)  # the gateways' event streams read it after the commit
    return event


def _subscribed(document: Document) -> sa.ColumnElement[bool]:
    """The webhook endpoints that may hear the document's events (before their own event-type filter)."""
    return sa.and_(
        WebhookEndpoint.tenant_id == document.tenant_id, WebhookEndpoint.deleted_at.is_(None),
        sa.or_(WebhookEndpoint.document_id.is_(None), WebhookEndpoint.document_id == document.id))


def _record_unheard(session: Session, document: Document, event_type: EventType) -> DocumentEvent | None:
    """PostgreSQL: the event's row in one statement, written only if no webhook endpoint may hear it (then it
    needs no deliveries, and the statement is atomic alone); None, writing nothing, when one may."""
    event = build_event(document, event_type)
    payload = public_payload(event, document.finished_at, ready_formats(document))
    table = DocumentEventRow.__table__
    values = {"id": event.id, "document_id": document.id, "tenant_id": document.tenant_id, "type": event.type,
              "payload": payload, "created_at": utcnow()}
    written = session.execute(
        sa.insert(DocumentEventRow).from_select(
            list(values), sa.select(*[sa.bindparam(f"v_{name}", value, type_=table.c[name].type)
                                      for name, value in values.items()])
            .where(~sa.exists().where(_subscribed(document))))
        .returning(DocumentEventRow.id)).scalar_one_or_none()
    if written is None:
        return None
    notices.notify(document.id)  # the gateways' event streams read it after the statement
    return event


def record_progress_now(database_url: str, document_id: str, interval_s: float) -> DocumentEvent | None:
    """PostgreSQL, once the caller's `progress_worth_trying` let it ask: the progress slot claimed, then the
    event written, as two statements each atomic alone (no BEGIN and COMMIT round trips) when no webhook
    endpoint may hear it, as for most tenants; an event that has deliveries to write goes in a transaction with
    them (`record`). A crash between the two statements skips this progress event, as the throttle would:
    the next one, or the final event, follows."""
    # at call time: the lifecycle package imports this module (its events) as it loads
    from services.core.db.session import session_scope
    from services.core.lifecycle.marks import claim_progress_slot

    with session_scope(database_url, autocommit=True) as session:
        won = claim_progress_slot(session, document_id, interval_s)
        if won is None:
            return None
        if won.tenant_id is None:  # no endpoint hears a document of no tenant: its row's INSERT alone
            return record(session, won, EventType.PROGRESS)
        event = _record_unheard(session, won, EventType.PROGRESS)
    if event is not None:
        return event
    with session_scope(database_url) as session:
        return record(session, won, EventType.PROGRESS)


def record_final(session: Session, document: Document | str) -> DocumentEvent | None:
    """The final event of a document (or its id) that has just ended; the row as its ending UPDATE returned it."""
    loaded = _load(session, document) if isinstance(document, str) else document
    if loaded is None or loaded.status not in FINAL_EVENTS:
        return None
    event = record(session, loaded, FINAL_EVENTS[DocumentStatus(loaded.status)])
    if loaded.batch_id:
        batches.complete_if_done(session, loaded.batch_id)
    return event


_progress_tried: dict[str, float] = {}


def progress_worth_trying(document_id: str, interval_s: float) -> bool:
    """This process's own throttle, checked before any statement: most pages cost no query at all."""
    clock = time.monotonic()
    if interval_s > 0 and clock - _progress_tried.get(document_id, -interval_s) < interval_s:
        return False
    if len(_progress_tried) > 10_000:
        _progress_tried.clear()
    _progress_tried[document_id] = clock
    return True


def record_progress(session: Session, document_id: str, interval_s: float, *,
                    throttled: bool = True) -> DocumentEvent | None:
    """A `document.progress` event, at most one per `interval_s` per document, never for the last page
    (the final event follows). The conditional update makes exactly one of racing workers win; each
    process first checks its own memory, so most pages cost no extra statement at all (`throttled=False`:
    the caller asked `progress_worth_trying` itself, before opening the session)."""
    if throttled and not progress_worth_trying(document_id, interval_s):
        return None
    # at call time: the lifecycle package imports this module (its events) as it loads
    from services.core.lifecycle.marks import claim_progress_slot

    won = claim_progress_slot(session, document_id, interval_s)
    return record(session, won, EventType.PROGRESS) if won is not None else None


def due_deliveries(session: Session, now: datetime, *, grace_s: float = 10.0, limit: int = 1000,
                   per_tenant: int | None = None) -> list[str]:
    """Deliveries whose task is late or lost: pending past their time, or sending past their lease. With
    `per_tenant`, pending ones of a tenant that has that many attempts open are left out: they wait for a
    slot, and the tenant's next attempt to end sends the oldest of them."""
    pending_due = sa.and_(WebhookDelivery.status == DeliveryStatus.PENDING,
                          WebhookDelivery.next_attempt_at <= now - timedelta(seconds=grace_s))
    if per_tenant is not None:
        busy_tenants = (sa.select(WebhookDelivery.tenant_id)
                        .where(WebhookDelivery.status == DeliveryStatus.SENDING,
                               WebhookDelivery.lease_expires_at >= now)
                        .group_by(WebhookDelivery.tenant_id).having(sa.func.count() >= per_tenant))
        pending_due = sa.and_(pending_due, WebhookDelivery.tenant_id.not_in(busy_tenants))
    return list(session.execute(
        sa.select(WebhookDelivery.id).where(sa.or_(
            pending_due,
            sa.and_(WebhookDelivery.status == DeliveryStatus.SENDING, WebhookDelivery.lease_expires_at < now),
        )).order_by(WebhookDelivery.next_attempt_at).limit(limit)
    ).scalars())
