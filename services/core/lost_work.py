"""The reconciler's queries: documents and pages whose work was lost or is late (read only; the state changes
they lead to are in `services/core/lifecycle/`)."""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import DOCUMENT_FINAL, Document, DocumentStatus, Page, PageStatus

_FINAL_DOC_VALUES = [s.value for s in DOCUMENT_FINAL]


def expired_running_pages(session: Session, now: datetime, limit: int = 1000) -> list[Page]:
    return list(session.execute(
        sa.select(Page).where(Page.status == PageStatus.RUNNING, Page.lease_expires_at < now).limit(limit)
    ).scalars())


def stale_queued_pages(session: Session, older_than: datetime | None, limit: int = 5000) -> list[Page]:
    """Queued pages enqueued before `older_than` (all queued pages when it is None)."""
    query = sa.select(Page).join(Document, Document.id == Page.document_id).where(
        Page.status == PageStatus.QUEUED, Document.status.not_in(_FINAL_DOC_VALUES))
    if older_than is not None:
        query = query.where(sa.or_(Page.enqueued_at.is_(None), Page.enqueued_at < older_than))
    return list(session.execute(query.order_by(Page.enqueued_at).limit(limit)).scalars())


def unsplit_documents(session: Session, older_than: datetime | None, limit: int = 1000) -> list[Document]:
    query = sa.select(Document).where(Document.status == DocumentStatus.QUEUED, Document.split_at.is_(None))
    if older_than is not None:
        query = query.where(sa.or_(Document.split_enqueued_at.is_(None),
                                   Document.split_enqueued_at < older_than))
    return list(session.execute(query.limit(limit)).scalars())


def unsent_documents(session: Session, committed_before: datetime, limit: int = 1000) -> list[Document]:
    """Documents whose first jobs were committed before `committed_before` and are still not known to be sent
    (`Document.jobs_unsent_since`, cleared a few ms after a normal commit, once its jobs are published)."""
    return list(session.execute(
        sa.select(Document).where(Document.jobs_unsent_since.is_not(None),
                                  Document.jobs_unsent_since < committed_before)
        .order_by(Document.jobs_unsent_since).limit(limit)
    ).scalars())


def unassembled_documents(session: Session, now: datetime, lease_s: int, limit: int = 1000) -> list[str]:
    """Open documents whose pages have all ended, with no live assembly claim."""
    return list(session.execute(
        sa.select(Document.id).where(
            Document.status.not_in(_FINAL_DOC_VALUES),
            Document.pages_total > 0,
            Document.pages_done + Document.pages_failed >= Document.pages_total,
            sa.or_(Document.assembly_claimed_at.is_(None),
                   Document.assembly_claimed_at < now - timedelta(seconds=lease_s)),
        ).limit(limit)
    ).scalars())


def recently_deleted_documents(session: Session, since: datetime, limit: int = 1000) -> list[str]:
    return list(session.execute(
        sa.select(Document.id).where(Document.deleted_at.is_not(None), Document.deleted_at >= since).limit(limit)
    ).scalars())
