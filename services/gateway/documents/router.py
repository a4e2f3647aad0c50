"""`/v1/documents`: upload, status (with long-poll), result, one page, delete, list."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse

from services.core.db.models import DOCUMENT_FINAL, Document, Page
from services.core.db.session import session_scope
from services.core.errors import FileTooLarge, ResultNotReady
from services.core.logging import get_logger
from services.core.metrics import DOCUMENTS_TOTAL, UPLOADS_REJECTED
from services.core.queues import JobBatch, get_celery
from services.core.storage import ObjectNotFound, document_result_key
from services.gateway.deps import SessionDep, SettingsDep, StoreDep
from services.gateway.documents import service
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
    code: {"model": ErrorResponse} for code in (404, 409, 413, 415, 422)
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
    settings: SettingsDep,
    store: StoreDep,
    file: Annotated[UploadFile, File(description="PDF, PNG, JPEG, TIFF or WebP")],
    pages: Annotated[str | None, Form(description="1-based pages to parse, e.g. '1-3,7'")] = None,
    metadata: Annotated[str | None, Form(description="a JSON object, returned untouched")] = None,
    mode: Annotated[str | None, Form(description="fast, balanced or accurate")] = None,
) -> DocumentCreated:
    try:
        data = await read_limited(file, settings.limits.max_file_bytes)
        upload = service.Upload(data=data, filename=file.filename or "", pages=pages, metadata=metadata, mode=mode)
        jobs = JobBatch()

        def accept() -> Document:
            with session_scope(settings.resolved_database_url()) as session:
                return service.create_document(session, store, settings, upload, tenant_id=None,
                                               request_id=request.state.request_id, jobs=jobs)

        document = await run_in_threadpool(accept)
    except Exception as exc:
        UPLOADS_REJECTED.labels(code=getattr(exc, "code", "internal_error")).inc()
        raise
    # After the commit: a job that ran before its rows existed would find nothing.
    await run_in_threadpool(jobs.send, get_celery(settings))
    DOCUMENTS_TOTAL.labels(status="queued", mode=document.mode).inc()
    log.info("document.accepted", document_id=document.id, pages=document.pages_total, mode=document.mode,
             media_type=document.media_type, bytes=document.size_bytes)
    return DocumentCreated(id=document.id, status=document.status, pages_total=document.pages_total,
                           status_url=str(request.url_for("get_document", document_id=document.id)))


@router.get("", response_model=DocumentList)
def list_documents(
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    cursor: str | None = None,
    status: str | None = None,
) -> DocumentList:
    rows, next_cursor = service.list_documents(session, tenant_id=None, limit=limit, cursor=cursor, status=status)
    return DocumentList(data=[to_read(d) for d in rows], next_cursor=next_cursor)


@router.get("/{document_id}", response_model=DocumentRead, responses=ERRORS)
async def get_document(
    document_id: str, settings: SettingsDep,
    wait: Annotated[float, Query(ge=0, description=f"long-poll up to this many seconds (max {MAX_WAIT_S:.0f})")] = 0,
) -> DocumentRead:
    def load() -> Document:
        with session_scope(settings.resolved_database_url()) as session:
            return service.get_document(session, document_id)

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


@router.get("/{document_id}/result", responses={**ERRORS, 200: {"content": {"text/markdown": {}}}})
def get_result(
    document_id: str, session: SessionDep, store: StoreDep,
    format: Annotated[str, Query(pattern="^(markdown|json)$")] = "markdown",
) -> Response:
    document = service.get_document(session, document_id)
    if document.status not in DOCUMENT_FINAL or document.status == "cancelled":
        raise ResultNotReady(f"the document is {document.status}; the result exists once it has finished")
    try:
        body = store.get(document_result_key(document.id, format))
    except ObjectNotFound as exc:
        raise ResultNotReady("the result is not stored (yet); try again shortly") from exc
    if format == "json":
        return JSONResponse(json.loads(body))
    return PlainTextResponse(body.decode(), media_type="text/markdown; charset=utf-8")


@router.get("/{document_id}/pages/{n}", response_model=PageRead, responses=ERRORS)
def get_page(document_id: str, n: int, session: SessionDep, store: StoreDep) -> PageRead:
    document = service.get_document(session, document_id)
    page = service.get_page(session, document, n)
    return page_read(page, store)


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
def delete_document(document_id: str, session: SessionDep, store: StoreDep) -> DocumentDeleted:
    document = service.get_document(session, document_id)
    status = service.delete_document(session, store, document)
    return DocumentDeleted(id=document.id, status=status, deleted=True)
