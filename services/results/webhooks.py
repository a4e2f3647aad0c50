"""Delivering webhooks: one attempt per task, exponential backoff between attempts, a final failed state.

    pending ──claim──▶ sending ──2xx──▶ succeeded
       ▲                  │ error / timeout / non-2xx
       └── backoff ◀──────┤ (attempts left)
                          └──────────────▶ failed (after `webhooks.max_attempts`)

The claim is a conditional update, so a duplicated task (a redelivered message, the reconciler's
re-send) never sends a message twice at once: an attempt ends at its deadline (`webhooks.timeout_s`, for the
whole attempt, see `receiver_http`), and its lease runs `LEASE_MARGIN_S` longer, so nobody takes a
delivery over while its attempt can still be open. Every attempt is logged with its status code or error.

Delivery runs on the `webhooks` queue: a slow receiver holds a webhook worker, never a page or a document.
And at most `webhooks.max_concurrent_per_tenant` attempts of one tenant are open at once, so one tenant's
slow receivers cannot take every webhook thread: a task that finds its tenant at the limit leaves the
delivery pending (not an attempt), and the tenant's next attempt to end sends the oldest one waiting
(the reconciler too, should that hand-over be lost).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import httpx
import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import events
from services.core.db.models import (
    DeliveryStatus,
    Tenant,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    utcnow,
)
from services.core.db.session import is_postgres, rowcount, session_scope
from services.core.errors import DETAIL_CHARS, ValidationFailed, describe
from services.core.logging import get_logger
from services.core.metrics import WEBHOOK_DELIVERIES, WEBHOOK_LATENCY
from services.core.queues import enqueue
from services.core.retry import webhook_policy
from services.core.settings import Settings
from services.core.webhooks import check_url, headers, signing_secrets
from services.results.receiver_http import post

log = get_logger(__name__)

# Retries this close are scheduled as delayed tasks; later ones are sent by the reconciler when due (a
# delayed task sits in a worker's memory, which is fine for seconds and wasteful for hours).
MAX_COUNTDOWN_S = 300.0
# How long a lease outlasts its attempt's deadline: the address check's name lookup before the attempt and
# the database writes after it.
LEASE_MARGIN_S = 60.0
EXCERPT_CHARS = 500


def backoff_s(settings: Settings, attempts: int) -> float:
    """Wait after the `attempts`-th failed attempt: base, 2x base, 4x base… up to the max, with jitter."""
    return webhook_policy(settings).countdown(attempts - 1)


def open_attempts(session: Session, tenant_id: str, now: datetime) -> int:
    """The tenant's attempts under way: deliveries `sending` on a live lease."""
    return int(session.execute(sa.select(sa.func.count()).select_from(WebhookDelivery).where(
        WebhookDelivery.tenant_id == tenant_id, WebhookDelivery.status == DeliveryStatus.SENDING,
        WebhookDelivery.lease_expires_at >= now)).scalar_one())


def signing_keys(session: Session, endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The secrets that sign an attempt to the endpoint: its own, or for a document's `webhook_url` the tenant's
    (read at each attempt, so a rotation reaches the webhooks of documents already submitted), each with the
    previous secret during a rotation's overlap window."""
    tenant = session.get(Tenant, endpoint.tenant_id) if endpoint.document_id is not None else None
    if tenant is not None:
        return signing_secrets(tenant.webhook_secret, tenant.previous_webhook_secret,
                               tenant.previous_webhook_secret_expires_at, now)
    return signing_secrets(endpoint.secret, endpoint.previous_secret, endpoint.previous_secret_expires_at, now)


def _claim(session: Session, delivery_id: str, now: datetime, lease_until: datetime, per_tenant: int,
           postgres: bool) -> str:
    """`claimed`, `busy` (its tenant has `per_tenant` attempts open) or `skip` (not due, taken or finished)."""
    tenant_id = session.execute(sa.select(WebhookDelivery.tenant_id)
                                .where(WebhookDelivery.id == delivery_id)).scalar_one_or_none()
    if tenant_id is None:
        return "skip"
    if postgres:  # count and claim as one step per tenant: two workers must not both take its last slot
        session.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext("webhooks:" + tenant_id))))
    # (SQLite: every transaction holds the write lock from its BEGIN IMMEDIATE, which serializes them already.)
    if open_attempts(session, tenant_id, now) >= per_tenant:
        return "busy"
    claimed = rowcount(session.execute(
        sa.update(WebhookDelivery).where(
            WebhookDelivery.id == delivery_id,
            sa.or_(sa.and_(WebhookDelivery.status == DeliveryStatus.PENDING,
                           sa.or_(WebhookDelivery.next_attempt_at.is_(None),
                                  WebhookDelivery.next_attempt_at <= now + timedelta(seconds=1))),
                   sa.and_(WebhookDelivery.status == DeliveryStatus.SENDING,
                           WebhookDelivery.lease_expires_at < now)),
        ).values(status=DeliveryStatus.SENDING, lease_expires_at=lease_until)
    ))
    return "claimed" if claimed else "skip"


def deliver(settings: Settings, delivery_id: str) -> str:
    """One attempt. Returns the outcome: success, retry, failed, busy (its tenant is at its limit of open
    attempts) or skip (not due / taken / finished)."""
    db = settings.resolved_database_url()
    deadline_s = settings.webhooks.timeout_s
    started_at = utcnow()
    lease_until = started_at + timedelta(seconds=deadline_s + LEASE_MARGIN_S)
    with session_scope(db) as session:
        claim = _claim(session, delivery_id, started_at, lease_until, settings.webhooks.max_concurrent_per_tenant,
                       is_postgres(db))
        if claim != "claimed":
            return claim
        delivery = session.get(WebhookDelivery, delivery_id)
        endpoint = session.get(WebhookEndpoint, delivery.endpoint_id) if delivery else None
        keys = signing_keys(session, endpoint, started_at) if endpoint is not None else []
    if delivery is None:
        return "skip"
    status_code: int | None = None
    error: str | None = None
    excerpt: str | None = None
    permanent = False
    clock = time.monotonic()  # the attempt itself, from the address check on: not the wait for the database
    if endpoint is None or endpoint.deleted_at is not None:
        error, permanent = "the webhook endpoint was deleted", True
    else:
        try:
            url = check_url(endpoint.url, allow_private=settings.webhooks.allow_private_urls)
            answer = post(url, delivery.body.encode(), headers(keys, delivery.event_id, delivery.body),
                          deadline_s=deadline_s)
            status_code, excerpt = answer.status_code, answer.excerpt[:EXCERPT_CHARS]
            if not 200 <= status_code < 300:
                error = f"the receiver answered {status_code}"
        except ValidationFailed as exc:  # the name now resolves to a private address
            error, permanent = str(exc), True
        except httpx.TimeoutException as exc:
            error = f"{type(exc).__name__}: no answer within the attempt's {deadline_s:g} s"
        except httpx.HTTPError as exc:
            error = describe(exc, DETAIL_CHARS) or type(exc).__name__
    duration = time.monotonic() - clock
    if not permanent:
        WEBHOOK_LATENCY.observe(duration)
    outcome, delay, waiting = _record(db, settings, delivery, lease_until, started_at, duration, status_code, error,
                                      excerpt, permanent)
    WEBHOOK_DELIVERIES.labels(outcome=outcome).inc()
    log.info("webhook.attempt", delivery_id=delivery.id, event_type=delivery.event_type, outcome=outcome,
             status_code=status_code, error=error, ms=int(duration * 1000))
    # Both are sent when this task ends (its outbox).
    if outcome == "retry" and delay <= MAX_COUNTDOWN_S:
        enqueue(events.deliver_job(delivery.id, countdown=delay))
    if waiting is not None:  # the slot this attempt held goes to the tenant's oldest delivery waiting for one
        enqueue(events.deliver_job(waiting))
    return outcome


def _record(database_url: str, settings: Settings, delivery: WebhookDelivery, lease_until: datetime,
            started_at: datetime, duration: float, status_code: int | None, error: str | None, excerpt: str | None,
            permanent: bool) -> tuple[str, float, str | None]:
    """Logs the attempt and moves the delivery on, if this attempt still holds its lease. Returns the outcome,
    the backoff before a retry, and the tenant's oldest delivery due and waiting for an attempt, if any."""
    with session_scope(database_url) as session:
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
        # Only the holder of the lease moves the delivery on (the lease is its token).
        session.execute(sa.update(WebhookDelivery).where(WebhookDelivery.id == delivery.id,
                                                         WebhookDelivery.status == DeliveryStatus.SENDING,
                                                         WebhookDelivery.lease_expires_at == lease_until)
                        .values(**values))
        waiting = session.execute(sa.select(WebhookDelivery.id).where(
            WebhookDelivery.tenant_id == delivery.tenant_id, WebhookDelivery.status == DeliveryStatus.PENDING,
            WebhookDelivery.next_attempt_at <= now).order_by(WebhookDelivery.next_attempt_at).limit(1)
        ).scalar_one_or_none()
    return outcome, delay, waiting
