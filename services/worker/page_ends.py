"""How the pages of a delivery end: their results stored, their rows finished together, retried or sent again."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, NamedTuple

import sqlalchemy as sa
from celery import Task
from celery.exceptions import SoftTimeLimitExceeded

from services.core import events
from services.core.contracts import PageTask
from services.core.db.models import DOCUMENT_FINAL, Document, PageStatus
from services.core.db.session import is_postgres, session_scope
from services.core.errors import EngineUnavailable, PagemillError
from services.core.lifecycle import PageFinish, finish_page, finish_pages, release_page, requeue_page
from services.core.logging import get_logger
from services.core.metrics import PAGE_LATENCY, PAGE_RETRIES, PAGES_TOTAL, stage_timer
from services.core.queues import assemble_job, chunk_job, enqueue
from services.core.retry import RetryPolicy, engine_outage_policy, is_retryable, page_policy, retry_task
from services.core.settings import Settings
from services.core.storage import ObjectNotFound, get_store, page_result_key, page_results_key

log = get_logger(__name__)


class Outcome(StrEnum):
    """What one delivery did with a page; `parse_page` returns these words to Celery (logs and tests)."""

    RUN = "run"  # parsed, its result stored
    CACHED = "cached"  # the result cache had it
    SKIP = "skip"  # not this delivery's to run (finished, cancelled, held elsewhere, its document gone)
    RETRY = "retry"  # released: sent again (alone) or retried by Celery
    FAILED = "failed"  # ended for good with an error code


class PageRetry(NamedTuple):
    """A retryable error a page ended with: the page is released and sent again under `policy`."""

    error: BaseException
    policy: RetryPolicy
    unavailable: bool  # an engine outage: its delivery is refunded


@dataclass(slots=True)
class PageEnd:
    """How one page of a delivery ended: its outcome, and what is left to record."""

    outcome: Outcome
    finish: PageFinish | None = None  # recorded with the chunk's other pages, in one statement
    due: bool = False  # a cache hit ended the document's last page (recorded by the cache itself)
    retry: PageRetry | None = None
    engine: str = ""
    latency_ms: int = 0
    result: dict[str, Any] | None = None  # the page's result, stored with the chunk's next record (`_store_results`)
    deliveries: int = 0


def ended_by(settings: Settings, job: PageTask, exc: Exception, retries: int) -> PageEnd:
    """How an error ends a page: skipped (its document deleted meanwhile), retried, or failed with its code."""
    if isinstance(exc, ObjectNotFound) and not document_open(settings, job.document_id):
        return PageEnd(Outcome.SKIP)  # deleted while its chunk ran: its files are gone
    # An engine outage has a retry budget of its own: pages wait it out instead of failing.
    unavailable = isinstance(exc, EngineUnavailable)
    policy = engine_outage_policy(settings) if unavailable else page_policy(settings)
    if is_retryable(exc) and policy.allows(retries):
        return PageEnd(Outcome.RETRY, retry=PageRetry(exc, policy, unavailable))
    if isinstance(exc, PagemillError):
        return failure(job, exc.code, str(exc))
    log.exception("page.engine_error", error=str(exc))
    return failure(job, "engine_error", f"{type(exc).__name__}: {exc}")


def document_open(settings: Settings, document_id: str) -> bool:
    with session_scope(settings.resolved_database_url(), autocommit=True) as session:
        status = session.execute(sa.select(Document.status).where(Document.id == document_id)).scalar()
    return status is not None and status not in DOCUMENT_FINAL


def failure(job: PageTask, code: str, message: str) -> PageEnd:
    log.warning("page.failed", code=code, error=message, index=job.page_index)
    return PageEnd(Outcome.FAILED, engine=job.engine, finish=PageFinish(
        PageStatus.FAILED, engine=job.engine, error_code=code, error_message=message))


def _store_results(settings: Settings, job: PageTask, pages: dict[int, PageTask], ends: dict[int, PageEnd],
                   retries: int) -> None:
    """The results of the pages that ended since the last record, in one object (a lone page: in its own), each
    page's finish then naming it. Creating an object costs more than writing it: a chunk writes few. When the
    store fails, the pages end as its error says (retried alone, or failed)."""
    done = sorted(index for index, end in ends.items() if end.result is not None)
    if not done:
        return
    if len(done) == 1:
        key, body = page_result_key(job.document_id, done[0]), ends[done[0]].result
    else:
        key = page_results_key(job.document_id, done[0], done[-1], ends[done[0]].deliveries)
        body = {"pages": [ends[index].result for index in done]}
    try:
        with stage_timer("store", job.engine or settings.engine.kind.value, pages=len(done)):
            get_store(settings).put(key, json.dumps(body, ensure_ascii=False).encode(),
                                    content_type="application/json")
    except SoftTimeLimitExceeded:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure ends up recorded on its pages, never lost
        for index in done:
            failed = ended_by(settings, pages[index], exc, retries)
            ends[index].outcome, ends[index].finish, ends[index].retry = failed.outcome, failed.finish, failed.retry
            ends[index].result = None
        return
    for index in done:
        end = ends[index]
        end.result = None
        if end.finish is not None:
            end.finish = replace(end.finish, result_key=key)


def record(settings: Settings, job: PageTask, ends: dict[int, PageEnd], pages: dict[int, PageTask],
            retries: int) -> None:
    """The chunk's ended pages in one transaction, after their results are stored: their rows in one statement,
    the document's counters, its progress event; the assembly is queued after the commit when they ended the
    document's last page."""
    _store_results(settings, job, pages, ends, retries)
    finishes = {index: end.finish for index, end in ends.items() if end.finish is not None}
    due = any(end.due for end in ends.values())
    url, interval_s = settings.resolved_database_url(), settings.webhooks.progress_interval_s
    if finishes:
        # PostgreSQL ends and counts the pages in one statement and claims the assembly in another, each atomic
        # alone: no BEGIN and COMMIT round trips (a crash between the two leaves the assembly to the reconciler,
        # which assembles documents whose pages all ended); its progress event, when one is due, in two more
        # statements (`events.record_progress_now`). SQLite counts in a second statement: one transaction for all.
        postgres = is_postgres(url)
        with session_scope(url, autocommit=postgres) as session:
            if len(finishes) == 1:
                [(index, finish)] = finishes.items()
                due = finish_page(session, job.document_id, index, finish) or due
            else:
                due = finish_pages(session, job.document_id, finishes) or due
            if due:  # this delivery ended the document's last page: sent after this commit (its final event
                # follows: no progress event)
                enqueue(assemble_job(job.document_id, job.request_id))
            elif not postgres:
                events.record_progress(session, job.document_id, interval_s)
        if postgres and not due and events.progress_worth_trying(job.document_id, interval_s):
            events.record_progress_now(url, job.document_id, interval_s)
    elif due:
        enqueue(assemble_job(job.document_id, job.request_id))
    for end in ends.values():
        if end.finish is None:
            continue
        status = "succeeded" if end.finish.status == PageStatus.SUCCEEDED else "failed"
        PAGES_TOTAL.labels(status=status, engine=end.engine or "unknown", mode=job.mode or "fast").inc()
        if status == "succeeded":
            PAGE_LATENCY.labels(engine=end.engine).observe(end.latency_ms / 1000)


def retry_failed(task: Task, settings: Settings, job: PageTask, pages: dict[int, PageTask],
                  ends: dict[int, PageEnd], retries: int) -> None:
    """Pages that failed with a retryable error go back to the queue. A lone page is retried by Celery (its
    message again, after the policy's wait); a page of a chunk is sent again alone, its siblings stay done."""
    failed = [(index, end.retry) for index, end in ends.items() if end.retry is not None]
    if not failed:
        return
    for index, retry in failed:
        reason = getattr(retry.error, "code", type(retry.error).__name__)
        PAGE_RETRIES.labels(reason=reason).inc()
        log.warning("page.retry", reason=reason, error=str(retry.error), retries=retries, index=index)
        with session_scope(settings.resolved_database_url()) as session:
            release_page(session, job.document_id, index, reason=reason, refund_delivery=retry.unavailable)
    if not job.chunk:
        first = failed[0][1]
        raise retry_task(task, first.error, first.policy) from first.error
    for index, retry in failed:
        resend_alone(settings, job, pages, [index], retries + 1, retry.policy.countdown(retries))


def resend_alone(settings: Settings, job: PageTask, pages: dict[int, PageTask], indexes: list[int],
                  prior_retries: int, countdown: float | None) -> None:
    """Pages of a chunk queued again, each in a message of its own (a page released, or never started)."""
    if not indexes:
        return
    with session_scope(settings.resolved_database_url()) as session:
        document = session.get(Document, job.document_id)
        if document is None:
            return
        for index in indexes:
            if requeue_page(session, job.document_id, index):  # not cancelled or ended meanwhile
                enqueue(chunk_job(document, [(index, pages[index].source_key)], engine=pages[index].engine,
                                  prior_retries=prior_retries, countdown=countdown))
