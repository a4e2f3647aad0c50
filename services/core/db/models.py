"""ORM tables: documents and their pages, tenants and their keys, events and webhook deliveries.

The database is the source of truth; the queue only carries work.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from services.core.db.types import SealedString, UTCDateTime


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
    PENDING = "pending"  # row written, not queued by the split yet
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


PAGE_FINAL = frozenset({PageStatus.SUCCEEDED, PageStatus.FAILED, PageStatus.CANCELLED})


def utcnow() -> datetime:
    return datetime.now(UTC)


# A document's id: `new_id("doc")`, or an e-mail attachment's `{e-mail id}_{n}` (services/core/attachments.py).
DOCUMENT_ID_PATTERN = r"^doc_[0-9a-f]{32}(_[0-9]+)?$"


def new_id(prefix: str) -> str:
    """A time-sortable id (`doc_0192f3a4b5c6d7e8f9a0b1c2d3e4f5a6`): newest-first listing is an index scan."""
    return f"{prefix}_{int(time.time() * 1000):012x}{os.urandom(10).hex()}"


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: sa.JSON, list[Any]: sa.JSON}


_UNSCRUBBED = sa.text("scrubbed_at IS NULL AND (deleted_at IS NOT NULL OR expired_at IS NOT NULL)")
_UNSENT = sa.text("jobs_unsent_since IS NOT NULL")


class Document(Base):
    __tablename__ = "documents"

    id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.String(48), index=True)
    status: Mapped[str] = mapped_column(sa.String(16), default=DocumentStatus.QUEUED, index=True)
    filename: Mapped[str] = mapped_column(sa.String(512), default="")
    media_type: Mapped[str] = mapped_column(sa.String(255))  # RFC 6838: up to 127 + "/" + 127; a DOCX is 71
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
    # What the document was submitted for (services/core/document_tasks.py): `parse`, or a model task whose
    # answer is made after the pages, with its parameters (`target_language`, `schema`).
    task: Mapped[str] = mapped_column(sa.String(16), default="parse", server_default="parse")
    task_params: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=sa.text("'{}'"))
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
    # Result cache: set when the document may answer later identical uploads (never with do_not_cache).
    cache_key: Mapped[str | None] = mapped_column(sa.String(64))
    # Queue priority of its pages (Redis: 0 is served first); see `services.core.fairness`.
    priority: Mapped[int] = mapped_column(default=0)
    progress_event_at: Mapped[datetime | None]  # last `document.progress` event (they are throttled)
    expired_at: Mapped[datetime | None]  # the retention sweep deleted its stored objects
    # Deleted or expired, and every copy of the customer's data in the database erased (services/core/erasure.py).
    scrubbed_at: Mapped[datetime | None]
    # An e-mail's attachment parsed as a document of its own: the e-mail's id (services/worker/office/attachments.py).
    parent_id: Mapped[str | None] = mapped_column(sa.String(48), index=True)
    # Its first jobs are committed but not yet known to be sent: set with its rows, cleared once they are
    # published (services/core/queues.py, `mark_sent`). Still set after a grace, they were never sent (the
    # process died between commit and send) and the reconciler sends them.
    jobs_unsent_since: Mapped[datetime | None]
    # One of the documents of a batch (`POST /v1/batches`), or None.
    batch_id: Mapped[str | None] = mapped_column(sa.String(48), index=True)

    __table_args__ = (
        sa.Index("ix_documents_unfinished", "status", "finished_at"),
        # Only the few documents whose first jobs are being sent right now (or were lost).
        sa.Index("ix_documents_unsent", "jobs_unsent_since", postgresql_where=_UNSENT, sqlite_where=_UNSENT),
        # Only the few erased documents whose scrub still waits for a webhook delivery to end.
        sa.Index("ix_documents_unscrubbed", "id", postgresql_where=_UNSCRUBBED, sqlite_where=_UNSCRUBBED),
        sa.Index("ix_documents_tenant_cache", "tenant_id", "cache_key"),
        sa.Index("ix_documents_tenant_status", "tenant_id", "status"),
    )


class Batch(Base):
    """Many documents uploaded together: one id to follow them by, and one `batch.completed` event when the last
    ends (`completed_at`, set once, by whichever ending sees every document final)."""

    __tablename__ = "batches"

    id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.String(48), index=True)
    documents_total: Mapped[int] = mapped_column(default=0)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    completed_at: Mapped[datetime | None]


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
    # Page-level result cache: the page file's fingerprint with the engine version, mode and options.
    cache_key: Mapped[str | None] = mapped_column(sa.String(64), index=True)
    cached: Mapped[bool] = mapped_column(default=False)  # answered from the cache: no engine call, not charged

    __table_args__ = (sa.Index("ix_pages_status_lease", "status", "lease_expires_at"),
                      sa.Index("ix_pages_finished_at", "finished_at"))


# Tenants --------------------------------------------------------------------------------------------------------


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(128), unique=True)
    # Overrides of the default limits: requests_per_minute, pages_in_flight, max_file_bytes, max_pages,
    # retention_days. A missing key means the default from settings.
    limits: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # Signs webhooks sent to a document's own `webhook_url` (endpoints under /v1/webhooks have their own).
    webhook_secret: Mapped[str] = mapped_column(SealedString())  # sealed at rest with PAGEMILL_SECRET_KEY
    # The secret before the last rotation: it signs too (a second signature) until it expires.
    previous_webhook_secret: Mapped[str | None] = mapped_column(SealedString())
    previous_webhook_secret_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    disabled_at: Mapped[datetime | None]


class ApiKey(Base):
    """Only the SHA-256 of a key is stored, with a short prefix so people can tell their keys apart."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.String(48), sa.ForeignKey("tenants.id", ondelete="CASCADE"),
                                           index=True)
    name: Mapped[str] = mapped_column(sa.String(128), default="")
    prefix: Mapped[str] = mapped_column(sa.String(16))
    key_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"

    tenant_id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    key: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(sa.String(64))
    document_id: Mapped[str] = mapped_column(sa.String(48))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(index=True)


# Events and webhooks ------------------------------------------------------------------------------------------


class DocumentEventRow(Base):
    """Every event a document emitted, in order (`seq`): replayed by the SSE stream, fanned out to webhooks."""

    __tablename__ = "document_events"

    seq: Mapped[int] = mapped_column(sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
                                     autoincrement=True)
    id: Mapped[str] = mapped_column(sa.String(48), unique=True)
    document_id: Mapped[str] = mapped_column(sa.String(48), index=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.String(48))
    type: Mapped[str] = mapped_column(sa.String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.String(48), index=True)
    url: Mapped[str] = mapped_column(sa.String(2048))
    events: Mapped[list[Any]] = mapped_column(default=list)  # empty: every event
    # Sealed at rest with PAGEMILL_SECRET_KEY. A document's own endpoint (`document_id` set) keeps a copy of the
    # tenant's secret from its creation, but is signed with the tenant's current secret(s) at each attempt.
    secret: Mapped[str] = mapped_column(SealedString())
    # The secret before the last rotation: it signs too (a second signature) until it expires.
    previous_secret: Mapped[str | None] = mapped_column(SealedString())
    previous_secret_expires_at: Mapped[datetime | None]
    description: Mapped[str] = mapped_column(sa.String(256), default="")
    # Set for the endpoint made from one document's `webhook_url` form field: it hears only that document.
    document_id: Mapped[str | None] = mapped_column(sa.String(48), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None]


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # waiting for its (next) attempt
    SENDING = "sending"  # an attempt holds the lease
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # every attempt failed: final


class WebhookDelivery(Base):
    """One message to one endpoint; `id` is the `webhook-id` header, the same on every attempt."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[str] = mapped_column(sa.String(48), primary_key=True)
    endpoint_id: Mapped[str] = mapped_column(sa.String(48), index=True)
    tenant_id: Mapped[str] = mapped_column(sa.String(48))
    event_id: Mapped[str] = mapped_column(sa.String(48))
    event_type: Mapped[str] = mapped_column(sa.String(32))
    document_id: Mapped[str | None] = mapped_column(sa.String(48))
    body: Mapped[str] = mapped_column(sa.Text)  # the exact JSON that is signed and sent
    status: Mapped[str] = mapped_column(sa.String(16), default=DeliveryStatus.PENDING)
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime | None]
    lease_expires_at: Mapped[datetime | None]
    last_status_code: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]

    __table_args__ = (sa.Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),)


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
                                    autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(
        sa.String(48), sa.ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True)
    number: Mapped[int]
    started_at: Mapped[datetime]
    duration_ms: Mapped[int]
    status_code: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(sa.Text)
    response_excerpt: Mapped[str | None] = mapped_column(sa.Text)
