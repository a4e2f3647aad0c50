"""Usage: pages that ended in a period, by mode and engine, counted once each. Cache hits are free."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Document, Page, PageStatus
from services.gateway.usage.schemas import UsageLine


def usage(session: Session, tenant_id: str, start: datetime, end: datetime) -> list[UsageLine]:
    """Pages that ended in [start, end), counted once each, by the document's mode and the page's engine."""
    charged = sa.and_(Page.status == PageStatus.SUCCEEDED, Page.cached.is_(False))
    cached = sa.and_(Page.status == PageStatus.SUCCEEDED, Page.cached.is_(True))
    rows = session.execute(
        sa.select(Document.mode, sa.func.coalesce(Page.engine, Document.engine),
                  sa.func.sum(sa.case((charged, 1), else_=0)), sa.func.sum(sa.case((cached, 1), else_=0)),
                  sa.func.sum(sa.case((Page.status == PageStatus.FAILED, 1), else_=0)))
        .join(Document, Document.id == Page.document_id)
        .where(Document.tenant_id == tenant_id, Page.finished_at >= start, Page.finished_at < end)
        .group_by(Document.mode, sa.func.coalesce(Page.engine, Document.engine))
        .order_by(Document.mode, sa.func.coalesce(Page.engine, Document.engine))
    ).all()
    return [UsageLine(mode=mode, engine=engine or "unknown", pages=int(p or 0), cached_pages=int(c or 0),
                      failed_pages=int(f or 0)) for mode, engine, p, c, f in rows]
