"""`/v1/tenant`: who the API key belongs to, its limits, and the secret that signs `webhook_url` calls (which the
tenant rotates itself, as it rotates its endpoints' secrets: it runs the receivers that must switch)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from services.core.db.models import Tenant
from services.core.settings import Settings
from services.core.tenants import effective_limits, find_tenant, rotate_webhook_secret
from services.gateway.deps import CurrentTenant, SessionDep, SettingsDep
from services.gateway.webhooks.schemas import SecretRotate

router = APIRouter(prefix="/v1/tenant", tags=["tenant"])


class TenantSelf(BaseModel):
    id: str
    name: str
    limits: dict[str, Any]
    # Signs the webhooks sent to a document's own `webhook_url` (endpoints under /v1/webhooks have their own).
    webhook_secret: str
    # After a rotation, the previous secret signs too (a second signature) until then; null: only the one above.
    previous_webhook_secret_expires_at: datetime | None


def tenant_self(tenant: Tenant, settings: Settings) -> TenantSelf:
    expires = tenant.previous_webhook_secret_expires_at
    return TenantSelf(id=tenant.id, name=tenant.name, limits=effective_limits(tenant, settings).as_dict(),
                      webhook_secret=tenant.webhook_secret,
                      previous_webhook_secret_expires_at=expires if tenant.previous_webhook_secret else None)


@router.get("", response_model=TenantSelf)
def get_tenant(tenant: CurrentTenant, settings: SettingsDep) -> TenantSelf:
    return tenant_self(tenant, settings)


@router.post("/rotate-webhook-secret", response_model=TenantSelf)
def rotate_tenant_webhook_secret(tenant: CurrentTenant, session: SessionDep, settings: SettingsDep,
                                 body: SecretRotate | None = None) -> TenantSelf:
    """A new `webhook_secret` signs every `webhook_url` attempt from now on, those of documents submitted before
    included; the previous one signs too until `previous_webhook_secret_expires_at`."""
    overlap_s = settings.webhooks.secret_overlap_s if body is None or body.overlap_s is None else body.overlap_s
    return tenant_self(rotate_webhook_secret(session, find_tenant(session, tenant.id), overlap_s=overlap_s),
                       settings)
