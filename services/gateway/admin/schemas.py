"""Admin API bodies: tenants and their API keys."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.core.tenants import MAX_INT_LIMIT, MAX_RETENTION_DAYS


class LimitsUpdate(BaseModel):
    """Per-tenant overrides of the default limits; null removes an override."""

    model_config = ConfigDict(extra="forbid")

    requests_per_minute: int | None = Field(default=None, strict=True, ge=1, le=MAX_INT_LIMIT)
    pages_in_flight: int | None = Field(default=None, strict=True, ge=1, le=MAX_INT_LIMIT)
    max_file_bytes: int | None = Field(default=None, strict=True, ge=1, le=MAX_INT_LIMIT)
    max_pages: int | None = Field(default=None, strict=True, ge=1, le=MAX_INT_LIMIT)
    retention_days: float | None = Field(default=None, strict=True, gt=0, le=MAX_RETENTION_DAYS)


class TenantCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    limits: LimitsUpdate | None = None


class TenantUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limits: LimitsUpdate


class TenantRead(BaseModel):
    id: str
    name: str
    limits: dict[str, Any]  # the effective limits (defaults with the tenant's overrides)
    overrides: dict[str, Any]
    created_at: datetime


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", max_length=128)


class KeyCreated(BaseModel):
    id: str
    key: str  # shown once; only its hash is stored
    prefix: str
    tenant_id: str


class KeyRead(BaseModel):
    id: str
    prefix: str
    name: str
    tenant_id: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class WebhookSecretRotated(BaseModel):
    tenant_id: str
    # The new secret is not shown here: the tenant reads it from GET /v1/tenant, with its API key.
    previous_webhook_secret_expires_at: datetime | None
