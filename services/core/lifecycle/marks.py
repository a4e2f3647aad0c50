"""The two bookkeeping marks of a document: when its last progress event went out, and that its jobs are sent.

A leaf of the package (it imports only the models), so `events` and `queues`, which the rest of the lifecycle
imports, can make these changes without an import circle.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import DOCUMENT_FINAL, Document, utcnow

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
