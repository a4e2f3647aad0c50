"""A document read natively (DOCX, HTML, EPUB, e-mail) ends its one page at the split: no page job, no engine.

The reader's elements are the page's result, stored where a page job would have stored it; the page row is
then finished like any page (its document's counters, progress event, usage), and the assembly is queued when
that ended the document — so the results, webhooks and every API answer are those of a one-page document.
"""

from __future__ import annotations

import json

from services.core.contracts import PageElement, PageResult, from_dict, to_dict
from services.core.db.models import DOCUMENT_FINAL, Document, PageStatus
from services.core.db.session import session_scope
from services.core.elements import Element, page_markdown, to_wire
from services.core.lifecycle import PageFinish, finish_page, mark_split
from services.core.metrics import PAGE_LATENCY, PAGES_TOTAL
from services.core.queues import assemble_job, enqueue
from services.core.settings import Settings
from services.core.storage import ObjectStore, page_result_key

ENGINE = "native"


def store_native_page(store: ObjectStore, document_id: str, elements: list[Element], latency_ms: int) -> None:
    """The elements as page 1's stored result (before the page row says so)."""
    result = PageResult(document_id=document_id, page_index=0, page_number=1, markdown=page_markdown(elements),
                        engine=ENGINE, attempts=1, latency_ms=latency_ms, confidence=1.0,
                        elements=[from_dict(PageElement, to_wire(e)) for e in elements])
    store.put(page_result_key(document_id, 0), json.dumps(to_dict(result), ensure_ascii=False).encode(),
              content_type="application/json")


def finish_native_page(document_id: str, settings: Settings, latency_ms: int) -> bool:
    """Ends the page and marks the document split and running; queues the assembly when this call ended it.
    Returns whether the page was ended here (a second run finds it ended and does nothing)."""
    with session_scope(settings.resolved_database_url()) as session:
        document = session.get(Document, document_id)
        if document is None or document.status in DOCUMENT_FINAL:
            return False
        mark_split(session, document_id)
        request_id, mode = document.request_id, document.mode
        due = finish_page(session, document_id, 0, PageFinish(
            PageStatus.SUCCEEDED, result_key=page_result_key(document_id, 0), engine=ENGINE, attempts=1,
            latency_ms=latency_ms, confidence=1.0))
        if due:
            enqueue(assemble_job(document_id, request_id))
    PAGES_TOTAL.labels(status="succeeded", engine=ENGINE, mode=mode or "fast").inc()
    PAGE_LATENCY.labels(engine=ENGINE).observe(latency_ms / 1000)
    return due
