"""Erasing a customer's data from the database when a document is deleted or expires.

The object store loses the source and the results (`delete_prefix`); this takes what the rows copied from the
upload — its metadata, filename and error text — out of every table that holds a copy:

    documents            metadata → {}, filename → "", error_message → NULL, task_params → {} (schema, language),
                         an e-mail's attachment names → ""
    pages                error_message → NULL, the error messages in the attempt log
    document_events      payload.data.metadata → {}, payload.data.error.message → ""
    webhook_deliveries   body: the same as the event payload — only once the delivery is final
    webhook_attempts     response_excerpt → NULL (a receiver may echo the body back)
    idempotency_keys     deleted (the key is the client's own text)

What the operator needs stays: ids, types, statuses, counts, timestamps, error codes, attempt outcomes.

A delivery that is still pending keeps its body until it ends: the `document.cancelled` webhook of a DELETE
(or a retried `document.succeeded`) goes out whole, with the metadata the receiver correlates by. The document
is marked `scrubbed_at` once nothing is left; until then the reconciler scrubs it again every pass
(`finish_pending`, idempotent), which takes the deliveries that have ended since. A delivery redelivered
after that sends the scrubbed body.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import (
    DeliveryStatus,
    Document,
    DocumentEventRow,
    IdempotencyKey,
    Page,
    WebhookAttempt,
    WebhookDelivery,
)
from services.core.db.session import rowcount
from services.core.lifecycle import clear_customer_fields, mark_scrubbed
from services.core.lifecycle.marks import clear_page_text

_FINAL_DELIVERY = (DeliveryStatus.SUCCEEDED.value, DeliveryStatus.FAILED.value)


def scrub_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """An event payload (`{"type", "timestamp", "data"}`) without the customer's metadata and error text."""
    data = dict(payload.get("data") or {})
    if "metadata" in data:
        data["metadata"] = {}
    if isinstance(data.get("error"), dict):
        data["error"] = {**data["error"], "message": ""}
    return {**payload, "data": data}


def _scrub_body(body: str) -> str:
    try:
        payload = json.loads(body)
    except ValueError:
        return ""  # not ours to read: nothing of it is kept
    if not isinstance(payload, dict):
        return ""
    return json.dumps(scrub_payload(payload), ensure_ascii=False, separators=(",", ":"))


def _scrub_details(details: dict[str, Any]) -> dict[str, Any]:
    log = details.get("attempt_log")
    if not isinstance(log, list) or not any(isinstance(a, dict) and "message" in a for a in log):
        return details
    return {**details, "attempt_log": [{k: v for k, v in a.items() if k != "message"} if isinstance(a, dict) else a
                                       for a in log]}


def scrub_document(session: Session, document_id: str, now: datetime) -> bool:
    """Erases the document's copies of customer data, in the caller's transaction (which deletes or expires
    it). Returns True when nothing is left for later (no delivery of it is still pending)."""
    clear_customer_fields(session, document_id)
    document = session.get(Document, document_id)
    if document is not None and (attachments := (document.options or {}).get("attachments")):
        document.options = {**document.options, "attachments": [{**a, "filename": ""} for a in attachments]}
    # Error text sits on failed pages and in the attempt log of pages that fell back (an engine's refusal).
    for page in session.execute(sa.select(Page).where(
            Page.document_id == document_id,
            sa.or_(Page.error_message.is_not(None), Page.is_fallback.is_(True)))).scalars():
        details = _scrub_details(page.details or {})
        if page.error_message is not None or details is not page.details:
            clear_page_text(page, details)
    for event in session.execute(sa.select(DocumentEventRow).where(
            DocumentEventRow.document_id == document_id)).scalars():
        payload = scrub_payload(event.payload or {})
        if payload != event.payload:
            event.payload = payload
    session.execute(sa.delete(IdempotencyKey).where(IdempotencyKey.document_id == document_id))
    session.flush()
    return _scrub_final_deliveries(session, document_id, now)


def _scrub_final_deliveries(session: Session, document_id: str, now: datetime) -> bool:
    """Scrubs the document's ended deliveries; marks the document scrubbed when none is left pending."""
    rows = session.execute(sa.select(WebhookDelivery.id, WebhookDelivery.status, WebhookDelivery.body).where(
        WebhookDelivery.document_id == document_id)).all()
    pending = False
    for delivery_id, status, body in rows:
        if status not in _FINAL_DELIVERY:
            pending = True
            continue
        scrubbed = _scrub_body(body)
        # Conditional: a redelivery may have made it pending again since it was read; then it waits its turn.
        if scrubbed != body and not rowcount(session.execute(sa.update(WebhookDelivery).where(
                WebhookDelivery.id == delivery_id, WebhookDelivery.status.in_(_FINAL_DELIVERY))
                .values(body=scrubbed))):
            pending = True
    if rows:
        session.execute(sa.update(WebhookAttempt).where(
            WebhookAttempt.delivery_id.in_([delivery_id for delivery_id, _, _ in rows]),
            WebhookAttempt.response_excerpt.is_not(None)).values(response_excerpt=None))
    if not pending:
        mark_scrubbed(session, document_id, now)
    return not pending


def unfinished(session: Session, limit: int = 1000) -> list[str]:
    """Deleted or expired documents not (yet) fully scrubbed: a delivery of theirs was still pending, or they
    were erased before scrubbing existed. A partial index finds them."""
    return list(session.execute(sa.select(Document.id).where(
        Document.scrubbed_at.is_(None), sa.or_(Document.deleted_at.is_not(None), Document.expired_at.is_not(None)),
    ).order_by(Document.id).limit(limit)).scalars())


def finish_pending(session: Session, now: datetime) -> int:
    """The reconciler's part: scrubs what has become scrubbable since. Returns how many documents are now
    fully scrubbed."""
    return sum(scrub_document(session, document_id, now) for document_id in unfinished(session))
