"""`/v1/documents`: upload, status (with long-poll), events (SSE), result, one page, delete, list.

Every route needs a tenant's API key; another tenant's document answers 404, exactly like a missing one.
"""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, StreamingResponse
from sqlalchemy.orm import Session

from services.core import pages
from services.core.attachments import with_statuses
from services.core.db.models import DOCUMENT_FINAL, DOCUMENT_ID_PATTERN, Document, DocumentStatus, Page
from services.core.db.session import session_scope
from services.core.errors import InputError, NotFound, ResultExpired, ResultNotReady, ValidationFailed
from services.core.events import ready_formats
from services.core.logging import get_logger
from services.core.metrics import DOCUMENTS_TOTAL, UPLOADS_REJECTED
from services.core.storage import (
    RESULT_HTML_CSP,
    RESULT_MEDIA_TYPES,
    ObjectNotFound,
    document_result_key,
    load_page_result,
)
from services.core.tenants import effective_limits
from services.gateway.deps import (
    CurrentTenant,
    FeedsDep,
    KeyWatchDep,
    RateLimiterDep,
    SessionDep,
    SettingsDep,
    StoreDep,
    public_link,
)
from services.gateway.documents import intake, receive, service, sse
from services.gateway.documents.schemas import (
    AttachmentRead,
    DocumentCreated,
    DocumentDeleted,
    DocumentList,
    DocumentRead,
    ErrorBody,
    ErrorResponse,
    PageNumber,
    PageRead,
)
from services.gateway.documents.upload_schema import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    UPLOAD_ERRORS,
    UPLOAD_FIELDS,
    UPLOAD_REQUEST_BODY,
)

router = APIRouter(prefix="/v1/documents", tags=["documents"])
log = get_logger(__name__)

# What the routes that read documents can answer (the upload has its own list, in upload_schema.py).
ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (401, 404, 409, 410, 422)}
MAX_WAIT_S = 60.0


def to_read(document: Document, attachments: list[dict[str, Any]] | None, needing_review: int,
            below: float) -> DocumentRead:
    """`attachments`: an e-mail's list with its children's statuses (`services.core.attachments.with_statuses`);
    `needing_review`: its pages under the review threshold (`service.pages_needing_review`)."""
    error = ErrorBody(code=document.error_code, message=document.error_message or "") if document.error_code else None
    return DocumentRead(
        id=document.id, status=document.status, filename=document.filename, media_type=document.media_type,
        mode=document.mode, pages_total=document.pages_total, pages_done=document.pages_done,
        pages_failed=document.pages_failed, metadata=document.metadata_, created_at=document.created_at,
        started_at=document.started_at, finished_at=document.finished_at, error=error,
        cached=bool(document.options.get("cached_from")), expired_at=document.expired_at,
        formats=ready_formats(document), task=document.task or "parse", parent_id=document.parent_id,
        attachments=[AttachmentRead.model_validate(a) for a in attachments or []],
        pages_needing_review=needing_review, needs_review_below=below,
    )


FORM_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
FORM_FALSE = frozenset({"0", "false", "f", "no", "n", "off"})


def form_bool(fields: dict[str, str], name: str, default: bool) -> bool:
    raw = fields.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value not in FORM_TRUE | FORM_FALSE:
        raise ValidationFailed(f"{name}: must be true or false")
    return value in FORM_TRUE


def form_choice(fields: dict[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = (fields.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw not in choices:
        raise ValidationFailed(f"{name}: must be one of {', '.join(choices)}")
    return raw


@router.post("", status_code=202, response_model=DocumentCreated, responses=UPLOAD_ERRORS,
             openapi_extra={"requestBody": UPLOAD_REQUEST_BODY})
async def create_document(
    request: Request,
    response: Response,
    settings: SettingsDep,
    store: StoreDep,
    tenant: CurrentTenant,
    limiter: RateLimiterDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", min_length=1,
                                                  max_length=MAX_IDEMPOTENCY_KEY_CHARS)] = None,
) -> DocumentCreated:
    """Multipart `file` plus optional fields (see the request body). The key, the rate limit and the size limit
    are checked before or while the body streams; the file is spooled to disk, never held in memory."""
    limits = effective_limits(tenant, settings)
    received = None
    try:
        try:  # checks made before the body is read
            key = intake.validate_idempotency_key(idempotency_key)
            await run_in_threadpool(limiter.check, tenant.id, limits.requests_per_minute)
        except InputError:
            await receive.drain_small_body(request, idle_timeout_s=settings.limits.upload_idle_timeout_s)
            raise
        received = await receive.receive_upload(
            request, max_file_bytes=min(limits.max_file_bytes, settings.limits.max_file_bytes),
            idle_timeout_s=settings.limits.upload_idle_timeout_s,
            min_bytes_per_s=settings.limits.upload_min_bytes_per_s, allowed_fields=UPLOAD_FIELDS)
        fields = received.fields
        upload = service.Upload(source=received.path, size=received.size, sha256=received.sha256,
                                filename=received.filename, pages=fields.get("pages"),
                                metadata=fields.get("metadata"), mode=fields.get("mode"), task=fields.get("task"),
                                target_language=fields.get("target_language"), schema=fields.get("schema"))
        options = intake.SubmitOptions(cache=form_bool(fields, "cache", True),
                                       do_not_cache=form_bool(fields, "do_not_cache", False),
                                       webhook_url=fields.get("webhook_url") or None, idempotency_key=key,
                                       figures=form_bool(fields, "figures", True),
                                       merge_tables=form_bool(fields, "merge_tables", True),
                                       furniture=form_choice(fields, "furniture", ("drop", "keep"), "drop"))
        spooled = received

        def submit() -> intake.Submitted:
            # The split job goes out after the commit (the request's outbox): before it, it would find no rows.
            try:
                return intake.submit(settings.resolved_database_url(), store, settings, tenant, limits, upload,
                                     options, request_id=request.state.request_id)
            finally:
                spooled.discard()  # stored by now: dropped on the same thread, not one more hop to a thread

        submitted = await run_in_threadpool(submit)
        received = None
    except Exception as exc:
        UPLOADS_REJECTED.labels(code=getattr(exc, "code", "internal_error")).inc()
        raise
    finally:
        if received is not None:
            await run_in_threadpool(received.discard)
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
    settings: SettingsDep,
    tenant: CurrentTenant,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    cursor: Annotated[str | None, Query(pattern=DOCUMENT_ID_PATTERN,
                                        description="`next_cursor` of the previous page")] = None,
    status: DocumentStatus | None = None,
) -> DocumentList:
    rows, next_cursor = service.list_documents(session, tenant_id=tenant.id, limit=limit, cursor=cursor,
                                               status=status)
    children = with_statuses(session, rows)
    review = service.pages_needing_review(session, [d.id for d in rows], settings.quality.needs_review_below)
    below = settings.quality.needs_review_below
    return DocumentList(data=[to_read(d, children.get(d.id), review.get(d.id, 0), below) for d in rows],
                        next_cursor=next_cursor)


@router.get("/{document_id}", response_model=DocumentRead, responses=ERRORS)
async def get_document(
    document_id: str, settings: SettingsDep, tenant: CurrentTenant, feeds: FeedsDep,
    wait: Annotated[float, Query(ge=0, description=f"long-poll up to this many seconds (max {MAX_WAIT_S:.0f})")] = 0,
) -> DocumentRead:
    """With `wait`, answers as soon as the status or a page count changes (pushed: no polling), or after `wait`
    seconds with the document as it is."""
    db = settings.resolved_database_url()
    below = settings.quality.needs_review_below
    if wait <= 0:
        return await run_in_threadpool(_read_visible, db, document_id, tenant.id, below)
    # Followed before it is read: a change between the read and the wait is not missed.
    async with feeds.follow(document_id, after=None) as listener:
        document, ended = await run_in_threadpool(_load_visible_ended, db, document_id, tenant.id, below)
        if ended is not None:  # nothing to wait for: answered from the same hop to a thread and the same session
            return ended
        seen = (document.status, document.pages_done, document.pages_failed)
        deadline = time.monotonic() + min(wait, MAX_WAIT_S)
        while document.status not in DOCUMENT_FINAL and (left := deadline - time.monotonic()) > 0:
            snapshot = await listener.next(timeout=left)
            if snapshot is None:
                break
            if snapshot.document is None:
                raise NotFound(f"no document {document_id!r}")
            if (snapshot.document.status, snapshot.document.pages_done, snapshot.document.pages_failed) != seen:
                document = snapshot.document
                break
    return await run_in_threadpool(_read_with_pages, db, document, below)


@router.get("/{document_id}/events", responses={**ERRORS, 200: {"content": {"text/event-stream": {}}}})
async def document_events(
    document_id: str, request: Request, settings: SettingsDep, tenant: CurrentTenant, feeds: FeedsDep,
    key_watch: KeyWatchDep, last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    """Server-sent events: the document's events so far, `document.progress` as pages end, then the final
    event, after which the stream closes. Reconnect with `Last-Event-ID` to resume. Pushed as they happen,
    with a keep-alive comment after 15 s of silence."""
    db = settings.resolved_database_url()
    await run_in_threadpool(_load_visible, db, document_id, tenant.id)  # 404 before the stream opens
    api_key: str = request.state.api_key

    async def key_is_live() -> bool:
        return await key_watch.is_live(api_key, tenant.id)

    events = sse.stream(feeds, document_id, last_event_id, keepalive_s=settings.events.keepalive_s,
                        key_is_live=key_is_live, key_recheck_s=settings.events.key_recheck_s)
    return StreamingResponse(events,
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


# A status read is a few SELECTs, each answered on its own (PostgreSQL's read committed gives every statement
# its own snapshot, in a transaction or not): no BEGIN and COMMIT round trips, no SQLite write lock.
def _load_visible(database_url: str, document_id: str, tenant_id: str) -> Document:
    with session_scope(database_url, autocommit=True) as session:
        return service.get_document(session, document_id, tenant_id)


def _load_visible_ended(database_url: str, document_id: str, tenant_id: str,
                        below: float) -> tuple[Document, DocumentRead | None]:
    """The document, and when it has ended already its answer (a long poll then has nothing to wait for)."""
    with session_scope(database_url, autocommit=True) as session:
        document = service.get_document(session, document_id, tenant_id)
        return document, _with_pages(session, document, below) if document.status in DOCUMENT_FINAL else None


def _read_visible(database_url: str, document_id: str, tenant_id: str, below: float) -> DocumentRead:
    with session_scope(database_url, autocommit=True) as session:
        document = service.get_document(session, document_id, tenant_id)
        return _with_pages(session, document, below)


def _read_with_pages(database_url: str, document: Document, below: float) -> DocumentRead:
    with session_scope(database_url, autocommit=True) as session:
        return _with_pages(session, document, below)


def _with_pages(session: Session, document: Document, below: float) -> DocumentRead:
    """The document with what its rows elsewhere say: an e-mail's attachments with their children's current
    status, and how many of its pages need review (under `below`)."""
    attachments = with_statuses(session, [document]).get(document.id, [])
    review = service.pages_needing_review(session, [document.id], below).get(document.id, 0)
    return to_read(document, attachments, review, below)
class ResultFormat(StrEnum):
    """The parse formats every document has, and the answer of its model task (`task`), if it has one."""

    MARKDOWN = "markdown"
    HTML = "html"
    LATEX = "latex"
    JSON = "json"
    CHUNKS = "chunks"
    EXTRACTION = "extraction"
    TRANSLATION = "translation"
    SUMMARY = "summary"


@router.get("/{document_id}/result", responses={
    **ERRORS, 200: {"model": pages.DocumentResult,
                    "content": {media.split(";")[0]: {} for media in RESULT_MEDIA_TYPES.values()}},
    307: {"description": "redirect=true with the S3 store"}})
def get_result(
    document_id: str, session: SessionDep, store: StoreDep, settings: SettingsDep, tenant: CurrentTenant,
    format: Annotated[ResultFormat, Query(description="markdown, html (standalone, KaTeX inlined), latex "
                                                      "(XeLaTeX), json (pages and elements), chunks (for retrieval); "
                                                      "extraction, translation, summary: the answer of the "
                                                      "document's task")
                      ] = ResultFormat.MARKDOWN,
    redirect: Annotated[bool, Query(description="307 to a presigned object-store URL (S3 store only)")] = False,
) -> Response:
    document = service.finished_document(session, document_id, tenant.id, "the result exists")
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
    # As stored: the same bytes as S3 serves. The HTML shows untrusted text: its CSP as a header too (the file's
    # <meta> says it, a header also binds what a <meta> cannot reach), and no type sniffing for any format.
    headers = {"X-Content-Type-Options": "nosniff"}
    if format is ResultFormat.HTML:
        headers["Content-Security-Policy"] = f"{RESULT_HTML_CSP}; frame-ancestors 'none'"
    return Response(body, media_type=RESULT_MEDIA_TYPES[format.value], headers=headers)


class PageFormat(StrEnum):
    JSON = "json"
    MARKDOWN = "markdown"


@router.get("/{document_id}/pages/{n}", response_model=PageRead,
            responses={**ERRORS, 200: {"content": {"application/json": {}, "text/markdown": {}}}})
def get_page(document_id: str, n: PageNumber, session: SessionDep, store: StoreDep, tenant: CurrentTenant,
             settings: SettingsDep,
             format: Annotated[PageFormat, Query(description="json: the page entry; markdown: its Markdown "
                                                             "(HTML, LaTeX and chunks are per document)")
                               ] = PageFormat.JSON) -> PageRead | Response:
    document = service.get_document(session, document_id, tenant.id)
    page = service.get_page(session, document, n)
    if document.expired_at is not None:  # its result is deleted for good: 410, not a 409 to poll on
        raise ResultExpired("the document's results were deleted when its retention period ended")
    read = page_read(page, store, settings.quality.needs_review_below)
    if format is PageFormat.MARKDOWN:
        if read.markdown is None:
            raise ResultNotReady(f"page {n} is {page.status}; its Markdown exists once it has succeeded")
        return Response(read.markdown, media_type=RESULT_MEDIA_TYPES["markdown"])
    return read


def page_read(page: Page, store: Any, needs_review_below: float) -> PageRead:
    result = None
    if page.result_key:
        try:
            result = load_page_result(store, page.result_key, page.index)
        except ObjectNotFound:
            result = None
    return pages.page_read(page, result, needs_review_below=needs_review_below)


@router.delete("/{document_id}", response_model=DocumentDeleted, responses=ERRORS)
def delete_document(document_id: str, session: SessionDep, store: StoreDep,
                    tenant: CurrentTenant) -> DocumentDeleted:
    document = service.get_document(session, document_id, tenant.id)
    status = service.delete_document(session, store, document)
    return DocumentDeleted(id=document.id, status=status, deleted=True)
