"""A document's own state changes: its assembly claimed, its end, what retention, erasure and batches write.

Each one a conditional UPDATE, so racing processes agree; an end records its `document.<status>` event in the
same transaction (`services.core.events`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import events
from services.core.db.models import DOCUMENT_FINAL, PAGE_FINAL, Document, DocumentStatus, Page, PageStatus, utcnow
from services.core.db.session import rowcount
from services.core.settings import FailurePolicy

_FINAL_PAGE_VALUES = [s.value for s in PAGE_FINAL]
_FINAL_DOC_VALUES = [s.value for s in DOCUMENT_FINAL]


def claim_assembly(session: Session, document_id: str, *, lease_s: int | None,
                   now: datetime | None = None) -> bool:
    """Takes the right to assemble; with `lease_s`, a claim older than that is taken over."""
    now = now or utcnow()
    unclaimed = Document.assembly_claimed_at.is_(None)
    condition = unclaimed if lease_s is None else sa.or_(
        unclaimed, Document.assembly_claimed_at < now - timedelta(seconds=lease_s))
    return bool(rowcount(session.execute(
        sa.update(Document)
        .where(Document.id == document_id, Document.status.not_in(_FINAL_DOC_VALUES), condition)
        .values(assembly_claimed_at=now)
    )))


def mark_split_chunk(session: Session, document_id: str, *, last: bool) -> bool:
    """The split queues a chunk of the document's pages: False when the document ended meanwhile (a cancel or
    delete leaves its pages alone). Its first chunk makes it running (`started_at` waits for its first page's
    claim); the `last` chunk marks it split."""
    return session.execute(
        sa.update(Document).where(Document.id == document_id, Document.status.not_in(DOCUMENT_FINAL))
        .values(status=sa.case((Document.status == DocumentStatus.QUEUED, DocumentStatus.RUNNING),
                               else_=Document.status),
                **({"split_at": utcnow()} if last else {}))
        .returning(Document.id)
    ).first() is not None


def mark_split(session: Session, document_id: str) -> None:
    """A document read natively is split at once (its one page ends at the split, no page job): `split_at` is
    set once, and a queued document is running."""
    session.execute(sa.update(Document).where(Document.id == document_id, Document.split_at.is_(None))
                    .values(split_at=utcnow(), status=sa.case(
                        (Document.status == DocumentStatus.QUEUED, DocumentStatus.RUNNING),
                        else_=Document.status)))


def claim_page_numbers(session: Session, document_id: str, page_numbers: list[int]) -> bool:
    """A converted office document's pages: its page count and numbers, set by the one run that finds it queued
    without any. False when an earlier run set them (or the document is no longer queued)."""
    return bool(rowcount(session.execute(
        sa.update(Document).where(Document.id == document_id, Document.pages_total == 0,
                                  Document.status == DocumentStatus.QUEUED)
        .values(pages_total=len(page_numbers), page_numbers=page_numbers, updated_at=utcnow()))))


def final_status(pages_done: int, pages_failed: int, policy: FailurePolicy) -> DocumentStatus:
    if pages_failed == 0:
        return DocumentStatus.SUCCEEDED
    if pages_done == 0 or policy == FailurePolicy.FAILED:
        return DocumentStatus.FAILED
    return DocumentStatus.PARTIAL


def finalize_document(session: Session, document_id: str, status: DocumentStatus, *,
                      error_code: str | None = None, error_message: str | None = None,
                      options: dict[str, Any] | None = None) -> bool:
    """Sets the final status once (and `options`, when given, in the same statement: what assembly wrote); the
    `document.<status>` event is recorded in the same transaction."""
    now = utcnow()
    ended = session.execute(
        sa.update(Document)
        .where(Document.id == document_id, Document.status.not_in(_FINAL_DOC_VALUES))
        .values(status=status, finished_at=now, updated_at=now, error_code=error_code,
                error_message=error_message, **({} if options is None else {"options": options}))
        .returning(Document), execution_options={"populate_existing": True}  # the row its final event reports
    ).scalar_one_or_none()
    if ended is not None:
        events.record_final(session, ended)
    return ended is not None


def cancel_document(session: Session, document_id: str) -> bool:
    """Cancels what is pending. Returns True if the document was still open."""
    now = utcnow()
    cancelled = bool(rowcount(session.execute(
        sa.update(Document)
        .where(Document.id == document_id, Document.status.not_in(_FINAL_DOC_VALUES))
        .values(status=DocumentStatus.CANCELLED, finished_at=now, updated_at=now,
                error_code="cancelled", error_message="cancelled by the client")
    )))
    session.execute(
        sa.update(Page)
        .where(Page.document_id == document_id, Page.status.not_in(_FINAL_PAGE_VALUES))
        .values(status=PageStatus.CANCELLED, finished_at=now, lease_expires_at=None)
    )
    if cancelled:
        events.record_final(session, document_id)
    return cancelled


def fail_missing_pages(session: Session, document_id: str, missing: list[int], *, pages_done: int,
                       pages_failed: int) -> None:
    """At assembly: pages whose stored result is gone end `failed` (`result_missing`), and the document's counts
    are set to what assembly found."""
    session.execute(sa.update(Page).where(Page.document_id == document_id, Page.index.in_(missing))
                    .values(status=PageStatus.FAILED, error_code="result_missing",
                            error_message="the page result is missing from the object store"))
    session.execute(sa.update(Document).where(Document.id == document_id)
                    .values(pages_done=pages_done, pages_failed=pages_failed))


def mark_expired(session: Session, document_id: str, now: datetime) -> bool:
    """Retention: the document's results are gone from `now` on. False when another process marked it first."""
    return bool(rowcount(session.execute(
        sa.update(Document).where(Document.id == document_id, Document.expired_at.is_(None))
        .values(expired_at=now, updated_at=now))))


def clear_customer_fields(session: Session, document_id: str) -> None:
    """Erasure: the document row keeps no customer data (metadata, filename, error text, task parameters)."""
    session.execute(sa.update(Document).where(Document.id == document_id).values(
        metadata_={}, filename="", error_message=None, task_params={}))


def mark_scrubbed(session: Session, document_id: str, now: datetime) -> None:
    """Erasure: nothing of the document's customer data is left anywhere (`scrubbed_at`)."""
    session.execute(sa.update(Document).where(Document.id == document_id).values(scrubbed_at=now))


def attach_to_batch(session: Session, document_ids: list[str], tenant_id: str, batch_id: str) -> None:
    """The tenant's documents `document_ids` become members of the batch `batch_id`."""
    session.execute(sa.update(Document).where(Document.id.in_(document_ids), Document.tenant_id == tenant_id)
                    .values(batch_id=batch_id).execution_options(synchronize_session=False))
