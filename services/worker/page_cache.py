"""The page-level result cache in the worker: a page already parsed for the tenant is copied, not re-run.

So a re-upload with one page changed runs one page. The page file's fingerprint ignores the random
`/ID` the splitter writes, so the same page of two uploads matches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import cache, events
from services.core.contracts import PageTask
from services.core.db.models import Document, Page, PageStatus
from services.core.db.session import session_scope
from services.core.lifecycle import PageFinish, finish_page
from services.core.metrics import CACHE_LOOKUPS
from services.core.settings import Settings
from services.core.storage import ObjectNotFound, ObjectStore, page_result_key


@dataclass(frozen=True, slots=True)
class PageCacheOutcome:
    hit: bool = False
    due: bool = False  # the hit ended the document's last page: assemble it
    store_key: str | None = None  # on a miss: the key to record with the page's result (None: do not cache)


def lookup(settings: Settings, store: ObjectStore, job: PageTask, page_number: int, data: bytes,
           engine: str) -> PageCacheOutcome:
    db = settings.resolved_database_url()
    with session_scope(db) as session:
        row = session.execute(sa.select(Document.tenant_id, Document.options)
                              .where(Document.id == job.document_id)).one_or_none()
        if row is None or not row.tenant_id:
            return PageCacheOutcome()
        tenant_id, options = row.tenant_id, row.options or {}
        reads, writes = cache.reads_cache(options, settings), cache.writes_cache(options, settings)
        if not (reads or writes):
            return PageCacheOutcome()
        key = cache.page_key(data=data, mode=job.mode, engine=engine, options=options, settings=settings)
        source = cache.find_page(session, tenant_id, key, document_id=job.document_id) if reads else None
    if reads:
        CACHE_LOOKUPS.labels(level="page", outcome="hit" if source else "miss").inc()
    if source is None or source.result_key is None:
        return PageCacheOutcome(store_key=key if writes else None)
    try:
        result = json.loads(store.get(source.result_key))
    except ObjectNotFound:  # deleted meanwhile: parse it after all
        return PageCacheOutcome(store_key=key if writes else None)
    result.update(document_id=job.document_id, page_index=job.page_index, page_number=page_number)
    destination = page_result_key(job.document_id, job.page_index)
    store.put(destination, json.dumps(result, ensure_ascii=False).encode(), content_type="application/json")
    details = {k: v for k, v in source.details.items() if k != "lease_owner"}
    with session_scope(db) as session:
        due = finish_page(session, job.document_id, job.page_index, PageFinish(
            PageStatus.SUCCEEDED, result_key=destination, engine=source.engine, model=source.model, attempts=0,
            latency_ms=0, is_fallback=source.is_fallback, confidence=source.confidence,
            details={**details, "cache_hit": True, "cached_from": f"{source.document_id}/{source.index + 1}"}))
        session.execute(sa.update(Page).where(Page.document_id == job.document_id, Page.index == job.page_index)
                        .values(cached=True, cache_key=key if writes else None))
        events.record_progress(session, job.document_id, settings.webhooks.progress_interval_s)
    return PageCacheOutcome(hit=True, due=due)


def remember(session: Session, job: PageTask, key: str | None) -> None:
    """Records the cache key with a freshly parsed page, in the transaction that finishes it."""
    if key:
        session.execute(sa.update(Page).where(Page.document_id == job.document_id, Page.index == job.page_index)
                        .values(cache_key=key))
