"""Splitting a stored document into page jobs (and page files, unless its pages are read from its PDF), once, in
chunks so the first pages start early."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import DOCUMENT_FINAL, Document, DocumentStatus, Page, PageStatus
from services.core.db.session import session_scope
from services.core.errors import PagemillError
from services.core.formats import OFFICE_TYPES
from services.core.lifecycle import finalize_document, mark_split_chunk, queue_split_pages
from services.core.logging import get_logger
from services.core.pdf import PDF, image_frame_png, split_pdf
from services.core.queues import chunk_jobs, enqueue
from services.core.settings import Settings
from services.core.storage import ObjectStore, page_source_key, pages_read_from_source
from services.worker.engines.vllm.serve import pages_per_request
from services.worker.office.native_page import finish_native_page
from services.worker.office.stage import prepare_office_document
from services.worker.routing import route_page, routes_by_content

log = get_logger(__name__)

# Pages split and queued per transaction (their messages carry up to `worker.chunk_max_pages` pages each).
CHUNK = 32


def _page_files(document: Document, load: Callable[[], bytes],
                settings: Settings) -> Iterator[tuple[str, str, bytes | None, bytes | None]]:
    """(media type, key, bytes to store or None, the page's bytes if routing reads them) per selected page.
    A PDF up to `worker.page_files_over_mb` is not written out page by page: its pages are read from it by the
    page workers (services/worker/page_source.py)."""
    numbers = [int(n) for n in document.page_numbers]
    by_content = routes_by_content(document.mode, document.engine)
    if pages_read_from_source(document.source_key, document.id, document.size_bytes,
                              settings.worker.page_files_over_mb):
        pages = split_pdf(load(), numbers) if by_content else (None for _ in numbers)
        for page_pdf in pages:
            yield PDF, document.source_key, None, page_pdf
        return
    data = load()
    if document.media_type == PDF or document.media_type in OFFICE_TYPES:  # office: `data` is the converted PDF
        for index, page_pdf in enumerate(split_pdf(data, numbers)):
            yield PDF, page_source_key(document.id, index, ".pdf"), page_pdf, page_pdf
    elif numbers == [1]:
        yield document.media_type, document.source_key, None, None  # a plain image is its own page file
    else:  # frames of a multi-page TIFF (or WebP/PNG animation)
        for index, number in enumerate(numbers):
            frame = image_frame_png(data, number - 1)
            yield "image/png", page_source_key(document.id, index, ".png"), frame, frame


def split_document(document_id: str, settings: Settings, store: ObjectStore) -> int:
    """Writes every pending page's file (when it gets one) and queues its job. Returns the pages queued. Safe
    to run twice.
    Each chunk's jobs go out when its transaction commits, so the first pages start while the rest split; the
    last chunk's transaction also marks the document split (a document of one chunk: one read, one write)."""
    db = settings.resolved_database_url()
    with session_scope(db) as session:
        document = session.get(Document, document_id)
        if document is None or document.status in DOCUMENT_FINAL or document.split_at is not None:
            return 0
        office = document.media_type in OFFICE_TYPES
        pending = set() if office else _pending(session, document_id)
    converted: bytes | None = None
    if office:
        prepared = prepare_office_document(document_id, settings, store)
        if prepared is None:
            return 0
        if prepared.pdf is None:  # read natively: its one page is done, nothing to queue
            finish_native_page(document_id, settings, prepared.native_ms)
            return 0
        converted = prepared.pdf
        with session_scope(db) as session:
            document = session.get(Document, document_id)
            if document is None or document.status in DOCUMENT_FINAL:
                return 0
            pending = _pending(session, document_id)

    def load() -> bytes:
        return converted if converted is not None else store.get(document.source_key)

    queued = 0
    chunk: list[tuple[int, str, str]] = []  # (index, key, engine)

    def flush(*, last: bool = False) -> None:
        nonlocal queued
        if not chunk and not last:
            return
        with session_scope(db) as session:
            # still open (a cancel or delete meanwhile leaves its pages alone)
            if not mark_split_chunk(session, document_id, last=last):
                chunk.clear()
                return
            moved = queue_split_pages(session, document_id, chunk)
            # a few messages of several pages each (see `chunk_jobs`), sent when this transaction commits
            for job in chunk_jobs(document, moved, settings, group=pages_per_request(settings)):
                enqueue(job)
            queued += len(moved)
        chunk.clear()

    try:
        for index, (media_type, key, page_file, page_bytes) in enumerate(_page_files(document, load, settings)):
            if index not in pending:
                continue
            if page_file is not None:
                store.put(key, page_file, content_type=media_type)
            # balanced mode: the page's own content decides between the cpu engine and vLLM
            engine, why = route_page(document.mode, document.engine, media_type, page_bytes)
            if why:
                log.debug("page.routed", document_id=document_id, index=index, engine=engine, reasons=why)
            chunk.append((index, key, engine))
            if len(chunk) >= CHUNK:
                flush()
        flush(last=True)
    except PagemillError as exc:
        # Validated at upload, so this is rare (a page pdfium cannot copy): the document fails with the reason.
        log.warning("document.split_failed", document_id=document_id, code=exc.code, error=str(exc))
        with session_scope(db) as session:
            finalize_document(session, document_id, DocumentStatus.FAILED, error_code=exc.code,
                              error_message=str(exc))
        return queued
    log.info("document.split", document_id=document_id, pages=queued)
    return queued


def _pending(session: Session, document_id: str) -> set[int]:
    return set(session.execute(
        sa.select(Page.index).where(Page.document_id == document_id, Page.status == PageStatus.PENDING)).scalars())
