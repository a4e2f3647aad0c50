"""`/v1/documents`: upload, status (with long-poll), events (SSE), result, one page, delete, list.

Every route needs a tenant's API key; another tenant's document answers 404, exactly like a missing one.
"""

from __future__ import annotations

import asyncio
import json
import time
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Header, Query, Request, Response, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, StreamingResponse

from services.core.db.models import DOCUMENT_FINAL, Document, Page
from services.core.db.session import session_scope
from services.core.errors import FileTooLarge, NotFound, ResultExpired, ResultNotReady
from services.core.events import ready_formats
from services.core.logging import get_logger
from services.core.metrics import DOCUMENTS_TOTAL, UPLOADS_REJECTED
from services.core.queues import JobBatch, get_celery
from services.core.settings import OutputFormat
from services.core.storage import RESULT_MEDIA_TYPES, ObjectNotFound, document_result_key
from services.core.tenants import effective_limits
from services.gateway.deps import CurrentTenant, RateLimiterDep, SessionDep, SettingsDep, StoreDep, public_link
from services.gateway.documents import intake, service, sse
from services.gateway.documents.schemas import (
    DocumentCreated,
    DocumentDeleted,
    DocumentList,
    DocumentRead,
    ErrorBody,
    ErrorResponse,
    PageRead,
)

router = APIRouter(prefix="/v1/documents", tags=["documents"])
log = get_logger(__name__)

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (401, 404, 409, 410, 413, 415, 422, 429)
}
MAX_WAIT_S = 60.0
CHUNK = 1024 * 1024


def to_read(document: Document) -> DocumentRead:
    error = ErrorBody(code=document.error_code, message=document.error_message or "") if document.error_code else None
    return DocumentRead(
        id=document.id, status=document.status, filename=document.filename, media_type=document.media_type,
        mode=document.mode, pages_total=document.pages_total, pages_done=document.pages_done,
        pages_failed=document.pages_failed, metadata=document.metadata_, created_at=document.created_at,
        started_at=document.started_at, finished_at=document.finished_at, error=error,
        cached=bool(document.options.get("cached_from")), expired_at=document.expired_at,
        formats=ready_formats(document),
    )


async def read_limited(upload: UploadFile, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await upload.read(CHUNK):
        size += len(chunk)
        if size > limit:
            raise FileTooLarge(f"the file is larger than the {limit} byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


@router.post("", status_code=202, response_model=DocumentCreated, responses=ERRORS)
async def create_document(
    request: Request,
    response: Response,
    settings: SettingsDep,
    store: StoreDep,
    tenant: CurrentTenant,
    limiter: RateLimiterDep,
    file: Annotated[UploadFile, File(description="PDF, PNG, JPEG, TIFF or WebP")],
    pages: Annotated[str | None, Form(description="1-based pages to parse, e.g. '1-3,7'")] = None,
    metadata: Annotated[str | None, Form(description="a JSON object, returned untouched")] = None,
    mode: Annotated[str | None, Form(description="fast, balanced or accurate")] = None,
    cache: Annotated[bool, Form(description="false: do not answer from the result cache")] = True,
    do_not_cache: Annotated[bool, Form(description="true: never answer later uploads with this one")] = False,
    webhook_url: Annotated[str | None, Form(description="receives this document's events, signed")] = None,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> DocumentCreated:
    limits = effective_limits(tenant, settings)
    try:
        key = intake.validate_idempotency_key(idempotency_key)
        await run_in_threadpool(limiter.check, tenant.id, limits.requests_per_minute)
        data = await read_limited(file, limits.max_file_bytes)
        upload = service.Upload(data=data, filename=file.filename or "", pages=pages, metadata=metadata, mode=mode)
        options = intake.SubmitOptions(cache=cache, do_not_cache=do_not_cache, webhook_url=webhook_url or None,
                                       idempotency_key=key)
        jobs = JobBatch()

        submitted = await run_in_threadpool(
            lambda: intake.submit(settings.resolved_database_url(), store, settings, tenant, limits, upload, options,
                                  request_id=request.state.request_id, jobs=jobs))
    except Exception as exc:
        UPLOADS_REJECTED.labels(code=getattr(exc, "code", "internal_error")).inc()
        raise
    # After the commit: a job that ran before its rows existed would find nothing.
    await run_in_threadpool(jobs.send, get_celery(settings))
    document = submitted.document
    if submitted.replayed:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"
    elif not submitted.cache_hit:
        DOCUMENTS_TOTAL.labels(status="queued", mode=document.mode).inc()
        log.info("document.accepted", document_id=document.id, pages=document.pages_total, mode=document.mode,
                 media_type=document.media_type, bytes=document.size_bytes)
    return DocumentCreated(id=document.id, status=document.status, pages_total=document.pages_total,
                           status_url=public_link(request, settings, "get_document", document_id=document.id),
                           cached=submitted.cache_hit or bool(document.options.get("cached_from")),
                           webhook_id=document.options.get("webhook_id"))


@router.get("", response_model=DocumentList)
def list_documents(
    session: SessionDep,
    tenant: CurrentTenant,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    cursor: str | None = None,
    status: str | None = None,
) -> DocumentList:
    rows, next_cursor = service.list_documents(session, tenant_id=tenant.id, limit=limit, cursor=cursor,
                                               status=status)
    return DocumentList(data=[to_read(d) for d in rows], next_cursor=next_cursor)


@router.get("/{document_id}", response_model=DocumentRead, responses=ERRORS)
async def get_document(
    document_id: str, settings: SettingsDep, tenant: CurrentTenant,
    wait: Annotated[float, Query(ge=0, description=f"long-poll up to this many seconds (max {MAX_WAIT_S:.0f})")] = 0,
) -> DocumentRead:
    def load() -> Document:
        with session_scope(settings.resolved_database_url()) as session:
            return service.get_document(session, document_id, tenant.id)

    document = await run_in_threadpool(load)
    if wait > 0 and document.status not in DOCUMENT_FINAL:
        seen = (document.status, document.pages_done, document.pages_failed)
        deadline = time.monotonic() + min(wait, MAX_WAIT_S)
        while time.monotonic() < deadline:
            await asyncio.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
            document = await run_in_threadpool(load)
            if (document.status, document.pages_done, document.pages_failed) != seen:
                break
    return to_read(document)


@router.get("/{document_id}/events", responses={**ERRORS, 200: {"content": {"text/event-stream": {}}}})
async def document_events(
    document_id: str, request: Request, settings: SettingsDep, tenant: CurrentTenant,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    """Server-sent events: the document's events so far, `document.progress` as pages end, then the final
    event, after which the stream closes. Reconnect with `Last-Event-ID` to resume."""
    db = settings.resolved_database_url()
    await run_in_threadpool(lambda: _load_visible(db, document_id, tenant.id))  # 404 before the stream opens
    return StreamingResponse(sse.stream(request, db, document_id, tenant.id, last_event_id),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _load_visible(db: str, document_id: str, tenant_id: str) -> Document:
    with session_scope(db) as session:
        return service.get_document(session, document_id, tenant_id)


@router.get("/{document_id}/result", responses={
    **ERRORS, 200: {"content": {media.split(";")[0]: {} for media in RESULT_MEDIA_TYPES.values()}},
    307: {"description": "redirect=true with the S3 store"}})
def get_result(
    document_id: str, session: SessionDep, store: StoreDep, settings: SettingsDep, tenant: CurrentTenant,
    format: Annotated[OutputFormat, Query(description="markdown, html (standalone, KaTeX inlined), latex "
                                                      "(XeLaTeX), json (pages and elements), chunks (for retrieval)")
                      ] = OutputFormat.MARKDOWN,
    redirect: Annotated[bool, Query(description="307 to a presigned object-store URL (S3 store only)")] = False,
) -> Response:
    document = service.get_document(session, document_id, tenant.id)
    if document.status not in DOCUMENT_FINAL or document.status == "cancelled":
        raise ResultNotReady(f"the document is {document.status}; the result exists once it has finished")
    if document.expired_at is not None:
        raise ResultExpired("the document's results were deleted when its retention period ended")
    if format.value not in (ready := ready_formats(document)):
        raise NotFound(f"the document has no {format.value} result; it has: {', '.join(ready)}")
    key = document_result_key(document.id, format.value)
    if redirect:
        url = store.presigned_url(key, settings.storage.presign_expiry_s)
        if url:
            return RedirectResponse(url, status_code=307)
    try:
        body = store.get(key)
    except ObjectNotFound as exc:
        raise ResultNotReady("the result is not stored (yet); try again shortly") from exc
    return Response(body, media_type=RESULT_MEDIA_TYPES[format.value])  # as stored: the same bytes as S3 serves


class PageFormat(StrEnum):
    JSON = "json"
    MARKDOWN = "markdown"


@router.get("/{document_id}/pages/{n}", response_model=PageRead,
            responses={**ERRORS, 200: {"content": {"application/json": {}, "text/markdown": {}}}})
def get_page(document_id: str, n: int, session: SessionDep, store: StoreDep, tenant: CurrentTenant,
             format: Annotated[PageFormat, Query(description="json: the page entry; markdown: its Markdown "
                                                             "(HTML, LaTeX and chunks are per document)")
                               ] = PageFormat.JSON) -> PageRead | Response:
    document = service.get_document(session, document_id, tenant.id)
    page = service.get_page(session, document, n)
    read = page_read(page, store)
    if format is PageFormat.MARKDOWN:
        if read.markdown is None:
            raise ResultNotReady(f"page {n} is {page.status}; its Markdown exists once it has succeeded")
        return Response(read.markdown, media_type=RESULT_MEDIA_TYPES["markdown"])
    return read


def page_read(page: Page, store: Any) -> PageRead:
    markdown = None
    fallback_reason = None
    if page.result_key:
        try:
            result = json.loads(store.get(page.result_key))
            markdown, fallback_reason = result.get("markdown", ""), result.get("fallback_reason") or None
        except ObjectNotFound:
            markdown = None
    error = ErrorBody(code=page.error_code, message=page.error_message or "") if page.error_code else None
    details = dict(page.details)
    return PageRead(
        document_id=page.document_id, index=page.index + 1, page_number=page.page_number, status=page.status,
        markdown=markdown, engine=page.engine, model=page.model, attempts=page.attempts,
        latency_ms=page.latency_ms, is_fallback=page.is_fallback, fallback_reason=fallback_reason,
        confidence=page.confidence, details=details, error=error,
    )


@router.delete("/{document_id}", response_model=DocumentDeleted, responses=ERRORS)
def delete_document(document_id: str, session: SessionDep, store: StoreDep,
                    tenant: CurrentTenant) -> DocumentDeleted:
    document = service.get_document(session, document_id, tenant.id)
    status = service.delete_document(session, store, document)
    return DocumentDeleted(id=document.id, status=status, deleted=True)
