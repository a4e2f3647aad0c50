"""The page-level result cache in the worker: a page already parsed for the tenant is copied, not re-run.

So a re-upload with one page changed runs one page. The page file's fingerprint ignores what the splitter
writes differently each time, so the same page of two uploads matches. The page job says whether to look
up and whether to record (`cache=false`, `do_not_cache=true`), so no document row is read for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from services.core import cache, events
from services.core.contracts import PageTask
from services.core.db.models import PageStatus
from services.core.db.session import session_scope
from services.core.elements import from_wire, renumber, to_wire
from services.core.lifecycle import PageFinish, finish_page
from services.core.metrics import CACHE_LOOKUPS
from services.core.settings import Settings
from services.core.storage import ObjectNotFound, ObjectStore, load_page_result, page_result_key


@dataclass(frozen=True, slots=True)
class PageCacheOutcome:
    hit: bool = False
    due: bool = False  # the hit ended the document's last page: assemble it
    store_key: str | None = None  # on a miss: the key to record with the page's result (None: do not cache)


def lookup(settings: Settings, store: ObjectStore, job: PageTask, page_number: int, data: bytes,
           engine: str) -> PageCacheOutcome:
    if not (settings.cache.enabled and job.tenant_id and (job.cache_lookup or job.cache_store)):
        return PageCacheOutcome()
    key = cache.page_key(data=data, mode=job.mode, engine=engine, scope=job.cache_scope, settings=settings)
    miss = PageCacheOutcome(store_key=key if job.cache_store else None)
    if not job.cache_lookup:
        return miss
    db = settings.resolved_database_url()
    with session_scope(db, autocommit=True) as session:  # one read
        source = cache.find_page(session, job.tenant_id, key, document_id=job.document_id)
    CACHE_LOOKUPS.labels(level="page", outcome="hit" if source else "miss").inc()
    if source is None or source.result_key is None:
        return miss
    try:
        result = load_page_result(store, source.result_key, source.index)
    except ObjectNotFound:  # deleted meanwhile: parse it after all
        return miss
    result.update(document_id=job.document_id, page_index=job.page_index, page_number=page_number)
    # The same page may sit at another page number of this upload: its elements' ids and page follow it.
    elements = renumber([from_wire(raw) for raw in result.get("elements") or []], page_number)
    result["elements"] = [to_wire(e) for e in elements]
    destination = page_result_key(job.document_id, job.page_index)
    store.put(destination, json.dumps(result, ensure_ascii=False).encode(), content_type="application/json")
    with session_scope(db) as session:
        due = finish_page(session, job.document_id, job.page_index, PageFinish(
            PageStatus.SUCCEEDED, result_key=destination, engine=source.engine, model=source.model, attempts=0,
            latency_ms=0, is_fallback=source.is_fallback, confidence=source.confidence,
            details={**source.details, "cache_hit": True, "cached_from": f"{source.document_id}/{source.index + 1}"},
            cache_key=miss.store_key, cached=True))
        events.record_progress(session, job.document_id, settings.webhooks.progress_interval_s)
    return PageCacheOutcome(hit=True, due=due)
