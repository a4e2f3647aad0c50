"""`GET /v1/tenant`: who the API key belongs to, its limits, and the secret that signs `webhook_url` calls."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from services.core.tenants import effective_limits
from services.gateway.deps import CurrentTenant, SettingsDep

router = APIRouter(prefix="/v1/tenant", tags=["tenant"])


class TenantSelf(BaseModel):
    id: str
    name: str
    limits: dict[str, Any]
    # Signs the webhooks sent to a document's own `webhook_url` (endpoints under /v1/webhooks have their own).
    webhook_secret: str


@router.get("", response_model=TenantSelf)
def get_tenant(tenant: CurrentTenant, settings: SettingsDep) -> TenantSelf:
    return TenantSelf(id=tenant.id, name=tenant.name, limits=effective_limits(tenant, settings).as_dict(),
                      webhook_secret=tenant.webhook_secret)
