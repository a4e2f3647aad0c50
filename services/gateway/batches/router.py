"""`/v1/batches`: many documents in one request — files, or URLs the server fetches under the webhook address
rules — under one batch id; its status counts its documents per status, and `batch.completed` is sent when the
last one ends (services/core/batches.py).

Each item is uploaded through `POST /v1/documents` in-process with the caller's key: the same checks, limits,
result cache and fair share as a document sent alone (a batch of 40 documents weighs what 40 uploads weigh). An
item the upload refuses is reported with its error and left out; the others go on.
"""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from services.core import batches
from services.core.db.models import Batch, new_id
from services.core.db.session import session_scope
from services.core.errors import BatchEmpty, NotFound, PagemillError, ValidationFailed
from services.core.lifecycle import attach_to_batch
from services.gateway.batches.schemas import BatchCreated, BatchDocument, BatchItem, BatchRead
from services.gateway.compat.inproc import ApiError, Upload, open_api
from services.gateway.deps import CurrentTenant, SettingsDep, public_link
from services.gateway.documents.schemas import ErrorBody, ErrorResponse
from services.gateway.documents.service import parse_metadata
from services.gateway.mcp.sources import SourcePolicy, fetch_url

router = APIRouter(prefix="/v1/batches", tags=["batches"])
BATCH_ID_PATTERN = r"^bat_[0-9a-f]{32}$"
# Passed to every document of the batch as its own upload field.
DOCUMENT_FIELDS = ("mode", "pages", "webhook_url", "figures", "furniture", "merge_tables", "cache", "do_not_cache")
FIELDS = frozenset({"file", "url", "metadata", *DOCUMENT_FIELDS})
CREATE_BODY = {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "additionalProperties": False,
    "properties": {
        "file": {"type": "array", "items": {"type": "string", "format": "binary"},
                 "description": f"the files (the field repeated); with `url`, at most {batches.MAX_DOCUMENTS}"},
        "url": {"type": "array", "items": {"type": "string", "pattern": "^https?://", "maxLength": 2048},
                "description": "http(s) URLs the server fetches, on public addresses only (the webhook rules)"},
        "metadata": {"type": "string", "contentMediaType": "application/json",
                     "description": "the batch's own JSON object, returned with it and in batch.completed"},
        **{name: {"type": "string", "description": "as POST /v1/documents; given to every document"}
           for name in DOCUMENT_FIELDS},
    }}}}}
ERRORS: dict[int | str, dict[str, object]] = {code: {"model": ErrorResponse} for code in (400, 401, 413, 422, 503)}


@router.post("", status_code=202, response_model=BatchCreated, responses=ERRORS,
             openapi_extra={"requestBody": CREATE_BODY})
async def create_batch(request: Request, tenant: CurrentTenant, settings: SettingsDep) -> BatchCreated:
    """Files (`file`, repeated) and URLs (`url`, repeated) become documents of one batch; the answer lists each
    item's document id or the error that refused it. 422 `batch_empty` when every item was refused."""
    form = await request.form(max_files=batches.MAX_DOCUMENTS, max_fields=batches.MAX_DOCUMENTS + 20)
    try:
        if unknown := sorted(set(form.keys()) - FIELDS):
            raise ValidationFailed(f"{', '.join(unknown)}: unknown field; it takes {', '.join(sorted(FIELDS))}")
        files = [f for f in form.getlist("file") if isinstance(f, UploadFile)]
        urls = [str(u).strip() for u in form.getlist("url") if str(u).strip()]
        if not files and not urls:
            raise ValidationFailed("file or url: give at least one")
        if len(files) + len(urls) > batches.MAX_DOCUMENTS:
            raise ValidationFailed(f"a batch holds at most {batches.MAX_DOCUMENTS} files and URLs")
        metadata = parse_metadata(str(form.get("metadata") or "") or None)
        fields = {name: str(form[name]) for name in DOCUMENT_FIELDS if str(form.get(name) or "").strip()}
        policy = SourcePolicy(allow_private_urls=settings.webhooks.allow_private_urls,
                              max_bytes=settings.limits.max_file_bytes, fetch_timeout_s=settings.mcp.fetch_timeout_s)
        items: list[BatchItem] = []
        async with open_api(request, request.state.api_key) as api:
            sources: list[UploadFile | str] = [*files, *urls]
            for index, source in enumerate(sources):
                name = source if isinstance(source, str) else source.filename or "document"
                try:
                    upload = (await fetch_url(policy, source, None) if isinstance(source, str)
                              else Upload(name, await source.read()))
                    created = await api.submit(upload, fields)
                    items.append(BatchItem(index=index, source=name, document_id=created["id"]))
                except (ApiError, PagemillError) as exc:
                    items.append(BatchItem(index=index, source=name, document_id=None,
                                           error=ErrorBody(code=exc.code, message=exc.message)))
    finally:
        await form.close()
    ids = [item.document_id for item in items if item.document_id]
    if not ids:
        first = next(item.error for item in items if item.error)
        raise BatchEmpty(f"every item was refused; the first: {first.code}: {first.message}")
    batch_id = new_id("bat")

    def save() -> None:
        with session_scope(settings.resolved_database_url()) as session:
            session.add(Batch(id=batch_id, tenant_id=tenant.id, documents_total=len(ids), metadata_=metadata))
            session.flush()
            attach_to_batch(session, ids, tenant.id, batch_id)
            batches.complete_if_done(session, batch_id)  # every document answered from the cache: done already

    await run_in_threadpool(save)
    return BatchCreated(id=batch_id, documents_total=len(ids), items=items,
                        status_url=public_link(request, settings, "get_batch", batch_id=batch_id))


@router.get("/{batch_id}", response_model=BatchRead, responses={404: {"model": ErrorResponse}})
async def get_batch(batch_id: Annotated[str, Path(pattern=BATCH_ID_PATTERN)], tenant: CurrentTenant,
                    settings: SettingsDep) -> BatchRead:
    """The batch's documents per status; `completed` once every one has ended."""

    def read() -> BatchRead:
        with session_scope(settings.resolved_database_url()) as session:
            batch = session.get(Batch, batch_id)
            if batch is None or batch.tenant_id != tenant.id:
                raise NotFound(f"batch {batch_id} not found")
            batches.complete_if_done(session, batch_id)
            statuses = batches.document_statuses(session, batch_id)
            return BatchRead(id=batch.id, status="completed" if batch.completed_at else "running",
                             documents_total=batch.documents_total, counts=batches.counts(statuses),
                             documents=[BatchDocument(id=i, status=s) for i, s in statuses],
                             metadata=json.loads(json.dumps(batch.metadata_ or {})), created_at=batch.created_at,
                             completed_at=batch.completed_at)

    return await run_in_threadpool(read)
