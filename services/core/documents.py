"""Writing a new document's rows and queueing its first job: one path for uploads and e-mail attachments.

    upload (gateway) ──┐
                       ├─▶ document row (+ page rows) ─▶ split job, or its page jobs when it needs no split
    attachment (worker)┘                                  (sent after the commit, through the outbox)

A split writes page files and picks each page's engine. A single image, or a PDF whose pages are read from the
document itself (up to `worker.page_files_over_mb`) and all go to the cpu queue, needs neither: its page jobs
go out with its rows, one queue hop and one transaction fewer. A vLLM document keeps its split: its chunks
follow the preset's request groups and, in `balanced` mode, each page's content picks its engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Document, DocumentStatus, Page, PageStatus, utcnow
from services.core.formats import OFFICE_TYPES
from services.core.pdf import IMAGE_TYPES, PDF
from services.core.queues import Queue, chunk_jobs, enqueue, mark_sent, page_queue, split_job
from services.core.settings import Settings
from services.core.storage import pages_read_from_source


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


def needs_split(new: NewDocument, settings: Settings) -> bool:
    """Whether the document's page jobs wait for a split job (see the module's docstring)."""
    if new.media_type in IMAGE_TYPES:
        return new.page_numbers != [1]  # frames of a multi-page image are written out as page files
    return not (new.media_type == PDF and page_queue(new.engine) == Queue.PAGES_CPU
                and pages_read_from_source(new.source_key, new.id, new.size_bytes, settings.worker.page_files_over_mb))


def insert_document(session: Session, new: NewDocument, settings: Settings) -> Document:
    """Writes the rows and enqueues the document's first jobs, sent when the caller's transaction commits."""
    now = utcnow()
    office = new.media_type in OFFICE_TYPES
    split = office or needs_split(new, settings)
    options = dict(new.options)
    if office and new.pages_spec:  # the selection waits for the conversion, in the options
        options["pages"] = new.pages_spec
    document = Document(
        id=new.id, tenant_id=new.tenant_id, status=DocumentStatus.QUEUED, filename=new.filename[:512],
        media_type=new.media_type, size_bytes=new.size_bytes, sha256=new.sha256, source_key=new.source_key,
        page_numbers=new.page_numbers, pages_total=len(new.page_numbers), mode=new.mode, engine=new.engine,
        metadata_=new.metadata, options=options, request_id=new.request_id, created_at=now,
        updated_at=now, priority=new.priority, cache_key=new.cache_key, parent_id=new.parent_id,
        task=new.task, task_params=dict(new.task_params),
        split_enqueued_at=now if split else None, split_at=None if split else now, jobs_unsent_since=now,
    )
    session.add(document)
    session.flush()
    mark_sent(settings.resolved_database_url(), document.id)  # its jobs, enqueued below, are sent: clears the mark
    if office:  # converted by the split job, which then writes the page rows
        enqueue(split_job(document))
        return document
    session.execute(sa.insert(Page), [
        {"document_id": new.id, "index": i, "page_number": number, "details": {},
         "status": PageStatus.PENDING if split else PageStatus.QUEUED,
         "source_key": None if split else new.source_key, "engine": new.engine,
         "queue": None if split else page_queue(new.engine).value, "enqueued_at": None if split else now}
        for i, number in enumerate(new.page_numbers)
    ])
    if split:
        enqueue(split_job(document))
        return document
    # Its pages are queued now, in the chunks a split would make (the document turns `running` at its first
    # page's claim).
    for job in chunk_jobs(document, [(index, new.source_key, new.engine) for index in range(len(new.page_numbers))],
                          settings):
        enqueue(job)
    return document
