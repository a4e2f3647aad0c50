"""ORM tables: documents and their pages. The database is the source of truth; the queue only carries work."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class DocumentStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELLED = "cancelled"


DOCUMENT_FINAL = frozenset(
    {DocumentStatus.SUCCEEDED, DocumentStatus.PARTIAL, DocumentStatus.FAILED, DocumentStatus.CANCELLED}
)


class PageStatus(StrEnum):
    PENDING = "pending"  # row written, page file not split out yet
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


PAGE_FINAL = frozenset({PageStatus.SUCCEEDED, PageStatus.FAILED, PageStatus.CANCELLED})


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    """A time-sortable id (`doc_0192f3a4b5c6d7e8f9a0b1c2d3e4f5a6`): newest-first listing is an index scan."""
    return f"{prefix}_{int(time.time() * 1000):012x}{os.urandom(10).hex()}"


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC on every backend (SQLite stores naive datetimes)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: sa.JSON, list[Any]: sa.JSON}


class Document(Base):
    __tablename__ = "documents"

    id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.String(48), index=True)
    status: Mapped[str] = mapped_column(sa.String(16), default=DocumentStatus.QUEUED, index=True)
    filename: Mapped[str] = mapped_column(sa.String(512), default="")
    media_type: Mapped[str] = mapped_column(sa.String(64))
    size_bytes: Mapped[int] = mapped_column(sa.BigInteger)
    sha256: Mapped[str] = mapped_column(sa.String(64), index=True)
    source_key: Mapped[str] = mapped_column(sa.String(512))
    # 1-based page numbers of the source that were asked for, in order; index i of `pages` is page_numbers[i].
    page_numbers: Mapped[list[Any]] = mapped_column(default=list)
    pages_total: Mapped[int] = mapped_column(default=0)
    pages_done: Mapped[int] = mapped_column(default=0)
    pages_failed: Mapped[int] = mapped_column(default=0)
    mode: Mapped[str] = mapped_column(sa.String(16), default="fast")
    engine: Mapped[str] = mapped_column(sa.String(32), default="cpu")
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    request_id: Mapped[str | None] = mapped_column(sa.String(64))
    error_code: Mapped[str | None] = mapped_column(sa.String(64))
    error_message: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    split_at: Mapped[datetime | None]
    split_enqueued_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    assembly_claimed_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]

    __table_args__ = (sa.Index("ix_documents_unfinished", "status", "finished_at"),)


class Page(Base):
    __tablename__ = "pages"

    document_id: Mapped[str] = mapped_column(
        sa.String(48), sa.ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )
    index: Mapped[int] = mapped_column(primary_key=True)  # 0-based position in the document's selection
    page_number: Mapped[int]  # 1-based page number in the source
    status: Mapped[str] = mapped_column(sa.String(16), default=PageStatus.PENDING, index=True)
    source_key: Mapped[str | None] = mapped_column(sa.String(512))
    result_key: Mapped[str | None] = mapped_column(sa.String(512))
    queue: Mapped[str | None] = mapped_column(sa.String(32))
    deliveries: Mapped[int] = mapped_column(default=0)  # times a worker picked the page up
    attempts: Mapped[int] = mapped_column(default=0)  # engine calls made for the finished result
    engine: Mapped[str | None] = mapped_column(sa.String(32))
    model: Mapped[str | None] = mapped_column(sa.String(128))
    latency_ms: Mapped[int | None]
    is_fallback: Mapped[bool] = mapped_column(default=False)
    confidence: Mapped[float | None]
    error_code: Mapped[str | None] = mapped_column(sa.String(64))
    error_message: Mapped[str | None] = mapped_column(sa.Text)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)  # finish reason, tokens, signals…
    enqueued_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    lease_expires_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(sa.String(128))  # `host:pid` of the worker process
    finished_at: Mapped[datetime | None]

    __table_args__ = (sa.Index("ix_pages_status_lease", "status", "lease_expires_at"),)
