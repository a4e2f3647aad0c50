"""The conversion stage of the split job: an office document becomes a stored PDF and page rows, once.

Accepted at upload without pages (they are known only after the conversion), the document is converted here,
its page selection and the page limit are applied to the converted PDF, and its page rows are written by
one conditional UPDATE, so a split that runs twice (a redelivery, the reconciler) converts at most twice and
writes the rows once. What the converter refuses ends the document with the reason's code.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Document, DocumentStatus, Page, PageStatus, Tenant, utcnow
from services.core.db.session import rowcount, session_scope
from services.core.errors import InputError, TooManyPages
from services.core.lifecycle import finalize_document
from services.core.logging import get_logger
from services.core.pdf import inspect_document
from services.core.selection import parse_page_selection
from services.core.settings import Settings
from services.core.storage import ObjectNotFound, ObjectStore, document_prefix
from services.core.tenants import effective_limits
from services.worker.attachments import Parent, family_page_budget, insert_children, plan_children
from services.worker.convert import convert_document

log = get_logger(__name__)

# What the e-mail's options list of each attachment (the rest of the plan serves the child's creation).
_LISTED = ("index", "filename", "media_type", "size_bytes", "id", "status", "error")


def converted_key(document_id: str) -> str:
    return f"{document_prefix(document_id)}converted.pdf"


def conversion_key(document_id: str) -> str:
    """What the conversion found beside the pages: warnings, native sheets and slides, charts, attachments."""
    return f"{document_prefix(document_id)}conversion.json"


def prepare_office_document(document_id: str, settings: Settings, store: ObjectStore) -> bytes | None:
    """The converted PDF with the document's page rows written; None when the document ended instead.

    Raises `ConverterBusy` (retryable) when every conversion slot of the host is taken."""
    db = settings.resolved_database_url()
    with session_scope(db) as session:
        document = session.get(Document, document_id)
        if document is None:
            return None
        tenant = session.get(Tenant, document.tenant_id) if document.tenant_id else None
        limits = effective_limits(tenant, settings)
        limits = replace(limits, max_file_bytes=min(limits.max_file_bytes, settings.limits.max_file_bytes))
        source_key, media_type, pages_spec = document.source_key, document.media_type, document.options.get("pages")
        parent_id = document.parent_id
    try:
        try:
            pdf = store.get(converted_key(document_id))
            attachments = json.loads(store.get(conversion_key(document_id))).get("attachments") or []
        except ObjectNotFound:
            converted = convert_document(store.get(source_key), media_type, settings)
            pdf = converted.pdf
            page_count = len(parse_page_selection(pages_spec, inspect_document(pdf).page_count))
            # An e-mail over the limit itself fails below: none of its attachments is stored for it.
            wanted = converted.attachments if page_count <= limits.max_pages else []
            attachments = plan_children(Parent(document_id, page_count, parent_id is not None), wanted, limits,
                                        store) if wanted else []
            store.put(conversion_key(document_id), json.dumps({
                "warnings": converted.warnings, "sheets": [sheet.as_json() for sheet in converted.sheets],
                "charts": [chart.as_json() for chart in converted.charts],
                "slides": [slide.as_json() for slide in converted.slides],
                "attachments": attachments,
            }, ensure_ascii=False).encode(), content_type="application/json")
            store.put(converted_key(document_id), pdf, content_type="application/pdf")
        page_numbers = parse_page_selection(pages_spec, inspect_document(pdf).page_count)
        with session_scope(db) as session:
            _claim(session, document_id, parent_id, page_numbers, limits.max_pages, attachments, settings)
    except InputError as exc:
        log.warning("document.conversion_refused", document_id=document_id, code=exc.code, error=str(exc))
        with session_scope(db) as session:
            finalize_document(session, document_id, DocumentStatus.FAILED, error_code=exc.code,
                              error_message=str(exc))
        return None
    log.info("document.converted", document_id=document_id, media_type=media_type, pages=len(page_numbers))
    return pdf


def _claim(session: Session, document_id: str, parent_id: str | None, page_numbers: list[int], max_pages: int,
           attachments: list[dict[str, Any]], settings: Settings) -> None:
    """Writes the page rows (and an e-mail's children) once; raises `TooManyPages` over the page limit, which an
    e-mail's attachment shares with its e-mail and siblings (the e-mail's row is locked, so two siblings
    converted at once take the family's pages one after the other)."""
    if parent_id is not None:
        session.execute(sa.select(Document.id).where(Document.id == parent_id).with_for_update())
    document = session.get(Document, document_id)
    if document is None or document.pages_total or document.status != DocumentStatus.QUEUED:
        return  # claimed by an earlier run (whose siblings may have used the rest since), or ended
    limit = family_page_budget(session, document, max_pages)
    if len(page_numbers) > limit:
        raise TooManyPages(f"the converted document has {len(page_numbers)} pages to parse; the limit is {limit}"
                           + (" (what its e-mail and the other attachments left)" if parent_id else ""))
    claimed = rowcount(session.execute(
        sa.update(Document).where(Document.id == document_id, Document.pages_total == 0,
                                  Document.status == DocumentStatus.QUEUED)
        .values(pages_total=len(page_numbers), page_numbers=page_numbers, updated_at=utcnow())))
    if not claimed:
        return
    session.execute(sa.insert(Page), [
        {"document_id": document_id, "index": i, "page_number": number, "details": {},
         "status": PageStatus.PENDING, "engine": document.engine}
        for i, number in enumerate(page_numbers)])
    if attachments:  # written with the page rows, by the one run that claims them
        session.refresh(document)
        document.options = {**document.options, "attachments": [{k: a.get(k) for k in _LISTED} for a in attachments]}
        insert_children(session, document, attachments, settings)
