"""Assembling a finished document: page results in, every output format out (render/), final status set."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from services.core.attachments import with_statuses
from services.core.db.models import DOCUMENT_FINAL, Document, DocumentStatus, Page, PageStatus
from services.core.db.session import session_scope
from services.core.document_tasks import task_of
from services.core.errors import DETAIL_CHARS, clip
from services.core.formats import OFFICE_TYPES
from services.core.lifecycle import fail_missing_pages, final_status, finalize_document
from services.core.lifecycle.marks import mark_result_missing
from services.core.logging import get_logger
from services.core.metrics import DOCUMENTS_TOTAL
from services.core.pages import DocumentResult, PageEntry, page_entry
from services.core.settings import Settings
from services.core.storage import (
    RESULT_MEDIA_TYPES,
    ObjectNotFound,
    ObjectStore,
    document_prefix,
    document_result_key,
    load_page_result,
)
from services.results.checkboxes import mark_checkboxes
from services.results.document_task import TaskFailed, run_document_task
from services.results.figures import KeptFigures, figures_wanted, keep_figures
from services.results.forms import document_form_fields
from services.results.furniture import keep_furniture, mark_running_furniture
from services.results.key_values import layout_fields
from services.results.marks import document_boxes
from services.results.render.formats import render_document
from services.results.render.markdown import render_charts, render_sheets, render_slides
from services.results.tables import merge_tables

log = get_logger(__name__)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def _conversion(document: Document, store: ObjectStore) -> dict[str, Any] | None:
    """What an office document's conversion found: warnings, the sheets' cells, charts, attachments."""
    if document.media_type not in OFFICE_TYPES:
        return None
    try:
        found: dict[str, Any] = json.loads(store.get(f"{document_prefix(document.id)}conversion.json"))
    except ObjectNotFound:
        return None
    return found


def _native_markdown(conversion: dict[str, Any], entries: list[PageEntry]) -> str:
    """A spreadsheet's sheets or a presentation's slides as read from the document itself; "" for the others."""
    if conversion.get("sheets"):
        return render_sheets(conversion["sheets"])
    if conversion.get("slides"):
        return render_slides(conversion["slides"], entries)
    return ""


def _task_answer(document: Document, entries: list[PageEntry], settings: Settings, store: ObjectStore,
                 fields: list[dict[str, Any]]) -> tuple[dict[str, bytes], TaskFailed | None]:
    """The model task's answer, or the reason it has none (an unreachable server raises: assembly retries)."""
    task = task_of(document.task, document.task_params)
    try:
        return run_document_task(task, document.id, entries, settings, store, fields), None
    except TaskFailed as exc:
        log.warning("document.task_failed", document_id=document.id, task=task.kind.value, error=clip(str(exc)))
        return {}, exc


def assemble_document(document_id: str, settings: Settings, store: ObjectStore) -> str | None:
    """Writes the document's results and sets its final status. Returns that status, or None if not due."""
    db = settings.resolved_database_url()
    # The reads in one statement, outside a transaction (the rows are only read; the final UPDATE below is
    # conditional on the document still being open): one round trip, no BEGIN and COMMIT.
    with session_scope(db, autocommit=True) as session:
        rows = session.execute(
            sa.select(Document, Page).outerjoin(Page, Page.document_id == Document.id)
            .where(Document.id == document_id).order_by(Page.index)).all()
        document = rows[0][0] if rows else None
        if document is None or document.status in DOCUMENT_FINAL:
            return None
        pages = [page for _, page in rows if page is not None]
        # An e-mail ends on its own body: its attachments are listed with the status they have now.
        attachments = with_statuses(session, [document]).get(document_id, [])
    if any(p.status not in (PageStatus.SUCCEEDED, PageStatus.FAILED, PageStatus.CANCELLED) for p in pages):
        log.warning("document.assemble_early", document_id=document_id)
        return None
    entries = []
    missing: list[int] = []
    read: dict[str, dict[str, Any]] = {}  # by key: the pages a chunk ended together share one object
    for page in pages:
        result = None
        if page.status == PageStatus.SUCCEEDED and page.result_key:
            try:
                result = load_page_result(store, page.result_key, page.index, read)
            except ObjectNotFound:
                # The page row says done but its result is gone: say so rather than hand back a silent hole.
                mark_result_missing(page)
                missing.append(page.index)
        entries.append(page_entry(page, result, settings.quality.needs_review_below))
    # Running heads and feet repeat across pages: only here, where the pages meet, can that be seen.
    mark_running_furniture(entries)
    if settings.outputs.merge_tables and (document.options or {}).get("merge_tables", True) is not False:
        merge_tables(entries)  # after the furniture is known: a running foot must not hide a table's end
    figures = keep_figures(document, pages, entries, settings, store) if figures_wanted(document, settings) \
        else KeptFigures()
    form_fields = document_form_fields(document, entries, store)
    mark_checkboxes(entries)  # boxes printed as ☐ ☒ glyphs
    document_boxes(document, pages, entries, settings, store)  # boxes drawn as squares, boxes on a scan
    form_fields += layout_fields(entries)
    kept_furniture = (document.options or {}).get("furniture") == "keep"
    if kept_furniture:
        keep_furniture(entries)
    done = sum(1 for e in entries if e["status"] == "succeeded")
    failed = len(entries) - done
    status = final_status(done, failed, settings.worker.on_page_failure)
    answer, task_error = _task_answer(document, entries, settings, store, form_fields) if done else ({}, None)
    if task_error is not None:  # the parse formats stay readable; what was asked for on top of them is not there
        status = DocumentStatus.FAILED
    body = DocumentResult.model_validate({
        "id": document.id, "status": status.value, "filename": document.filename,
        "pages_total": document.pages_total, "pages_done": done, "pages_failed": failed,
        "mode": document.mode, "metadata": document.metadata_, "created_at": _iso(document.created_at),
        "pages": entries, "conversion": _conversion(document, store), "parent_id": document.parent_id,
        "attachments": attachments, "figures": figures.assets, "fields": form_fields,
        "pages_needing_review": sum(1 for e in entries if e.get("needs_review")),
    }).model_dump(mode="json")
    rendered = render_document(entries, body, settings, extra=answer, figures=figures.images,
                               keep_furniture=kept_furniture)
    rendered.seconds["figures"] = figures.seconds
    conversion: dict[str, Any] = body.get("conversion") or {}
    if conversion.get("sheets") or conversion.get("slides") or conversion.get("charts"):
        # the text read from the document itself, when it was; the charts' data after it
        markdown = _native_markdown(conversion, entries) or rendered.bodies["markdown"].decode()
        if conversion.get("charts"):
            markdown += "\n" + render_charts(conversion["charts"])
        rendered.bodies["markdown"] = markdown.encode()
    for fmt, data in rendered.bodies.items():
        store.put(document_result_key(document_id, fmt), data, content_type=RESULT_MEDIA_TYPES[fmt])
    log.info("document.rendered", document_id=document_id, pages=len(entries),
             ms={fmt: round(seconds * 1000, 1) for fmt, seconds in rendered.seconds.items()})
    error = None if failed == 0 else (f"{failed} of {len(entries)} pages failed")
    error_code = "pages_failed" if failed else None
    if task_error is not None:
        error_code, error = task_error.code, clip(str(task_error), DETAIL_CHARS)
    with session_scope(db) as session:
        if missing:
            fail_missing_pages(session, document_id, missing, pages_done=done, pages_failed=failed)
        # The formats ride on the document, so its status and final event list what can be fetched.
        changed = finalize_document(session, document_id, status, error_code=error_code, error_message=error,
                                    options={**(document.options or {}), "formats": rendered.formats})
    if changed:
        DOCUMENTS_TOTAL.labels(status=status.value, mode=document.mode).inc()
        log.info("document.finished", document_id=document_id, status=status.value, pages=len(entries),
                 failed=failed)
    return status.value if changed else None
