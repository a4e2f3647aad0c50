"""The reconciler: whatever the queue lost, the database still knows, and this puts it back on the queue.

It sends the first jobs of documents committed by a process that died before sending them (a few seconds
after the commit, `reconciler.unsent_grace_s`), re-enqueues pages whose lease ran out, pages and splits whose
messages vanished, webhook messages
whose task was lost or whose backoff ran out, and assembles documents whose pages all ended but which
were never assembled, and finishes the scrub of erased documents whose webhooks have ended since (see
`services.core.erasure`). Every `retention.sweep_interval_s` it also runs the retention sweep. Redis losing
its data (a restart without persistence, a FLUSHALL) is noticed through a sentinel key and repaired at
once instead of after a lease.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

import redis
import sqlalchemy as sa
from celery import Celery
from sqlalchemy.orm import Session

from services.core import erasure
from services.core.db.models import Document, DocumentStatus, Page, PageStatus, utcnow
from services.core.db.session import session_scope
from services.core.events import deliver_job, due_deliveries
from services.core.lifecycle import claim_assembly
from services.core.lifecycle.marks import mark_jobs_unsent, mark_pages_sent, mark_split_sent, requeue_lost_page
from services.core.logging import get_logger
from services.core.lost_work import (
    expired_running_pages,
    recently_deleted_documents,
    stale_queued_pages,
    unassembled_documents,
    unsent_documents,
    unsplit_documents,
)
from services.core.metrics import PAGE_RETRIES, record_rss
from services.core.queues import assemble_job, chunk_jobs, enqueue, mark_sent, outbox, split_job
from services.core.settings import Settings
from services.core.storage import document_prefix, get_store
from services.reconciler import retention

log = get_logger(__name__)

EPOCH_KEY = "pagemill:epoch"


@dataclass(slots=True)
class ReconcileReport:
    redis_reset: bool = False
    unsent_sent: int = 0  # documents whose first jobs were never sent
    pages_requeued: int = 0
    splits_requeued: int = 0
    assemblies: int = 0
    erased: int = 0
    webhooks_requeued: int = 0
    scrubbed: int = 0
    details: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.unsent_sent or self.pages_requeued or self.splits_requeued or self.assemblies or self.erased
                    or self.webhooks_requeued or self.scrubbed)


def redis_was_reset(client: redis.Redis) -> bool:
    """True when the sentinel key is gone: everything queued in Redis may be lost."""
    return bool(client.set(EPOCH_KEY, uuid.uuid4().hex, nx=True))


def reconcile_once(settings: Settings, app: Celery, client: redis.Redis) -> ReconcileReport:
    """One pass, a unit of work of the outbox: the jobs it re-enqueues go out when its transaction commits."""
    with outbox(app):
        return _reconcile(settings, client)


def _reconcile(settings: Settings, client: redis.Redis) -> ReconcileReport:
    report = ReconcileReport(redis_reset=redis_was_reset(client))
    now = utcnow()
    # After a reset every queued message is presumed lost; otherwise only those older than the lease.
    queued_cutoff = None if report.redis_reset else now - timedelta(seconds=settings.worker.queued_lease_s)
    with session_scope(settings.resolved_database_url()) as session:
        documents: dict[str, Document | None] = {}
        requeued: dict[str, tuple[Document, list[tuple[int, str, str]]]] = {}  # its pages: index, key, engine
        expired = expired_running_pages(session, now)
        PAGE_RETRIES.labels(reason="lease_expired").inc(len(expired))
        for page in expired + stale_queued_pages(session, queued_cutoff):
            if page.document_id not in documents:
                documents[page.document_id] = session.get(Document, page.document_id)
            document = documents[page.document_id]
            if document is None or page.source_key is None:
                continue
            requeue_lost_page(page, now)
            requeued.setdefault(page.document_id, (document, []))[1].append(
                (page.index, page.source_key, page.engine or document.engine))
            report.pages_requeued += 1
        for document, pages in requeued.values():  # in chunks, as the split queued them
            for job in chunk_jobs(document, pages, settings):
                enqueue(job)
        resplit = unsplit_documents(session, queued_cutoff)
        for document in resplit:
            mark_split_sent(document, now)
            enqueue(split_job(document))
            report.splits_requeued += 1
        report.unsent_sent = _send_unsent(session, settings, now, sent_now={
            *requeued, *(document.id for document in resplit)})
        # After a reset an assembly's message may be lost too (a chunk can end a document while Redis is away).
        assembly_lease_s = 0 if report.redis_reset else settings.reconciler.assembly_lease_s
        for document_id in unassembled_documents(session, now, assembly_lease_s):
            if claim_assembly(session, document_id, lease_s=assembly_lease_s, now=now):
                document = session.get(Document, document_id)
                enqueue(assemble_job(document_id, document.request_id if document else None))
                report.assemblies += 1
        # A page that was mid-flight when its document was deleted may have written its result afterwards.
        window = timedelta(seconds=settings.worker.longest_page_s + 60)
        recently_deleted = recently_deleted_documents(session, now - window)
        # Webhook messages whose task was lost, never sent, or whose (long) backoff has run out.
        for delivery_id in due_deliveries(session, now, grace_s=0 if report.redis_reset else 10,
                                          per_tenant=settings.webhooks.max_concurrent_per_tenant):
            enqueue(deliver_job(delivery_id))
            report.webhooks_requeued += 1
    if recently_deleted:
        store = get_store(settings)
        for document_id in recently_deleted:
            report.erased += store.delete_prefix(document_prefix(document_id))
    # Erased documents whose webhook deliveries have ended since: their bodies lose the customer's data now.
    with session_scope(settings.resolved_database_url()) as session:
        report.scrubbed = erasure.finish_pending(session, now)
    if report.changed or report.redis_reset:
        log.info("reconcile.done", redis_reset=report.redis_reset, unsent=report.unsent_sent,
                 pages=report.pages_requeued,
                 splits=report.splits_requeued, assemblies=report.assemblies, erased=report.erased,
                 webhooks=report.webhooks_requeued, scrubbed=report.scrubbed)
    return report


def _send_unsent(session: Session, settings: Settings, now: datetime, sent_now: set[str]) -> int:
    """The first jobs of documents committed more than `reconciler.unsent_grace_s` ago and never known to be
    sent: its split, or its queued pages in chunks, as the upload made them. `sent_now`: documents this pass
    already re-sent by their lease. Returns the documents whose jobs are sent."""
    db = settings.resolved_database_url()
    sent = 0
    for document in unsent_documents(session, now - timedelta(seconds=settings.reconciler.unsent_grace_s)):
        if document.status != DocumentStatus.QUEUED:  # a page was claimed (so its jobs arrived), or it ended
            mark_jobs_unsent(document, None)
            continue
        if document.id not in sent_now:
            if document.split_at is None:
                mark_split_sent(document, now)
                enqueue(split_job(document))
            else:
                pages = list(session.execute(sa.select(Page).where(
                    Page.document_id == document.id, Page.status == PageStatus.QUEUED)
                    .order_by(Page.index)).scalars())
                mark_pages_sent(pages, now)
                for job in chunk_jobs(document, [(p.index, p.source_key or document.source_key,
                                                  p.engine or document.engine) for p in pages], settings):
                    enqueue(job)
        # Sent again after another grace if this pass dies before its own send; cleared once it is out.
        mark_jobs_unsent(document, now)
        mark_sent(db, document.id)
        sent += 1
    return sent


class StopFlag(Protocol):
    """What `reconcile_forever` polls to end its loop, e.g. a `threading.Event`."""

    def is_set(self) -> bool: ...


def reconcile_forever(settings: Settings, app: Celery, *, stop: StopFlag | None = None) -> None:
    """`pagemill reconcile --loop`: one pass every `reconciler.interval_s` seconds, surviving any error."""
    client = redis.Redis.from_url(settings.resolved_redis_url(), socket_timeout=10)
    next_sweep = time.monotonic()
    while stop is None or not stop.is_set():
        record_rss("reconciler")
        try:
            reconcile_once(settings, app, client)
        except Exception as exc:  # noqa: BLE001 - the next pass tries again; a dead reconciler is worse
            log.warning("reconcile.error", error=str(exc))
        if time.monotonic() >= next_sweep:
            next_sweep = time.monotonic() + settings.retention.sweep_interval_s
            try:
                retention.sweep(settings, get_store(settings))
            except Exception as exc:  # noqa: BLE001 - same: try again at the next sweep
                log.warning("retention.error", error=str(exc))
        deadline = time.monotonic() + settings.reconciler.interval_s
        while time.monotonic() < deadline and (stop is None or not stop.is_set()):
            time.sleep(0.2)
