"""Webhook endpoints of a tenant and their delivery log; another tenant's endpoint is "not found"."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import events
from services.core.db.models import (
    DeliveryStatus,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    new_id,
    utcnow,
)
from services.core.errors import NotFound, ValidationFailed
from services.core.queues import enqueue
from services.core.settings import Settings
from services.core.webhooks import check_url, generate_secret


def clean_events(names: list[str]) -> list[str]:
    unknown = sorted(set(names) - events.EVENT_TYPES)
    if unknown:
        raise ValidationFailed(f"events: unknown {', '.join(unknown)}; known: {', '.join(sorted(events.EVENT_TYPES))}")
    return sorted(set(names))


def create_endpoint(session: Session, settings: Settings, tenant_id: str, *, url: str, event_names: list[str],
                    description: str) -> WebhookEndpoint:
    count = session.execute(sa.select(sa.func.count()).select_from(WebhookEndpoint).where(
        WebhookEndpoint.tenant_id == tenant_id, WebhookEndpoint.document_id.is_(None),
        WebhookEndpoint.deleted_at.is_(None))).scalar_one()
    if count >= settings.webhooks.max_endpoints_per_tenant:
        raise ValidationFailed(f"at most {settings.webhooks.max_endpoints_per_tenant} webhook endpoints")
    endpoint = WebhookEndpoint(
        id=new_id("whe"), tenant_id=tenant_id, url=check_url(url, allow_private=settings.webhooks.allow_private_urls),
        events=clean_events(event_names), secret=generate_secret(), description=description, created_at=utcnow())
    session.add(endpoint)
    session.flush()
    return endpoint


def rotate_secret(session: Session, endpoint: WebhookEndpoint, *, overlap_s: float) -> WebhookEndpoint:
    """A new secret; the one it replaces keeps signing for `overlap_s` seconds (as `tenants.rotate_webhook_secret`)."""
    endpoint.previous_secret = endpoint.secret if overlap_s > 0 else None
    endpoint.previous_secret_expires_at = utcnow() + timedelta(seconds=overlap_s) if overlap_s > 0 else None
    endpoint.secret = generate_secret()
    session.flush()
    return endpoint


def get_endpoint(session: Session, tenant_id: str, endpoint_id: str) -> WebhookEndpoint:
    endpoint = session.execute(sa.select(WebhookEndpoint).where(
        WebhookEndpoint.id == endpoint_id, WebhookEndpoint.tenant_id == tenant_id,
        WebhookEndpoint.deleted_at.is_(None))).scalar_one_or_none()
    if endpoint is None:
        raise NotFound(f"no webhook endpoint {endpoint_id!r}")
    return endpoint


def list_endpoints(session: Session, tenant_id: str) -> list[WebhookEndpoint]:
    return list(session.execute(sa.select(WebhookEndpoint).where(
        WebhookEndpoint.tenant_id == tenant_id, WebhookEndpoint.document_id.is_(None),
        WebhookEndpoint.deleted_at.is_(None)).order_by(WebhookEndpoint.created_at)).scalars())


def list_deliveries(session: Session, endpoint: WebhookEndpoint, *, limit: int, cursor: str | None
                    ) -> tuple[list[WebhookDelivery], dict[str, list[WebhookAttempt]], str | None]:
    """Newest first, with every attempt of each delivery."""
    query = sa.select(WebhookDelivery).where(WebhookDelivery.endpoint_id == endpoint.id)
    if cursor:
        query = query.where(WebhookDelivery.id < cursor)
    rows = list(session.execute(query.order_by(WebhookDelivery.id.desc()).limit(limit + 1)).scalars())
    next_cursor = rows[limit - 1].id if len(rows) > limit else None
    rows = rows[:limit]
    attempts: dict[str, list[WebhookAttempt]] = defaultdict(list)
    if rows:
        for attempt in session.execute(sa.select(WebhookAttempt).where(
                WebhookAttempt.delivery_id.in_([r.id for r in rows])).order_by(WebhookAttempt.number)).scalars():
            attempts[attempt.delivery_id].append(attempt)
    return rows, attempts, next_cursor


def redeliver(session: Session, endpoint: WebhookEndpoint, delivery_id: str) -> WebhookDelivery:
    """Sends a message again with a fresh round of attempts (same `webhook-id`, so receivers can dedupe)."""
    delivery = session.execute(sa.select(WebhookDelivery).where(
        WebhookDelivery.id == delivery_id, WebhookDelivery.endpoint_id == endpoint.id)).scalar_one_or_none()
    if delivery is None:
        raise NotFound(f"no delivery {delivery_id!r} for this endpoint")
    if delivery.status == DeliveryStatus.SENDING:
        raise ValidationFailed("an attempt is in progress; try again when it has ended")
    delivery.status, delivery.attempts, delivery.finished_at = DeliveryStatus.PENDING, 0, None
    delivery.next_attempt_at, delivery.lease_expires_at = utcnow(), None
    enqueue(events.deliver_job(delivery.id))
    session.flush()
    return delivery
