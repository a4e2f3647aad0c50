"""Accepting a tenant's upload: idempotency, limits, the document-level cache, the `document.queued` event.

    POST ─▶ (same Idempotency-Key?) ─▶ validate ─▶ cache hit? ─▶ copy of the earlier result, finished at once
                  replay / 409                           └──▶ pages in flight ok? ─▶ new document + split job
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import cache, events
from services.core.db.models import (
    Document,
    DocumentStatus,
    IdempotencyKey,
    Page,
    PageStatus,
    Tenant,
    WebhookEndpoint,
    new_id,
    utcnow,
)
from services.core.db.session import session_scope
from services.core.document_tasks import TaskKind
from services.core.errors import IdempotencyConflict, RateLimited, TooManyPages, ValidationFailed
from services.core.fairness import priority_for
from services.core.formats import EML, NATIVE_TYPES
from services.core.metrics import CACHE_LOOKUPS, DOCUMENTS_TOTAL, RATE_LIMITED
from services.core.pdf import EXTENSIONS
from services.core.settings import Settings
from services.core.storage import (
    RESULT_MEDIA_TYPES,
    ObjectNotFound,
    ObjectStore,
    document_prefix,
    document_result_key,
    figure_key,
    source_key,
)
from services.core.tenants import TenantLimits, lock_tenant, pages_finished_recently, pages_in_flight
from services.core.webhooks import check_url
from services.gateway.documents import service
from services.gateway.documents.service import Accepted, Upload


@dataclass(frozen=True, slots=True)
class SubmitOptions:
    cache: bool = True  # look the upload up in the result cache
    do_not_cache: bool = False  # never let this document answer a later upload
    webhook_url: str | None = None
    idempotency_key: str | None = None
    figures: bool = True  # keep the figures' images
    furniture: str = "drop"  # "keep": headers and footers in every format, marked
    merge_tables: bool = True  # a table over two pages: one table with parts


@dataclass(frozen=True, slots=True)
class Submitted:
    document: Document
    replayed: bool = False  # an Idempotency-Key replay: the original document, nothing new was made
    cache_hit: bool = False


def request_hash(upload: Upload, options: SubmitOptions) -> str:
    """What "the same request" means for an Idempotency-Key: the file and every form field."""
    fields = {"file": upload.sha256, "filename": upload.filename, "pages": upload.pages,
              "metadata": upload.metadata, "mode": upload.mode, "cache": options.cache,
              "do_not_cache": options.do_not_cache, "webhook_url": options.webhook_url,
              "task": upload.task, "target_language": upload.target_language, "schema": upload.schema,
              "figures": options.figures, "furniture": options.furniture, "merge_tables": options.merge_tables}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _replay(session: Session, tenant: Tenant, key: str, digest: str) -> Document | None:
    row = session.get(IdempotencyKey, (tenant.id, key))
    if row is None:
        return None
    if row.expires_at <= utcnow():
        session.delete(row)
        session.flush()
        return None
    if row.request_hash != digest:
        raise IdempotencyConflict("this Idempotency-Key was used with a different request; use a new key")
    return session.get(Document, row.document_id)


def _check_in_flight(session: Session, tenant: Tenant, limits: TenantLimits, pages: int) -> int:
    """The tenant's pages in flight with this upload; raises 429 when that is over its limit."""
    if pages > limits.pages_in_flight:
        raise TooManyPages(f"the document has {pages} pages; this account may have at most "
                           f"{limits.pages_in_flight} pages in flight")
    in_flight = pages_in_flight(session, tenant.id)
    if in_flight + pages <= limits.pages_in_flight:
        return in_flight + pages
    # Retry-After from the tenant's own pace: how long until enough of its pages have finished.
    excess = in_flight + pages - limits.pages_in_flight
    per_second = pages_finished_recently(session, tenant.id, 60) / 60
    wait = excess / per_second if per_second > 0 else 30.0
    RATE_LIMITED.labels(limit="pages_in_flight").inc()
    raise RateLimited(f"{in_flight} pages are in flight and this upload has {pages}; the limit is "
                      f"{limits.pages_in_flight}", retry_after_s=min(max(wait, 1.0), 600.0), limit="pages_in_flight")


def submit(database_url: str, store: ObjectStore, settings: Settings, tenant: Tenant, limits: TenantLimits,
           upload: Upload, options: SubmitOptions, *, request_id: str | None) -> Submitted:
    """Objects are written first, outside any transaction; the rows then go in one short transaction that
    holds the tenant's lock, so limits and idempotency keys are exact without serializing uploads."""
    digest = request_hash(upload, options)
    key = options.idempotency_key
    if key:
        with session_scope(database_url) as session:
            original = _replay(session, tenant, key, digest)
        if original is not None:
            return Submitted(original, replayed=True)
    accepted = service.validate_upload(upload, settings, max_pages=limits.max_pages)
    webhook_url = check_url(options.webhook_url, allow_private=settings.webhooks.allow_private_urls) \
        if options.webhook_url else None
    doc_options: dict[str, Any] = {}
    if not options.cache:
        doc_options["cache"] = False
    if options.do_not_cache:
        doc_options["do_not_cache"] = True
    # What the results hold is part of the cache key; the defaults are left out, so earlier keys still match.
    if not options.figures:
        doc_options["figures"] = False
    if options.furniture == "keep":
        doc_options["furniture"] = "keep"
    if not options.merge_tables:
        doc_options["merge_tables"] = False
    # A model task's answer is part of what a cached copy hands back: the task is part of the key.
    keyed = doc_options if accepted.task.kind is TaskKind.PARSE else {
        **doc_options, "task": accepted.task.kind.value, "task_params": accepted.task.params}
    if accepted.info.media_type in NATIVE_TYPES and settings.convert.native:
        keyed = {**keyed, "reader": "native"}  # read natively, not the pages LibreOffice rendered: another result
    cache_key = cache.document_key(sha256=accepted.sha256, page_numbers=accepted.page_numbers, mode=accepted.mode,
                                   engine=accepted.engine, options=keyed, settings=settings)
    # An e-mail is never answered from the document cache: its attachments are documents of their own, which a
    # copy would not have (its pages still come from the page cache).
    cacheable = accepted.info.media_type != EML
    stored_key = cache_key if cacheable and cache.writes_cache(doc_options, settings) else None
    document_id = new_id("doc")
    copied = None
    if cacheable and cache.reads_cache(doc_options, settings):
        with session_scope(database_url) as session:
            hit = cache.find_document(session, tenant.id, cache_key)
            pages = list(session.execute(sa.select(Page).where(Page.document_id == hit.id)
                                         .order_by(Page.index)).scalars()) if hit else []
        CACHE_LOOKUPS.labels(level="document", outcome="hit" if hit else "miss").inc()
        if hit is not None:
            try:
                copied = _copy_objects(store, upload, accepted, hit, pages, document_id)
            except ObjectNotFound:  # expired or deleted meanwhile: parse it after all
                store.delete_prefix(document_prefix(document_id))
    if copied is None:
        # refuse early, before storing the file (one read: no transaction); checked again below, under the lock
        with session_scope(database_url, autocommit=True) as session:
            _check_in_flight(session, tenant, limits, len(accepted.page_numbers))
        store.put_file(source_key(document_id, EXTENSIONS[accepted.info.media_type]), upload.source,
                  content_type=accepted.info.media_type)
    try:
        with session_scope(database_url) as session:
            lock_tenant(session, tenant.id)
            if key and (original := _replay(session, tenant, key, digest)) is not None:
                raise _Replayed(original)  # a concurrent request with the same key won
            if copied is not None:
                document = _insert_cached(session, tenant, upload, accepted, copied, doc_options, stored_key,
                                          request_id)
            else:
                in_flight = _check_in_flight(session, tenant, limits, len(accepted.page_numbers))
                document = service.create_document(
                    session, store, settings, upload, tenant_id=tenant.id, request_id=request_id,
                    accepted=accepted, priority=priority_for(in_flight, settings), options=doc_options,
                    cache_key=stored_key, document_id=document_id, source_stored=True)
            if webhook_url:
                endpoint = WebhookEndpoint(id=new_id("whe"), tenant_id=tenant.id, url=webhook_url, events=[],
                                           secret=tenant.webhook_secret, document_id=document.id,
                                           created_at=utcnow())
                session.add(endpoint)
                document.options = {**document.options, "webhook_id": endpoint.id}
                session.flush()
            # A cache hit was never queued: its first and only event is `document.succeeded`.
            events.record(session, document, events.EventType.SUCCEEDED if copied else events.EventType.QUEUED)
            if key:
                expires = utcnow() + timedelta(seconds=settings.retention.idempotency_ttl_s)
                session.add(IdempotencyKey(tenant_id=tenant.id, key=key, request_hash=digest,
                                           document_id=document.id, created_at=utcnow(), expires_at=expires))
    except BaseException as exc:
        store.delete_prefix(document_prefix(document_id))  # nothing refers to these objects (its jobs were dropped)
        if isinstance(exc, _Replayed):
            return Submitted(exc.document, replayed=True)
        raise
    if copied is not None:
        DOCUMENTS_TOTAL.labels(status="succeeded", mode=accepted.mode).inc()
    return Submitted(document, cache_hit=copied is not None)


class _Replayed(Exception):
    def __init__(self, document: Document) -> None:
        super().__init__(document.id)
        self.document = document


@dataclass(frozen=True, slots=True)
class _Copied:
    source: Document
    pages: list[Page]
    document_id: str


def copied_result_key(key: str, source_id: str, document_id: str) -> str:
    """Where a page result object of the earlier document goes for the document answered from it: the same name
    under the new document's prefix (the pages of a chunk share one object, copied once)."""
    return document_prefix(document_id) + key.removeprefix(document_prefix(source_id))


def _copy_objects(store: ObjectStore, upload: Upload, accepted: Accepted, source: Document, pages: list[Page],
                  document_id: str) -> _Copied:
    """The earlier document's results, copied under the new document's keys (server-side on S3)."""
    store.put_file(source_key(document_id, EXTENSIONS[accepted.info.media_type]), upload.source,
              content_type=accepted.info.media_type)
    for key in dict.fromkeys(page.result_key or "" for page in pages):  # the pages of a chunk share one object
        store.copy(key, copied_result_key(key, source.id, document_id))
    formats = events.ready_formats(source)
    for fmt in formats:  # every format the earlier document has; the JSON ones name the new id
        if fmt not in ("json", "chunks", "html"):
            store.copy(document_result_key(source.id, fmt), document_result_key(document_id, fmt))
    if "html" in formats:  # its <title> is the filename: the copy's own, never the original's
        title = upload.filename[:512] or document_id
        store.put(document_result_key(document_id, "html"),
                  cache.retitled_html(store.get(document_result_key(source.id, "html")), title),
                  content_type=RESULT_MEDIA_TYPES["html"])
    if "chunks" in formats:
        chunks = json.loads(store.get(document_result_key(source.id, "chunks")))
        store.put(document_result_key(document_id, "chunks"),
                  json.dumps({**chunks, "document_id": document_id}, ensure_ascii=False).encode(),
                  content_type="application/json")
    body = json.loads(store.get(document_result_key(source.id, "json")))
    for figure in body.get("figures") or []:  # the images the results name, under the copy's own prefix
        name = str(figure["path"]).removeprefix("figures/")
        store.copy(figure_key(source.id, name), figure_key(document_id, name))
    body.update(id=document_id, filename=upload.filename[:512], metadata=accepted.metadata,
                created_at=utcnow().isoformat().replace("+00:00", "Z"))
    store.put(document_result_key(document_id, "json"), json.dumps(body, ensure_ascii=False).encode(),
              content_type="application/json")
    return _Copied(source, pages, document_id)


def _insert_cached(session: Session, tenant: Tenant, upload: Upload, accepted: Accepted, copied: _Copied,
                   options: dict[str, Any], stored_key: str | None, request_id: str | None) -> Document:
    """The rows of a document answered from the cache: finished, every page `cached` (not charged)."""
    now = utcnow()
    source, document_id = copied.source, copied.document_id
    document = Document(
        id=document_id, tenant_id=tenant.id, status=DocumentStatus.SUCCEEDED, filename=upload.filename[:512],
        media_type=accepted.info.media_type, size_bytes=upload.size, sha256=accepted.sha256,
        source_key=source_key(document_id, EXTENSIONS[accepted.info.media_type]),
        page_numbers=accepted.page_numbers, pages_total=len(copied.pages), pages_done=len(copied.pages),
        pages_failed=0, mode=accepted.mode, engine=accepted.engine, metadata_=accepted.metadata,
        options={**options, "cached_from": source.id, "formats": events.ready_formats(source)},
        request_id=request_id, created_at=now, updated_at=now,
        split_at=now, started_at=now, assembly_claimed_at=now, finished_at=now, cache_key=stored_key,
        task=accepted.task.kind.value, task_params=accepted.task.params,
    )
    session.add(document)
    session.flush()
    rows = [{
        "document_id": document_id, "index": page.index, "page_number": page.page_number,
        "status": PageStatus.SUCCEEDED, "result_key": copied_result_key(page.result_key or "", source.id, document_id),
        "engine": page.engine, "model": page.model, "attempts": 0, "latency_ms": 0, "is_fallback": page.is_fallback,
        "confidence": page.confidence, "cached": True, "cache_key": page.cache_key if stored_key else None,
        "details": {**{k: v for k, v in page.details.items() if k != "lease_owner"}, "cache_hit": True,
                    "cached_from": f"{source.id}/{page.index + 1}"},
        "deliveries": 0, "enqueued_at": now, "started_at": now, "finished_at": now,
    } for page in copied.pages]
    if rows:
        session.execute(sa.insert(Page), rows)
    return document


def validate_idempotency_key(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > 255 or not value.isprintable():
        raise ValidationFailed("Idempotency-Key: 1 to 255 printable characters")
    return value
