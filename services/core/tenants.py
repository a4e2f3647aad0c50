"""Tenants, their API keys and their limits. Used by the gateway (auth), the CLI and the tests alike.

A key is `pm_` plus 40 random URL-safe characters (240 bits). Only its SHA-256 is stored: with that much
entropy a slow password hash buys nothing, and every request must verify a key cheaply. The first
characters are kept as a visible prefix so people can tell their keys apart.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import sealing
from services.core.db.models import DOCUMENT_FINAL, ApiKey, Document, Page, Tenant, WebhookEndpoint, new_id, utcnow
from services.core.errors import NotFound, ValidationFailed
from services.core.key_cache import forget_on_commit
from services.core.settings import Settings
from services.core.webhooks import generate_secret

KEY_PREFIX = "pm_"
VISIBLE_PREFIX_CHARS = 11  # "pm_" + 8 characters


@dataclass(frozen=True, slots=True)
class TenantLimits:
    requests_per_minute: int
    pages_in_flight: int
    max_file_bytes: int
    max_pages: int
    retention_days: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


LIMIT_NAMES = tuple(TenantLimits.__dataclass_fields__)


def default_limits(settings: Settings) -> TenantLimits:
    return TenantLimits(
        requests_per_minute=settings.limits.requests_per_minute, pages_in_flight=settings.limits.pages_in_flight,
        max_file_bytes=settings.limits.max_file_bytes, max_pages=settings.limits.max_pages,
        retention_days=settings.retention.days,
    )


def effective_limits(tenant: Tenant | None, settings: Settings) -> TenantLimits:
    """The settings' defaults with the tenant's own overrides on top."""
    limits = default_limits(settings)
    overrides = {k: v for k, v in (tenant.limits if tenant else {}).items() if k in LIMIT_NAMES and v is not None}
    return TenantLimits(**{**limits.as_dict(), **overrides})


MAX_INT_LIMIT = 2**31 - 1  # what every count column and comparison holds
MAX_RETENTION_DAYS = 36_525.0  # a century: past it, a retention cutoff would leave the calendar (an OverflowError)


def check_label(field: str, value: str) -> None:
    """A name people read (a tenant's, a key's) is text without control characters: a NUL is refused by
    PostgreSQL (a 500 there, stored on SQLite), and an escape sequence or a newline rewrites the terminal or
    the log line that prints it."""
    if any(unicodedata.category(char) == "Cc" for char in value):
        raise ValidationFailed(f"{field}: control characters (such as NUL, a newline or ESC) are not allowed")


def clean_limits(raw: dict[str, Any] | None) -> dict[str, Any]:
    """Validates limit overrides: known names, positive numbers within bounds; None removes an override."""
    cleaned: dict[str, Any] = {}
    for name, value in (raw or {}).items():
        if name not in LIMIT_NAMES:
            raise ValidationFailed(f"limits: unknown limit {name!r}; known: {', '.join(LIMIT_NAMES)}")
        if value is None:
            cleaned[name] = None
            continue
        kind = float if name == "retention_days" else int
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ValidationFailed(f"limits: {name} must be a positive number")
        highest = MAX_RETENTION_DAYS if kind is float else MAX_INT_LIMIT
        if value > highest:
            raise ValidationFailed(f"limits: {name} must be at most {highest:g}")
        cleaned[name] = kind(value)
    return cleaned


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def create_tenant(session: Session, name: str, *, limits: dict[str, Any] | None = None) -> Tenant:
    name = name.strip()
    if not name or len(name) > 128:
        raise ValidationFailed("name: 1 to 128 characters")
    check_label("name", name)
    if session.execute(sa.select(Tenant.id).where(Tenant.name == name)).first():
        raise ValidationFailed(f"name: a tenant named {name!r} exists already")
    tenant = Tenant(id=new_id("ten"), name=name, limits={k: v for k, v in clean_limits(limits).items() if v},
                    webhook_secret=generate_secret(), created_at=utcnow())
    session.add(tenant)
    session.flush()
    return tenant


def update_limits(session: Session, tenant: Tenant, limits: dict[str, Any]) -> Tenant:
    merged = {**tenant.limits, **clean_limits(limits)}
    tenant.limits = {k: v for k, v in merged.items() if v is not None}
    session.flush()
    forget_on_commit(session)  # the gateway's remembered tenants carry their limits
    return tenant


def find_tenant(session: Session, id_or_name: str) -> Tenant:
    tenant = session.execute(
        sa.select(Tenant).where(sa.or_(Tenant.id == id_or_name, Tenant.name == id_or_name))
    ).scalar_one_or_none()
    if tenant is None:
        raise NotFound(f"no tenant {id_or_name!r}")
    return tenant


def list_tenants(session: Session) -> list[Tenant]:
    """Every tenant, oldest first."""
    return list(session.execute(sa.select(Tenant).order_by(Tenant.created_at)).scalars())


def list_keys(session: Session, tenant: Tenant) -> list[ApiKey]:
    """The tenant's API keys (revoked ones too), oldest first."""
    return list(session.execute(sa.select(ApiKey).where(ApiKey.tenant_id == tenant.id)
                                .order_by(ApiKey.created_at)).scalars())


def create_key(session: Session, tenant: Tenant, *, name: str = "") -> tuple[ApiKey, str]:
    """A new key for the tenant: (the stored row, the key itself, which is shown once and never stored)."""
    check_label("name", name)
    raw = KEY_PREFIX + secrets.token_urlsafe(30)
    key = ApiKey(id=new_id("key"), tenant_id=tenant.id, name=name[:128], prefix=raw[:VISIBLE_PREFIX_CHARS],
                 key_hash=hash_key(raw), created_at=utcnow())
    session.add(key)
    session.flush()
    return key, raw


def revoke_key(session: Session, key_id: str) -> ApiKey:
    key = session.get(ApiKey, key_id)
    if key is None:
        raise NotFound(f"no API key {key_id!r}")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
    session.flush()
    forget_on_commit(session)  # at once in this process; in others within `api_key_cache_s` (key_cache.py)
    return key


def authenticate(session: Session, raw_key: str) -> Tenant | None:
    """The live tenant a key belongs to, or None (unknown, revoked, or the tenant is disabled)."""
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) > 128:
        return None
    now = utcnow()
    row = session.execute(
        sa.select(ApiKey, Tenant).join(Tenant, Tenant.id == ApiKey.tenant_id)
        .where(ApiKey.key_hash == hash_key(raw_key), ApiKey.revoked_at.is_(None), Tenant.disabled_at.is_(None))
    ).first()
    if row is None:
        return None
    key, tenant = row
    if key.last_used_at is None or key.last_used_at < now - timedelta(minutes=1):
        # At most one write a minute per key: knowing a key is in use matters, every request does not.
        session.execute(sa.update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=now))
    return tenant


def live_key_owners(session: Session, key_hashes: Iterable[str]) -> set[tuple[str, str]]:
    """(key hash, tenant id) of each of these keys that is live now (not revoked, its tenant not disabled): one
    statement for the keys of every open event stream of a gateway process."""
    hashes = sorted(set(key_hashes))
    if not hashes:
        return set()
    rows = session.execute(
        sa.select(ApiKey.key_hash, ApiKey.tenant_id).join(Tenant, Tenant.id == ApiKey.tenant_id)
        .where(ApiKey.key_hash.in_(hashes), ApiKey.revoked_at.is_(None), Tenant.disabled_at.is_(None)))
    return {(key_hash, tenant_id) for key_hash, tenant_id in rows}


# Load -----------------------------------------------------------------------------------------------------------


def pages_in_flight(session: Session, tenant_id: str) -> int:
    """Pages of the tenant's open documents that have not ended yet."""
    value = session.execute(
        sa.select(sa.func.coalesce(sa.func.sum(Document.pages_total - Document.pages_done - Document.pages_failed), 0))
        .where(Document.tenant_id == tenant_id, Document.status.not_in([s.value for s in DOCUMENT_FINAL]))
    ).scalar_one()
    return int(value)


def pages_finished_recently(session: Session, tenant_id: str, seconds: int = 60) -> int:
    """The tenant's pages that ended within the last `seconds`: its current throughput."""
    since = utcnow() - timedelta(seconds=seconds)
    return int(session.execute(
        sa.select(sa.func.count()).select_from(Page).join(Document, Document.id == Page.document_id)
        .where(Document.tenant_id == tenant_id, Page.finished_at >= since)
    ).scalar_one())


def lock_tenant(session: Session, tenant_id: str) -> None:
    """Serializes one tenant's submissions (limits and idempotency keys are checked, then written)."""
    session.execute(sa.select(Tenant.id).where(Tenant.id == tenant_id).with_for_update())


def ensure_local_key(session: Session, saved_key: str | None, *, tenant_name: str, key_name: str
                     ) -> tuple[str, bool]:
    """`pagemill serve` on embedded defaults: `saved_key` while it is valid, else a new key of the tenant
    `tenant_name` (made if missing). Returns the key and whether it is new."""
    if saved_key and authenticate(session, saved_key) is not None:
        return saved_key, False
    try:
        tenant = find_tenant(session, tenant_name)
    except NotFound:
        tenant = create_tenant(session, tenant_name)
    _, raw = create_key(session, tenant, name=key_name)
    return raw, True


def rotate_webhook_secret(session: Session, tenant: Tenant, *, overlap_s: float) -> Tenant:
    """A new secret for the tenant's `webhook_url` webhooks. The one it replaces keeps signing, as a second
    signature, for `overlap_s` seconds (0: from now on only the new one), so receivers can switch without
    rejecting a message; a secret still in an earlier overlap window is dropped at once."""
    session.refresh(tenant, with_for_update=True)  # two rotations at once: the second keeps the first's secret
    now = utcnow()
    tenant.previous_webhook_secret = tenant.webhook_secret if overlap_s > 0 else None
    tenant.previous_webhook_secret_expires_at = now + timedelta(seconds=overlap_s) if overlap_s > 0 else None
    tenant.webhook_secret = generate_secret()
    session.flush()
    forget_on_commit(session)  # the gateway's remembered tenants carry their secret
    return tenant


def reseal_secrets(session: Session) -> int:
    """Seals every plaintext webhook secret and re-seals every sealed one with the newest key of
    `PAGEMILL_SECRET_KEY` (`pagemill admin seal-secrets`). Returns the rows rewritten."""
    if not sealing.can_seal():
        raise sealing.SealingError(f"set {sealing.ENV} first: there is no key to seal with")
    count = 0
    columns = ((Tenant, Tenant.webhook_secret), (Tenant, Tenant.previous_webhook_secret),
               (WebhookEndpoint, WebhookEndpoint.secret), (WebhookEndpoint, WebhookEndpoint.previous_secret))
    for model, column in columns:
        for row_id, secret in session.execute(sa.select(model.id, column).where(column.is_not(None))).all():
            # opened by the column type on the way out, sealed with the newest key on the way back in
            session.execute(sa.update(model).where(model.id == row_id).values({column.key: secret}))
            count += 1
    return count
