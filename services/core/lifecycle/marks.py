"""A document's bookkeeping marks (its last progress event, its jobs sent) and the changes made to rows a caller
already holds (the reconciler's resends, a delete, an erasure, a missing result at assembly).

A leaf of the package (it imports only the models), so `events` and `queues`, which the rest of the lifecycle
imports, can make these changes without an import circle.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import DOCUMENT_FINAL, Document, Page, PageStatus, utcnow

_FINAL = [s.value for s in DOCUMENT_FINAL]


def claim_progress_slot(session: Session, document_id: str, interval_s: float) -> Document | None:
    """The document, refreshed, when this caller may report its progress now: it is unfinished, pages are still
    open and no progress event went out in the last `interval_s`. The conditional update makes exactly one of
    racing workers win; None for the others."""
    now = utcnow()
    return session.execute(
        sa.update(Document)
        .where(Document.id == document_id, Document.status.not_in(_FINAL),
               Document.pages_done + Document.pages_failed < Document.pages_total,
               sa.or_(Document.progress_event_at.is_(None),
                      Document.progress_event_at <= now - timedelta(seconds=interval_s)))
        .values(progress_event_at=now)
        .returning(Document), execution_options={"populate_existing": True}  # the row the event reports
    ).scalar_one_or_none()


def clear_unsent(session: Session, document_ids: Sequence[str]) -> None:
    """The documents' jobs are out: the reconciler no longer needs to resend them (`jobs_unsent_since`)."""
    session.execute(sa.update(Document).where(Document.id.in_(document_ids))
                    .values(jobs_unsent_since=None, updated_at=Document.updated_at))


# Changes to rows the caller already holds (the reconciler's pass, a delete, an erasure): written at its flush.

def mark_split_sent(document: Document, now: datetime) -> None:
    """A split job for the document is on its way: the reconciler leaves it alone until that job's lease."""
    document.split_enqueued_at = now


def mark_pages_sent(pages: Sequence[Page], now: datetime) -> None:
    """The queued pages' chunk jobs are on their way again."""
    for page in pages:
        page.enqueued_at = now


def mark_jobs_unsent(document: Document, since: datetime | None) -> None:
    """`since`: the document's first jobs are not known to be out from then on (None: they are)."""
    document.jobs_unsent_since = since


def mark_deleted(document: Document, now: datetime) -> None:
    """The customer deleted the document (its cancel, if it was open, comes first)."""
    document.deleted_at = now


def clear_page_text(page: Page, details: dict[str, Any]) -> None:
    """Erasure: the page row keeps no customer text (its error message; `details` without the customer's)."""
    page.error_message, page.details = None, details


def mark_result_missing(page: Page) -> None:
    """At assembly, on the row read for the entry: the page's stored result is gone (`fail_missing_pages`
    writes the same in one statement for all such pages)."""
    page.status, page.error_code = PageStatus.FAILED, "result_missing"
    page.error_message = "the page result is missing from the object store"


def requeue_lost_page(page: Page, now: datetime) -> None:
    """The reconciler found the page's lease expired or its queued job lost: queued again, sent from `now`."""
    page.status, page.enqueued_at, page.lease_expires_at = PageStatus.QUEUED, now, None
