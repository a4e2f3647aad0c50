"""`GET /v1/usage`: pages processed for the tenant in a period, by mode and engine. Cache hits are free."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from services.core.db.models import Document, Page, PageStatus, utcnow
from services.core.errors import ValidationFailed
from services.gateway.deps import CurrentTenant, SessionDep

router = APIRouter(prefix="/v1/usage", tags=["usage"])


class UsageLine(BaseModel):
    mode: str
    engine: str
    pages: int  # charged: parsed by an engine
    cached_pages: int  # answered from the result cache: not charged
    failed_pages: int  # ended failed: not charged


class UsageRead(BaseModel):
    from_: datetime = Field(serialization_alias="from")
    to: datetime
    pages: int
    cached_pages: int
    failed_pages: int
    by_mode_engine: list[UsageLine]


def parse_moment(value: str | None, default: datetime) -> datetime:
    """An ISO date (`2026-11-01`, midnight UTC) or date-time; naive times are UTC."""
    if value is None or not value.strip():
        return default
    text = value.strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text) if "T" in text or " " in text else \
            datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
    except ValueError as exc:
        raise ValidationFailed(f"cannot read {value!r} as an ISO 8601 date or date-time") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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


@router.get("", response_model=UsageRead)
def get_usage(
    tenant: CurrentTenant, session: SessionDep,
    from_: Annotated[str | None, Query(alias="from", description="start, inclusive (default: the 1st)")] = None,
    to: Annotated[str | None, Query(description="end, exclusive (default: now)")] = None,
) -> UsageRead:
    now = utcnow()
    start = parse_moment(from_, now.replace(day=1, hour=0, minute=0, second=0, microsecond=0))
    end = parse_moment(to, now)
    if end <= start:
        raise ValidationFailed("to: must be after from")
    lines = usage(session, tenant.id, start, end)
    return UsageRead(from_=start, to=end, pages=sum(x.pages for x in lines),
                     cached_pages=sum(x.cached_pages for x in lines),
                     failed_pages=sum(x.failed_pages for x in lines), by_mode_engine=lines)
