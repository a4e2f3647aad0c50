"""The conversion stage of the split job: an office document becomes a stored PDF and page rows, once.

Accepted at upload without pages (they are known only after the conversion), the document is converted here,
its page selection and the page limit are applied to the converted PDF, and its page rows are written by
one conditional UPDATE, so a split that runs twice (a redelivery, the reconciler) converts at most twice and
writes the rows once. What the converter refuses ends the document with the reason's code.

The tenant's pages in flight, checked at upload for a PDF, are checked here, when the pages are known: pages
that do not fit wait, converted but unclaimed (the document stays `queued`), and the split is sent again after
the tenant's own pace would have made room (at most `HOLD_MAX_S`); more pages than the limit itself fail
`too_many_pages`. An e-mail's PDF and image attachments count with its own pages (their rows come with them).

A document read natively (services/worker/office/native.py) has no PDF: its one page's result is stored here,
and the split ends that page instead of queueing it (services/worker/office/native_page.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Document, DocumentStatus, Page, PageStatus, Tenant, utcnow
from services.core.db.session import session_scope
from services.core.errors import InputError, TooManyPages
from services.core.lifecycle import claim_page_numbers, finalize_document
from services.core.lifecycle.marks import mark_split_sent
from services.core.logging import get_logger
from services.core.pdf import inspect_document
from services.core.queues import enqueue, split_job
from services.core.selection import parse_page_selection
from services.core.settings import Settings
from services.core.storage import ObjectNotFound, ObjectStore, document_prefix
from services.core.tenants import TenantLimits, effective_limits, lock_tenant, pages_finished_recently, pages_in_flight
from services.worker.office import convert_document
from services.worker.office.attachments import Parent, family_page_budget, insert_children, plan_children
from services.worker.office.native_page import store_native_page

log = get_logger(__name__)

# What the e-mail's options list of each attachment (the rest of the plan serves the child's creation).
_LISTED = ("index", "filename", "media_type", "size_bytes", "id", "status", "error")


# The longest a document waiting for room in its tenant's pages in flight waits before it looks again.
HOLD_MAX_S = 30.0


class NoRoom(Exception):
    """The converted document's pages do not fit in its tenant's pages in flight yet: it waits, unclaimed."""

    def __init__(self, pages: int, in_flight: int, limit: int, wait_s: float) -> None:
        super().__init__(f"{in_flight} pages are in flight and this document has {pages}; the limit is {limit}")
        self.pages, self.in_flight, self.limit, self.wait_s = pages, in_flight, limit, wait_s


@dataclass(frozen=True, slots=True)
class Prepared:
    """A converted document whose page rows are written: its PDF, or None when it was read natively (its one
    page's result is stored, and `native_ms` is what the reading took)."""

    pdf: bytes | None
    native_ms: int = 0


def converted_key(document_id: str) -> str:
    return f"{document_prefix(document_id)}converted.pdf"


def conversion_key(document_id: str) -> str:
    """What the conversion found beside the pages: warnings, native sheets and slides, charts, attachments."""
    return f"{document_prefix(document_id)}conversion.json"


def prepare_office_document(document_id: str, settings: Settings, store: ObjectStore) -> Prepared | None:
    """The converted document with its page rows written; None when the document ended instead.

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
            conversion = json.loads(store.get(conversion_key(document_id)))
            attachments = conversion.get("attachments") or []
            native_ms = conversion.get("native_ms")
            pdf = None if native_ms is not None else store.get(converted_key(document_id))
        except ObjectNotFound:
            started = time.perf_counter()
            converted = convert_document(store.get(source_key), media_type, settings)
            native_ms = round((time.perf_counter() - started) * 1000) if converted.elements is not None else None
            pdf = converted.pdf if native_ms is None else None
            page_count = _page_count(pdf, pages_spec)
            # An e-mail over the limit itself fails below: none of its attachments is stored for it.
            wanted = converted.attachments if page_count <= limits.max_pages else []
            attachments = plan_children(Parent(document_id, page_count, parent_id is not None), wanted, limits,
                                        store) if wanted else []
            if converted.elements is not None:  # its page's result before the marker that says it is converted
                store_native_page(store, document_id, converted.elements, native_ms or 0)
            store.put(conversion_key(document_id), json.dumps({
                "warnings": converted.warnings, "sheets": [sheet.as_json() for sheet in converted.sheets],
                "charts": [chart.as_json() for chart in converted.charts],
                "slides": [slide.as_json() for slide in converted.slides],
                "attachments": attachments, **({"native_ms": native_ms} if native_ms is not None else {}),
            }, ensure_ascii=False).encode(), content_type="application/json")
            if pdf is not None:
                store.put(converted_key(document_id), pdf, content_type="application/pdf")
        page_numbers = parse_page_selection(pages_spec, inspect_document(pdf).page_count if pdf is not None else 1)
        with session_scope(db) as session:
            _claim(session, document_id, parent_id, page_numbers, limits, attachments, settings)
    except NoRoom as held:
        _hold(db, document_id, held)
        return None
    except InputError as exc:
        log.warning("document.conversion_refused", document_id=document_id, code=exc.code, error=str(exc))
        with session_scope(db) as session:
            finalize_document(session, document_id, DocumentStatus.FAILED, error_code=exc.code,
                              error_message=str(exc))
        return None
    log.info("document.converted", document_id=document_id, media_type=media_type, pages=len(page_numbers),
             native=native_ms is not None)
    return Prepared(pdf, native_ms or 0)


def _page_count(pdf: bytes | None, pages_spec: str | None) -> int:
    """The pages the document will have: its PDF's selected pages, or one for a document read natively."""
    return len(parse_page_selection(pages_spec, inspect_document(pdf).page_count if pdf is not None else 1))


def _claim(session: Session, document_id: str, parent_id: str | None, page_numbers: list[int],
           limits: TenantLimits, attachments: list[dict[str, Any]], settings: Settings) -> None:
    """Writes the page rows (and an e-mail's children) once; raises `TooManyPages` over the page limit, which an
    e-mail's attachment shares with its e-mail and siblings (the e-mail's row is locked, so two siblings
    converted at once take the family's pages one after the other), and `NoRoom` while the pages do not fit in
    the tenant's pages in flight (checked under the tenant's lock, as an upload is)."""
    tenant_id = session.execute(sa.select(Document.tenant_id).where(Document.id == document_id)).scalar()
    if tenant_id is not None:
        lock_tenant(session, tenant_id)  # first, as an upload takes it: the same order, no deadlock
    if parent_id is not None:
        session.execute(sa.select(Document.id).where(Document.id == parent_id).with_for_update())
    document = session.get(Document, document_id)
    if document is None or document.pages_total or document.status != DocumentStatus.QUEUED:
        return  # claimed by an earlier run (whose siblings may have used the rest since), or ended
    limit = family_page_budget(session, document, limits.max_pages)
    if len(page_numbers) > limit:
        raise TooManyPages(f"the converted document has {len(page_numbers)} pages to parse; the limit is {limit}"
                           + (" (what its e-mail and the other attachments left)" if parent_id else ""))
    if tenant_id is not None:
        # a PDF or image attachment's pages are written with the e-mail's (an office one's at its own conversion)
        _check_room(session, tenant_id, limits, len(page_numbers) + sum(
            int(entry.get("pages") or 0) for entry in attachments if entry.get("id")))
    if not claim_page_numbers(session, document_id, page_numbers):
        return
    session.execute(sa.insert(Page), [
        {"document_id": document_id, "index": i, "page_number": number, "details": {},
         "status": PageStatus.PENDING, "engine": document.engine}
        for i, number in enumerate(page_numbers)])
    if attachments:  # written with the page rows, by the one run that claims them
        session.refresh(document)
        document.options = {**document.options, "attachments": [{k: a.get(k) for k in _LISTED} for a in attachments]}
        insert_children(session, document, attachments, settings)


def _check_room(session: Session, tenant_id: str, limits: TenantLimits, pages: int) -> None:
    """Raises `TooManyPages` when `pages` could never fit in the tenant's pages in flight, `NoRoom` while they
    do not fit now, with a wait from the tenant's own pace (as an upload's `Retry-After`)."""
    if pages > limits.pages_in_flight:
        raise TooManyPages(f"the converted document has {pages} pages to parse; this account may have at most "
                           f"{limits.pages_in_flight} pages in flight")
    in_flight = pages_in_flight(session, tenant_id)
    if in_flight + pages <= limits.pages_in_flight:
        return
    per_second = pages_finished_recently(session, tenant_id, 60) / 60
    excess = in_flight + pages - limits.pages_in_flight
    wait_s = excess / per_second if per_second > 0 else HOLD_MAX_S
    raise NoRoom(pages, in_flight, limits.pages_in_flight, min(max(wait_s, 1.0), HOLD_MAX_S))


def _hold(database_url: str, document_id: str, held: NoRoom) -> None:
    """The document stays queued with its conversion stored; its split is sent again after `held.wait_s`."""
    log.info("document.held_for_room", document_id=document_id, pages=held.pages, in_flight=held.in_flight,
             limit=held.limit, retry_in_s=round(held.wait_s, 1))
    with session_scope(database_url) as session:
        document = session.get(Document, document_id)
        if document is None or document.status != DocumentStatus.QUEUED:
            return
        mark_split_sent(document, utcnow())  # a split is on its way: the reconciler leaves the document alone
        job = split_job(document)
        job.countdown = held.wait_s
        enqueue(job)
