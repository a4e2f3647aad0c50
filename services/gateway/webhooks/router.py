"""`/v1/webhooks`: a tenant's endpoints (each with its own signing secret), delivery log, redelivery."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.core.db.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, utcnow
from services.core.errors import ValidationFailed
from services.core.webhooks import check_url
from services.gateway.deps import CurrentTenant, SessionDep, SettingsDep
from services.gateway.webhooks import service
from services.gateway.webhooks.schemas import (
    AttemptRead,
    DeliveryList,
    DeliveryRead,
    SecretRotate,
    WebhookCreate,
    WebhookCreated,
    WebhookList,
    WebhookRead,
    WebhookRotated,
    WebhookUpdate,
)

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])


def endpoint_read(endpoint: WebhookEndpoint) -> WebhookRead:
    return WebhookRead(id=endpoint.id, url=endpoint.url, events=endpoint.events, description=endpoint.description,
                       document_id=endpoint.document_id, created_at=endpoint.created_at)


def delivery_read(delivery: WebhookDelivery, attempts: list[WebhookAttempt]) -> DeliveryRead:
    return DeliveryRead(
        id=delivery.id, event_id=delivery.event_id, event_type=delivery.event_type, document_id=delivery.document_id,
        status=delivery.status, attempts=delivery.attempts, next_attempt_at=delivery.next_attempt_at,
        last_status_code=delivery.last_status_code, last_error=delivery.last_error, created_at=delivery.created_at,
        finished_at=delivery.finished_at,
        attempt_log=[AttemptRead(number=a.number, started_at=a.started_at, duration_ms=a.duration_ms,
                                 status_code=a.status_code, error=a.error) for a in attempts],
    )


@router.post("", status_code=201, response_model=WebhookCreated)
def create_webhook(body: WebhookCreate, tenant: CurrentTenant, session: SessionDep,
                   settings: SettingsDep) -> WebhookCreated:
    endpoint = service.create_endpoint(session, settings, tenant.id, url=body.url, event_names=body.events,
                                       description=body.description)
    return WebhookCreated(**endpoint_read(endpoint).model_dump(), secret=endpoint.secret)


@router.get("", response_model=WebhookList)
def list_webhooks(tenant: CurrentTenant, session: SessionDep) -> WebhookList:
    return WebhookList(data=[endpoint_read(e) for e in service.list_endpoints(session, tenant.id)])


@router.get("/{webhook_id}", response_model=WebhookRead)
def get_webhook(webhook_id: str, tenant: CurrentTenant, session: SessionDep) -> WebhookRead:
    return endpoint_read(service.get_endpoint(session, tenant.id, webhook_id))


@router.patch("/{webhook_id}", response_model=WebhookRead)
def update_webhook(webhook_id: str, body: WebhookUpdate, tenant: CurrentTenant, session: SessionDep,
                   settings: SettingsDep) -> WebhookRead:
    endpoint = service.get_endpoint(session, tenant.id, webhook_id)
    if body.url is not None:
        endpoint.url = check_url(body.url, allow_private=settings.webhooks.allow_private_urls)
    if body.events is not None:
        endpoint.events = service.clean_events(body.events)
    if body.description is not None:
        endpoint.description = body.description
    session.flush()
    return endpoint_read(endpoint)


@router.post("/{webhook_id}/rotate-secret", response_model=WebhookRotated)
def rotate_secret(webhook_id: str, tenant: CurrentTenant, session: SessionDep, settings: SettingsDep,
                  body: SecretRotate | None = None) -> WebhookRotated:
    """A new secret signs every attempt from now on, retries of earlier messages included; the previous one
    signs too (a second signature) until `previous_secret_expires_at`."""
    endpoint = service.get_endpoint(session, tenant.id, webhook_id)
    if endpoint.document_id is not None:
        raise ValidationFailed("a document's webhook is signed with the tenant's secret: "
                               "POST /v1/tenant/rotate-webhook-secret rotates it")
    overlap_s = settings.webhooks.secret_overlap_s if body is None or body.overlap_s is None else body.overlap_s
    service.rotate_secret(session, endpoint, overlap_s=overlap_s)
    return WebhookRotated(**endpoint_read(endpoint).model_dump(), secret=endpoint.secret,
                          previous_secret_expires_at=endpoint.previous_secret_expires_at)


@router.delete("/{webhook_id}", status_code=204)
def delete_webhook(webhook_id: str, tenant: CurrentTenant, session: SessionDep) -> None:
    service.get_endpoint(session, tenant.id, webhook_id).deleted_at = utcnow()


@router.get("/{webhook_id}/deliveries", response_model=DeliveryList)
def list_deliveries(webhook_id: str, tenant: CurrentTenant, session: SessionDep,
                    limit: Annotated[int, Query(ge=1, le=200)] = 50, cursor: str | None = None) -> DeliveryList:
    endpoint = service.get_endpoint(session, tenant.id, webhook_id)
    rows, attempts, next_cursor = service.list_deliveries(session, endpoint, limit=limit, cursor=cursor)
    return DeliveryList(data=[delivery_read(d, attempts[d.id]) for d in rows], next_cursor=next_cursor)


@router.post("/{webhook_id}/deliveries/{delivery_id}/redeliver", status_code=202, response_model=DeliveryRead)
def redeliver(webhook_id: str, delivery_id: str, tenant: CurrentTenant, session: SessionDep) -> DeliveryRead:
    endpoint = service.get_endpoint(session, tenant.id, webhook_id)
    return delivery_read(service.redeliver(session, endpoint, delivery_id), [])
