"""`GET /v1/usage`: pages processed for the tenant in a period, by mode and engine. Cache hits are free."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Annotated

from fastapi import APIRouter, Query

from services.core.db.models import utcnow
from services.core.errors import ValidationFailed
from services.gateway.deps import CurrentTenant, SessionDep
from services.gateway.usage.schemas import UsageRead
from services.gateway.usage.service import usage

router = APIRouter(prefix="/v1/usage", tags=["usage"])


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
