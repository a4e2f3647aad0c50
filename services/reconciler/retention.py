"""The retention sweep: finished documents older than their tenant's retention lose their stored objects.

The rows stay, marked `expired_at` (usage and the document's history remain; its result answers 410), with
the customer's metadata, filename and error text erased from them (`services.core.erasure`).
`DELETE /v1/documents/{id}` erases at once; this is the clock for everything nobody deleted.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa

from services.core import erasure
from services.core.db.models import Document, IdempotencyKey, Tenant, utcnow
from services.core.db.session import session_scope
from services.core.lifecycle import mark_expired
from services.core.logging import get_logger
from services.core.settings import Settings
from services.core.storage import ObjectStore, document_prefix

log = get_logger(__name__)


def sweep(settings: Settings, store: ObjectStore, *, now: datetime | None = None, limit: int = 500) -> int:
    """Expires up to `limit` documents past retention. Returns how many were expired."""
    now = now or utcnow()
    db = settings.resolved_database_url()
    with session_scope(db) as session:
        overrides = {tenant_id: float(limits["retention_days"]) for tenant_id, limits in session.execute(
            sa.select(Tenant.id, Tenant.limits)) if (limits or {}).get("retention_days")}
        open_ = sa.and_(Document.finished_at.is_not(None), Document.expired_at.is_(None),
                        Document.deleted_at.is_(None))
        due: list[str] = []
        for tenant_id, days in overrides.items():
            due += session.execute(sa.select(Document.id).where(
                open_, Document.tenant_id == tenant_id, Document.finished_at < now - timedelta(days=days)
            ).limit(limit)).scalars()
        default_cutoff = now - timedelta(days=settings.retention.days)
        others = sa.or_(Document.tenant_id.is_(None), Document.tenant_id.not_in(list(overrides))) \
            if overrides else sa.true()
        due += session.execute(sa.select(Document.id).where(
            open_, others, Document.finished_at < default_cutoff).limit(limit)).scalars()
        session.execute(sa.delete(IdempotencyKey).where(IdempotencyKey.expires_at < now))
    expired = 0
    for document_id in due[:limit]:
        store.delete_prefix(document_prefix(document_id))
        with session_scope(db) as session:
            if mark_expired(session, document_id, now):
                erasure.scrub_document(session, document_id, now)
                expired += 1
    if expired:
        log.info("retention.expired", documents=expired)
    return expired
