"""`/v1/admin`: tenants and API keys, guarded by `PAGEMILL_ADMIN_KEY` (the same as `pagemill admin ...`)."""

from __future__ import annotations

from fastapi import APIRouter

from services.core import tenants
from services.core.db.models import ApiKey, Tenant
from services.core.settings import Settings
from services.gateway.admin.schemas import (
    KeyCreate,
    KeyCreated,
    KeyRead,
    TenantCreate,
    TenantRead,
    TenantUpdate,
    WebhookSecretRotated,
)
from services.gateway.deps import AdminDep, SessionDep, SettingsDep
from services.gateway.webhooks.schemas import SecretRotate

router = APIRouter(prefix="/v1/admin", tags=["admin"])


def tenant_read(tenant: Tenant, settings: Settings) -> TenantRead:
    return TenantRead(id=tenant.id, name=tenant.name, overrides=tenant.limits, created_at=tenant.created_at,
                      limits=tenants.effective_limits(tenant, settings).as_dict())


def key_read(key: ApiKey) -> KeyRead:
    return KeyRead(id=key.id, prefix=key.prefix, name=key.name, tenant_id=key.tenant_id, created_at=key.created_at,
                   last_used_at=key.last_used_at, revoked_at=key.revoked_at)


@router.post("/tenants", status_code=201, response_model=TenantRead)
def create_tenant(body: TenantCreate, _: AdminDep, session: SessionDep, settings: SettingsDep) -> TenantRead:
    limits = body.limits.model_dump(exclude_none=True) if body.limits else None
    return tenant_read(tenants.create_tenant(session, body.name, limits=limits), settings)


@router.get("/tenants", response_model=list[TenantRead])
def list_tenants(_: AdminDep, session: SessionDep, settings: SettingsDep) -> list[TenantRead]:
    return [tenant_read(t, settings) for t in tenants.list_tenants(session)]


@router.get("/tenants/{tenant_id}", response_model=TenantRead)
def get_tenant(tenant_id: str, _: AdminDep, session: SessionDep, settings: SettingsDep) -> TenantRead:
    return tenant_read(tenants.find_tenant(session, tenant_id), settings)


@router.patch("/tenants/{tenant_id}", response_model=TenantRead)
def update_tenant(tenant_id: str, body: TenantUpdate, _: AdminDep, session: SessionDep,
                  settings: SettingsDep) -> TenantRead:
    tenant = tenants.find_tenant(session, tenant_id)
    return tenant_read(tenants.update_limits(session, tenant, body.limits.model_dump(exclude_unset=True)), settings)


@router.post("/tenants/{tenant_id}/rotate-webhook-secret", response_model=WebhookSecretRotated)
def rotate_webhook_secret(tenant_id: str, _: AdminDep, session: SessionDep, settings: SettingsDep,
                          body: SecretRotate | None = None) -> WebhookSecretRotated:
    """The tenant's `webhook_secret` (it signs `webhook_url` webhooks), e.g. with its keys after a leak
    (`overlap_s: 0`); the tenant reads the new one from GET /v1/tenant."""
    overlap_s = settings.webhooks.secret_overlap_s if body is None or body.overlap_s is None else body.overlap_s
    tenant = tenants.find_tenant(session, tenant_id)
    tenants.rotate_webhook_secret(session, tenant, overlap_s=overlap_s)
    return WebhookSecretRotated(tenant_id=tenant.id,
                                previous_webhook_secret_expires_at=tenant.previous_webhook_secret_expires_at)


@router.post("/tenants/{tenant_id}/keys", status_code=201, response_model=KeyCreated)
def create_key(tenant_id: str, _: AdminDep, session: SessionDep, body: KeyCreate | None = None) -> KeyCreated:
    tenant = tenants.find_tenant(session, tenant_id)
    key, raw = tenants.create_key(session, tenant, name=body.name if body else "")
    return KeyCreated(id=key.id, key=raw, prefix=key.prefix, tenant_id=tenant.id)


@router.get("/tenants/{tenant_id}/keys", response_model=list[KeyRead])
def list_keys(tenant_id: str, _: AdminDep, session: SessionDep) -> list[KeyRead]:
    tenant = tenants.find_tenant(session, tenant_id)
    return [key_read(k) for k in tenants.list_keys(session, tenant)]


@router.delete("/keys/{key_id}", response_model=KeyRead)
def revoke_key(key_id: str, _: AdminDep, session: SessionDep) -> KeyRead:
    return key_read(tenants.revoke_key(session, key_id))
