"""The worker's Celery tasks: split a document, parse a page. Arguments are proto payloads of ids and keys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from celery import Celery, Task
from celery.exceptions import SoftTimeLimitExceeded

from services.core import events
from services.core.contracts import DocumentTask, PageElement, PageResult, PageTask, from_dict, to_datetime, to_dict
from services.core.db.models import DocumentStatus, Page, PageStatus, utcnow
from services.core.db.session import is_postgres, session_scope
from services.core.elements import renumber, to_wire
from services.core.errors import EngineUnavailable, PagemillError
from services.core.lifecycle import (
    Claim,
    PageFinish,
    claim_page,
    extend_lease,
    finalize_document,
    finish_page,
    release_page,
)
from services.core.logging import bind_request_id, get_logger
from services.core.metrics import PAGE_LATENCY, PAGE_RETRIES, PAGE_STAGE, PAGES_TOTAL, stage_timer
from services.core.pdf import PDF, PNG
from services.core.queues import OutboxTask, TaskName, assemble_job, enqueue
from services.core.retry import engine_outage_policy, is_retryable, page_policy, retry_task
from services.core.settings import Settings
from services.core.storage import ObjectStore, get_store, page_result_key
from services.worker import heartbeat, page_cache
from services.worker.engines import Engine, PageInput, load_engine
from services.worker.multipage import run_group
from services.worker.pipeline import PageOutcome, run_fallback, run_page
from services.worker.routing import escalation_engine
from services.worker.split import split_document
from services.worker.vllm_serve import pages_per_request

log = get_logger(__name__)


# A database restart takes seconds: a claim that met one is asked again at most this long after.
CLAIM_RETRY_MAX_S = 10.0


def parse_page(task: Task, payload: dict[str, Any], settings: Settings) -> str:
    """One delivery of one page. Returns what happened (for logs and tests): run, cached, skip, retry, failed."""
    job = from_dict(PageTask, payload)
    bind_request_id(job.request_id, document_id=job.document_id, page=job.page_index)
    db = settings.resolved_database_url()
    try:
        with session_scope(db, autocommit=True) as session:  # one atomic statement: no BEGIN/COMMIT round trips
            claim = claim_page(session, job.document_id, job.page_index, lease_s=settings.worker.page_lease_s,
                               max_deliveries=settings.worker.max_deliveries)
    except Exception as exc:
        if not is_retryable(exc):
            raise
        # The database is away (a restart): keep the message, as for an engine outage, and ask again soon (a
        # restart takes seconds). Dropped, the page would stay queued until `queued_lease_s` sends it again.
        log.warning("page.claim_retry", error=str(exc)[:300], retries=task.request.retries)
        policy = engine_outage_policy(settings)
        raise task.retry(countdown=min(policy.countdown(task.request.retries), CLAIM_RETRY_MAX_S), exc=exc,
                         max_retries=policy.max_retries) from exc
    if claim.outcome == Claim.SKIP:
        log.debug("page.skipped", document_id=job.document_id, index=job.page_index)
        return "skip"
    if claim.outcome == Claim.RUN:
        heartbeat.hold(settings, job.document_id, job.page_index)  # released when the task ends
    if claim.outcome == Claim.EXHAUSTED:
        _fail(settings, job, "page_lost", f"the page was picked up {claim.deliveries} times without finishing "
                                          "(a worker crashed or timed out on it each time)")
        return "failed"
    engine_name = job.engine or settings.engine.kind.value
    if job.HasField("enqueued_at"):
        waited = (utcnow() - to_datetime(job.enqueued_at)).total_seconds()
        PAGE_STAGE.labels(stage="queue_wait", engine=engine_name).observe(max(0.0, waited))
    group: list[_Member] = []  # the other pages of a multi-page request this delivery claimed
    try:
        store = get_store(settings)
        with stage_timer("fetch", engine_name):
            data = store.get(job.source_key)
        cached = page_cache.lookup(settings, store, job, claim.page_number, data, engine_name)
        if cached.hit:
            log.info("page.cached")
            if cached.due:
                enqueue(assemble_job(job.document_id, job.request_id))
            return "cached"
        engine = load_engine(engine_name, settings)
        page = PageInput(job.document_id, job.page_index, job.media_type, data)
        group = _claim_group(settings, job, engine, engine_name)
        if group:
            members = [_Member(job, claim.page_number, data), *group]
            outcomes = _run_group(task, engine, [m.page for m in members], settings, _lease_keeper(settings, job))
            for member, outcome in zip(members, outcomes, strict=True):
                _store_page(settings, store, member.job, member.page_number, outcome,
                            cached.store_key if member.job is job else None)
            output = outcomes[0].output
        else:
            outcome = _run(task, engine, page, settings, heartbeat=_lease_keeper(settings, job))
            escalation = escalation_engine(job.mode, settings, engine.name, outcome.output.warnings)
            if escalation is not None:  # the cpu engine lost text a configured vLLM may read
                log.info("page.escalated", engine=escalation, warnings=outcome.output.warnings)
                outcome = _run(task, load_engine(escalation, settings), page, settings,
                               heartbeat=_lease_keeper(settings, job))
            _store_page(settings, store, job, claim.page_number, outcome, cached.store_key)
            output = outcome.output
    except SoftTimeLimitExceeded:
        _fail(settings, job, "page_timeout", f"the page took longer than {settings.worker.page_timeout_s} s")
        return "failed"
    except Exception as exc:  # every failure ends up recorded on the page, never lost
        # An engine outage has a retry budget of its own: pages wait it out instead of failing.
        unavailable = isinstance(exc, EngineUnavailable)
        policy = engine_outage_policy(settings) if unavailable else page_policy(settings)
        if is_retryable(exc) and policy.allows(task.request.retries):
            reason = getattr(exc, "code", type(exc).__name__)
            PAGE_RETRIES.labels(reason=reason).inc()
            log.warning("page.retry", reason=reason, error=str(exc), retries=task.request.retries)
            with session_scope(db) as session:
                release_page(session, job.document_id, job.page_index, reason=reason, refund_delivery=unavailable)
                for member in group:  # their own messages find them queued again (or the reconciler does)
                    release_page(session, job.document_id, member.job.page_index, reason=reason,
                                 refund_delivery=unavailable)
            raise retry_task(task, exc, policy) from exc
        if isinstance(exc, PagemillError):
            _fail(settings, job, exc.code, str(exc))
        else:
            log.exception("page.engine_error", error=str(exc))
            _fail(settings, job, "engine_error", f"{type(exc).__name__}: {exc}")
        return "failed"
    log.info("page.parsed", engine=output.engine, chars=len(output.markdown), group=len(group) + 1)
    return "run"


def _store_page(settings: Settings, store: ObjectStore, job: PageTask, page_number: int, outcome: PageOutcome,
                cache_key: str | None) -> None:
    """The page's result into the object store, then the page row finished (once) and the assembly queued when
    it was the document's last open page."""
    db = settings.resolved_database_url()
    output = outcome.output
    result = PageResult(
        document_id=job.document_id, page_index=job.page_index, page_number=page_number,
        markdown=output.markdown, engine=output.engine, model=output.model, attempts=outcome.attempts,
        latency_ms=outcome.latency_ms, is_fallback=outcome.is_fallback, fallback_reason=outcome.fallback_reason,
        confidence=output.confidence or 0.0, signals=output.signals, finish_reason=output.finish_reason,
        prompt_tokens=output.prompt_tokens, completion_tokens=output.completion_tokens,
        width_px=output.width_px, height_px=output.height_px, rotation=output.rotation, warnings=list(output.warnings),
        width=output.width, height=output.height,
        elements=[from_dict(PageElement, to_wire(e)) for e in renumber(output.elements, page_number)],
    )
    key = page_result_key(job.document_id, job.page_index)
    with stage_timer("store", output.engine):
        store.put(key, _json(result), content_type="application/json")
    with session_scope(db, autocommit=is_postgres(db)) as session:
        due = finish_page(session, job.document_id, job.page_index, PageFinish(
            PageStatus.SUCCEEDED, result_key=key, engine=output.engine, model=output.model,
            attempts=outcome.attempts, latency_ms=outcome.latency_ms, is_fallback=outcome.is_fallback,
            confidence=output.confidence,
            details={"finish_reason": output.finish_reason, "prompt_tokens": output.prompt_tokens,
                     "completion_tokens": output.completion_tokens, "signals": output.signals,
                     "fallback_reason": outcome.fallback_reason, **output.details, **outcome.details},
            # A flagged fallback is not this engine's answer: a later upload tries the engine again.
            cache_key=None if outcome.is_fallback else cache_key,
        ))
        if due:  # this delivery ended the document's last page: sent after this commit
            enqueue(assemble_job(job.document_id, job.request_id))
    events.record_progress_in_own_transaction(db, job.document_id, settings.webhooks.progress_interval_s)
    PAGES_TOTAL.labels(status="succeeded", engine=output.engine, mode=job.mode or "fast").inc()
    PAGE_LATENCY.labels(engine=output.engine).observe(outcome.latency_ms / 1000)


@dataclass(frozen=True, slots=True)
class _Member:
    """One page of a multi-page request: its job (made from the claimed page row), number and file."""

    job: PageTask
    page_number: int
    data: bytes

    @property
    def page(self) -> PageInput:
        return PageInput(self.job.document_id, self.job.page_index, self.job.media_type, self.data)


def _claim_group(settings: Settings, job: PageTask, engine: Engine, engine_name: str) -> list[_Member]:
    """For a preset with several pages per request: the other pages of this page's group (indices
    `k*n .. k*n + n - 1`) that this delivery could claim; [] when the engine reads one page per request. A page
    of the group that another worker holds, or that is routed elsewhere, is left to its own delivery."""
    size = pages_per_request(settings) if getattr(engine, "generative", False) else 1
    if size <= 1:
        return []
    start = job.page_index - job.page_index % size
    others = [i for i in range(start, start + size) if i != job.page_index]
    members: list[_Member] = []
    db = settings.resolved_database_url()
    with session_scope(db) as session:
        rows = {p.index: p for p in session.execute(sa.select(Page).where(
            Page.document_id == job.document_id, Page.index.in_(others))).scalars()}
    store = get_store(settings)
    for index in others:
        row = rows.get(index)
        if row is None or row.engine != engine_name or row.status != PageStatus.QUEUED or not row.source_key:
            continue
        with session_scope(db, autocommit=True) as session:
            claim = claim_page(session, job.document_id, index, lease_s=settings.worker.page_lease_s,
                               max_deliveries=settings.worker.max_deliveries)
        if claim.outcome != Claim.RUN or not claim.source_key:
            continue
        member_job = PageTask()
        member_job.CopyFrom(job)
        member_job.page_index, member_job.source_key = index, claim.source_key
        member_job.media_type = PDF if claim.source_key.endswith(".pdf") else PNG  # as the split wrote it
        heartbeat.hold_also(settings, {(job.document_id, index)})
        members.append(_Member(member_job, claim.page_number, store.get(claim.source_key)))
    return sorted(members, key=lambda m: m.job.page_index)


def _run_group(task: Task, engine: Engine, pages: list[PageInput], settings: Settings,
               keeper: Callable[[], None]) -> list[PageOutcome]:
    """The group's pages in page order through one request (services/worker/multipage.py); outcomes in the
    order of `pages`."""
    order = sorted(range(len(pages)), key=lambda i: pages[i].index)
    try:
        if task.request.retries:
            engine.check_health()
        outcomes = run_group(engine, [pages[i] for i in order], settings, heartbeat=keeper)
    except EngineUnavailable:  # as for one page: an outage that outlasted its retries ends in the cpu fallback
        if task.request.retries < settings.worker.unavailable_max_retries:
            raise
        outcomes = [run_fallback(pages[i], settings, "engine_unavailable") for i in order]
    by_index = {pages[i].index: outcome for i, outcome in zip(order, outcomes, strict=True)}
    return [by_index[page.index] for page in pages]


def _lease_keeper(settings: Settings, job: PageTask) -> Callable[[], None]:
    """Between the attempts of a long page, push its lease forward so no other worker takes it over
    (thread pools, where GPU pages run, have no time limit that would end the page first)."""

    def extend() -> None:
        with session_scope(settings.resolved_database_url(), autocommit=True) as session:
            if not extend_lease(session, job.document_id, job.page_index, lease_s=settings.worker.page_lease_s):
                log.warning("page.lease_lost")  # another worker has it now; whichever finishes first counts

    return extend


def _run(task: Task, engine: Engine, page: PageInput, settings: Settings,
         heartbeat: Callable[[], None] | None = None) -> PageOutcome:
    """The page through its engine; an outage that outlasted its retries ends in the flagged cpu fallback."""
    try:
        if task.request.retries and getattr(engine, "generative", False):
            engine.check_health()  # after an outage, ask before spending OCR on the page's anchor
        return run_page(engine, page, settings, heartbeat=heartbeat)
    except EngineUnavailable:
        if task.request.retries < settings.worker.unavailable_max_retries or engine.name == "cpu":
            raise
        return run_fallback(page, settings, "engine_unavailable")


def _fail(settings: Settings, job: PageTask, code: str, message: str) -> None:
    log.warning("page.failed", code=code, error=message)
    with session_scope(settings.resolved_database_url()) as session:
        due = finish_page(session, job.document_id, job.page_index,
                          PageFinish(PageStatus.FAILED, engine=job.engine, error_code=code, error_message=message))
        events.record_progress(session, job.document_id, settings.webhooks.progress_interval_s)
        if due:
            enqueue(assemble_job(job.document_id, job.request_id))
    PAGES_TOTAL.labels(status="failed", engine=job.engine or "unknown", mode=job.mode or "fast").inc()


def _json(message: PageResult) -> bytes:
    import json

    return json.dumps(to_dict(message), ensure_ascii=False).encode()


def register_worker_tasks(app: Celery, settings: Settings) -> None:
    limits = {"soft_time_limit": settings.worker.page_timeout_s, "time_limit": settings.worker.page_timeout_s + 30}

    # Every task is a unit of work of the outbox (OutboxTask); retries follow services.core.retry.
    @app.task(name=TaskName.PARSE_PAGE.value, base=OutboxTask, bind=True, acks_late=True, reject_on_worker_lost=True,
              max_retries=engine_outage_policy(settings).max_retries, **limits)
    def parse_page_task(self: Task, payload: dict[str, Any]) -> str:
        try:
            return parse_page(self, payload, settings)
        finally:
            heartbeat.release(settings)

    @app.task(name=TaskName.SPLIT_DOCUMENT.value, base=OutboxTask, bind=True, acks_late=True,
              reject_on_worker_lost=True, max_retries=page_policy(settings).max_retries)
    def split_document_task(self: Task, payload: dict[str, Any]) -> int:
        job = from_dict(DocumentTask, payload)
        bind_request_id(job.request_id, document_id=job.document_id)
        try:
            return split_document(job.document_id, settings, get_store(settings))
        except Exception as exc:
            if is_retryable(exc) and page_policy(settings).allows(self.request.retries):
                raise retry_task(self, exc, page_policy(settings)) from exc
            # Anything else would come back forever through the reconciler: end the document with the reason.
            log.exception("document.split_error", error=str(exc))
            with session_scope(settings.resolved_database_url()) as session:
                finalize_document(session, job.document_id, DocumentStatus.FAILED, error_code="split_failed",
                                  error_message=f"{type(exc).__name__}: {exc}")
            return 0
