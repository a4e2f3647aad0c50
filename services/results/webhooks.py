"""Delivering webhooks: one attempt per task, exponential backoff between attempts, a final failed state.

    pending ──claim──▶ sending ──2xx──▶ succeeded
       ▲                  │ error / timeout / non-2xx
       └── backoff ◀──────┤ (attempts left)
                          └──────────────▶ failed (after `webhooks.max_attempts`)

The claim is a conditional update, so a duplicated task (a redelivered message, the reconciler's
re-send) never sends a message twice at once. Every attempt is logged with its status code or error.
Delivery runs on the `webhooks` queue: a slow receiver holds a webhook worker, never a page or a document.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import httpx
import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import events
from services.core.db.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint, utcnow
from services.core.db.session import rowcount, session_scope
from services.core.errors import ValidationFailed
from services.core.logging import get_logger
from services.core.metrics import WEBHOOK_DELIVERIES, WEBHOOK_LATENCY
from services.core.queues import enqueue
from services.core.retry import webhook_policy
from services.core.settings import Settings
from services.core.webhooks import check_url, headers

log = get_logger(__name__)

USER_AGENT = "pagemill-webhooks/1"
# Retries this close are scheduled as delayed tasks; later ones are sent by the reconciler when due (a
# delayed task sits in a worker's memory, which is fine for seconds and wasteful for hours).
MAX_COUNTDOWN_S = 300.0
_client: httpx.Client | None = None


def http_client() -> httpx.Client:
    global _client
    if _client is None:
        _client = httpx.Client(follow_redirects=False, headers={"user-agent": USER_AGENT})
    return _client


def backoff_s(settings: Settings, attempts: int) -> float:
    """Wait after the `attempts`-th failed attempt: base, 2x base, 4x base… up to the max, with jitter."""
    return webhook_policy(settings).countdown(attempts - 1)


def _claim(session: Session, delivery_id: str, now: datetime, lease_s: float) -> bool:
    return bool(rowcount(session.execute(
        sa.update(WebhookDelivery).where(
            WebhookDelivery.id == delivery_id,
            sa.or_(sa.and_(WebhookDelivery.status == DeliveryStatus.PENDING,
                           sa.or_(WebhookDelivery.next_attempt_at.is_(None),
                                  WebhookDelivery.next_attempt_at <= now + timedelta(seconds=1))),
                   sa.and_(WebhookDelivery.status == DeliveryStatus.SENDING,
                           WebhookDelivery.lease_expires_at < now)),
        ).values(status=DeliveryStatus.SENDING, lease_expires_at=now + timedelta(seconds=lease_s))
    )))


def deliver(settings: Settings, delivery_id: str) -> str:
    """One attempt. Returns the outcome: success, retry, failed, or skip (not due / taken / finished)."""
    db = settings.resolved_database_url()
    started_at = utcnow()
    with session_scope(db) as session:
        if not _claim(session, delivery_id, started_at, settings.webhooks.timeout_s + 60):
            return "skip"
        delivery = session.get(WebhookDelivery, delivery_id)
        endpoint = session.get(WebhookEndpoint, delivery.endpoint_id) if delivery else None
    if delivery is None:
        return "skip"
    status_code: int | None = None
    error: str | None = None
    excerpt: str | None = None
    permanent = False
    clock = time.perf_counter()
    if endpoint is None or endpoint.deleted_at is not None:
        error, permanent = "the webhook endpoint was deleted", True
    else:
        try:
            url = check_url(endpoint.url, allow_private=settings.webhooks.allow_private_urls)
            response = http_client().post(url, content=delivery.body.encode(),
                                          headers=headers(endpoint.secret, delivery.event_id, delivery.body),
                                          timeout=settings.webhooks.timeout_s)
            status_code, excerpt = response.status_code, response.text[:500]
            if not 200 <= status_code < 300:
                error = f"the receiver answered {status_code}"
        except ValidationFailed as exc:  # the name now resolves to a private address
            error, permanent = str(exc), True
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500] or type(exc).__name__
    duration = time.perf_counter() - clock
    if not permanent:
        WEBHOOK_LATENCY.observe(duration)
    outcome, delay = _record(db, settings, delivery, started_at, duration, status_code, error, excerpt, permanent)
    WEBHOOK_DELIVERIES.labels(outcome=outcome).inc()
    log.info("webhook.attempt", delivery_id=delivery.id, event_type=delivery.event_type, outcome=outcome,
             status_code=status_code, error=error, ms=int(duration * 1000))
    if outcome == "retry" and delay <= MAX_COUNTDOWN_S:
        enqueue(events.deliver_job(delivery.id, countdown=delay))  # sent when this task ends (its outbox)
    return outcome


def _record(db: str, settings: Settings, delivery: WebhookDelivery, started_at: datetime, duration: float,
            status_code: int | None, error: str | None, excerpt: str | None, permanent: bool) -> tuple[str, float]:
    with session_scope(db) as session:
        number = session.execute(sa.select(sa.func.count()).select_from(WebhookAttempt)
                                 .where(WebhookAttempt.delivery_id == delivery.id)).scalar_one() + 1
        session.add(WebhookAttempt(delivery_id=delivery.id, number=number, started_at=started_at,
                                   duration_ms=int(duration * 1000), status_code=status_code, error=error,
                                   response_excerpt=excerpt))
        attempts = delivery.attempts + 1
        now = utcnow()
        values: dict[str, object] = {"attempts": attempts, "lease_expires_at": None,
                                     "last_status_code": status_code, "last_error": error}
        delay = 0.0
        if error is None:
            outcome = "success"
            values.update(status=DeliveryStatus.SUCCEEDED, finished_at=now, next_attempt_at=None)
        elif permanent or attempts >= settings.webhooks.max_attempts:
            outcome = "failed"
            values.update(status=DeliveryStatus.FAILED, finished_at=now, next_attempt_at=None)
        else:
            outcome, delay = "retry", backoff_s(settings, attempts)
            values.update(status=DeliveryStatus.PENDING, next_attempt_at=now + timedelta(seconds=delay))
        session.execute(sa.update(WebhookDelivery).where(WebhookDelivery.id == delivery.id,
                                                         WebhookDelivery.status == DeliveryStatus.SENDING)
                        .values(**values))
    return outcome, delay
