"""The conversion stage of the split job: an office document becomes a stored PDF and page rows, once.

Accepted at upload without pages (they are known only after the conversion), the document is converted here,
its page selection and the page limit are applied to the converted PDF, and its page rows are written by
one conditional UPDATE, so a split that runs twice (a redelivery, the reconciler) converts at most twice and
writes the rows once. What the converter refuses ends the document with the reason's code.
"""

from __future__ import annotations

import json

import sqlalchemy as sa

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
from services.worker.convert import convert_document

log = get_logger(__name__)


def converted_key(document_id: str) -> str:
    return f"{document_prefix(document_id)}converted.pdf"


def conversion_key(document_id: str) -> str:
    """What the conversion found beside the pages: warnings, native sheets, attachments."""
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
        limit = effective_limits(tenant, settings).max_pages
        source_key, media_type, pages_spec = document.source_key, document.media_type, document.options.get("pages")
    try:
        try:
            pdf = store.get(converted_key(document_id))
        except ObjectNotFound:
            converted = convert_document(store.get(source_key), media_type, settings)
            pdf = converted.pdf
            store.put(conversion_key(document_id), json.dumps({
                "warnings": converted.warnings, "sheets": [sheet.as_json() for sheet in converted.sheets],
                "charts": [chart.as_json() for chart in converted.charts],
                "attachments": [{"filename": a.filename, "content_type": a.content_type, "size_bytes": len(a.data)}
                                for a in converted.attachments],
            }, ensure_ascii=False).encode(), content_type="application/json")
            store.put(converted_key(document_id), pdf, content_type="application/pdf")
        page_numbers = parse_page_selection(pages_spec, inspect_document(pdf).page_count)
        if len(page_numbers) > limit:
            raise TooManyPages(f"the converted document has {len(page_numbers)} pages to parse; the limit is {limit}")
    except InputError as exc:
        log.warning("document.conversion_refused", document_id=document_id, code=exc.code, error=str(exc))
        with session_scope(db) as session:
            finalize_document(session, document_id, DocumentStatus.FAILED, error_code=exc.code,
                              error_message=str(exc))
        return None
    with session_scope(db) as session:
        claimed = rowcount(session.execute(
            sa.update(Document).where(Document.id == document_id, Document.pages_total == 0,
                                      Document.status == DocumentStatus.QUEUED)
            .values(pages_total=len(page_numbers), page_numbers=page_numbers, updated_at=utcnow())))
        if claimed:
            session.execute(sa.insert(Page), [
                {"document_id": document_id, "index": i, "page_number": number, "details": {},
                 "status": PageStatus.PENDING, "engine": document.engine}
                for i, number in enumerate(page_numbers)])
    log.info("document.converted", document_id=document_id, media_type=media_type, pages=len(page_numbers))
    return pdf
