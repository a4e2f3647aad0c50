"""Writing a new document's rows and queueing its first job: one path for uploads and e-mail attachments.

    upload (gateway) ──┐
                       ├─▶ document row (+ page rows) ─▶ split job, or the page job of a single image
    attachment (worker)┘                                  (sent after the commit, through the outbox)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Document, DocumentStatus, Page, PageStatus, utcnow
from services.core.formats import OFFICE_TYPES
from services.core.pdf import IMAGE_TYPES
from services.core.queues import enqueue, page_job, split_job


@dataclass(frozen=True, slots=True)
class NewDocument:
    """A document about to be written; its source is already stored under `source_key`."""

    id: str
    tenant_id: str | None
    filename: str
    media_type: str
    size_bytes: int
    sha256: str
    source_key: str
    page_numbers: list[int]  # empty for an office document: known once it is converted
    mode: str
    engine: str
    metadata: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    request_id: str | None = None
    priority: int = 0
    cache_key: str | None = None
    parent_id: str | None = None
    pages_spec: str | None = None  # an office document's page selection, applied after its conversion
    task: str = "parse"  # the model task run after parsing (services/core/document_tasks.py)
    task_params: dict[str, Any] = field(default_factory=dict)


def insert_document(session: Session, new: NewDocument) -> Document:
    """Writes the rows and enqueues the document's first job, sent when the caller's transaction commits."""
    now = utcnow()
    document = Document(
        id=new.id, tenant_id=new.tenant_id, status=DocumentStatus.QUEUED, filename=new.filename[:512],
        media_type=new.media_type, size_bytes=new.size_bytes, sha256=new.sha256, source_key=new.source_key,
        page_numbers=new.page_numbers, pages_total=len(new.page_numbers), mode=new.mode, engine=new.engine,
        metadata_=new.metadata, options=dict(new.options), request_id=new.request_id, created_at=now,
        updated_at=now, priority=new.priority, cache_key=new.cache_key, parent_id=new.parent_id,
        task=new.task, task_params=dict(new.task_params),
    )
    if new.media_type in OFFICE_TYPES:
        # Converted by the split job, which then writes the page rows; the selection waits in the options.
        if new.pages_spec:
            document.options = {**document.options, "pages": new.pages_spec}
        document.split_enqueued_at = now
        session.add(document)
        session.flush()
        enqueue(split_job(document))
        return document
    session.add(document)
    session.flush()
    single_image = new.media_type in IMAGE_TYPES and new.page_numbers == [1]
    session.execute(sa.insert(Page), [
        {"document_id": new.id, "index": i, "page_number": number, "details": {},
         "status": PageStatus.QUEUED if single_image else PageStatus.PENDING,
         "source_key": new.source_key if single_image else None, "engine": new.engine,
         "enqueued_at": now if single_image else None}
        for i, number in enumerate(new.page_numbers)
    ])
    if single_image:
        # A plain image is its own page file: no split step.
        document.split_at = now
        enqueue(page_job(document, 0, new.source_key))
    else:
        document.split_enqueued_at = now
        enqueue(split_job(document))
    return document
