"""The worker's Celery tasks: split a document, parse a page. Arguments are proto payloads of ids and keys."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import Celery, Task
from celery.exceptions import SoftTimeLimitExceeded

from services.core.contracts import DocumentTask, PageElement, PageResult, PageTask, from_dict, to_datetime, to_dict
from services.core.db.models import DocumentStatus, PageStatus, utcnow
from services.core.db.session import session_scope
from services.core.elements import renumber, to_wire
from services.core.errors import EngineUnavailable, clip
from services.core.lifecycle import (
    Claim,
    PageClaim,
    PageFinish,
    claim_page,
    claim_pages,
    extend_lease,
    finalize_document,
)
from services.core.logging import bind_request_id, get_logger
from services.core.metrics import PAGE_STAGE, stage_timer
from services.core.queues import OutboxTask, TaskName
from services.core.retry import engine_outage_policy, is_retryable, page_policy, retry_task
from services.core.settings import Settings
from services.core.storage import ObjectStore, get_store
from services.worker import heartbeat, page_cache, page_source
from services.worker.engines import Engine, PageInput, load_engine
from services.worker.engines.base import is_generative
from services.worker.engines.vllm.serve import pages_per_request
from services.worker.page_ends import (
    Outcome,
    PageEnd,
    document_open,
    ended_by,
    failure,
    record,
    resend_alone,
    retry_failed,
)
from services.worker.pipeline.group import run_group
from services.worker.pipeline.page import PageOutcome, run_fallback, run_page
from services.worker.pipeline.prepare import page_preparer
from services.worker.routing import escalation_engine
from services.worker.split import split_document

log = get_logger(__name__)


# A database restart takes seconds: a claim that met one is asked again at most this long after.
CLAIM_RETRY_MAX_S = 10.0
# The pages of a chunk that ended are recorded together, at the latest this long after the last record: fast
# pages share one statement, a slow page is recorded (and counted in the document's progress) as it ends, and
# the chunk stops there if its document was cancelled meanwhile. Records are also at least RECORD_SHARE times
# as long apart as the last one took, so they never cost more than a twentieth of the chunk's time.
RECORD_EVERY_S = 0.1
RECORD_SHARE = 20
# Whether the document was cancelled is asked apart from the records, at most this often (one indexed SELECT):
# a cancel stops a chunk after the page running then, however far apart a slow database spaces the records.
OPEN_CHECK_EVERY_S = 0.1


def parse_page(task: Task, payload: dict[str, Any], settings: Settings) -> str:
    """One delivery of a page message: one page, or a chunk of one document's pages claimed in one statement,
    run in order (on a generative engine side by side, up to `engine.max_in_flight`), and finished in one
    statement. Each page keeps its own lease, deliveries and retries: a page that fails with a retryable error
    is sent again alone, its siblings are not redone. Returns what happened to each page, comma-separated in
    page order (for logs and tests): the `Outcome` words run, cached, skip, retry, failed."""
    job = from_dict(PageTask, payload)
    bind_request_id(job.request_id, document_id=job.document_id, page=job.page_index)
    pages = {ref.page_index: _page_task(job, ref.page_index, ref.source_key) for ref in job.chunk} \
        or {job.page_index: job}
    chunk = ChunkRun(settings, job, pages, _claim(task, settings, job, list(pages)),
                     task.request.retries + job.prior_retries)
    try:
        chunk.run()
    except SoftTimeLimitExceeded:
        chunk.timed_out()
    chunk.record()
    retry_failed(task, settings, job, pages, chunk.ends, chunk.retries)
    return ",".join(chunk.ends[index].outcome for index in sorted(chunk.ends))


def _page_task(job: PageTask, index: int, source_key: str) -> PageTask:
    """One page of a chunk as a page message of its own (what the cache and the engines are given)."""
    page = PageTask()
    page.CopyFrom(job)
    page.ClearField("chunk")
    page.page_index, page.source_key = index, source_key
    return page


def _claim(task: Task, settings: Settings, job: PageTask, indexes: list[int]) -> dict[int, PageClaim]:
    try:
        with session_scope(settings.resolved_database_url(), autocommit=True) as session:
            if len(indexes) == 1:  # one atomic statement: no BEGIN/COMMIT round trips
                return {indexes[0]: claim_page(session, job.document_id, indexes[0],
                                               lease_s=settings.worker.page_lease_s,
                                               max_deliveries=settings.worker.max_deliveries)}
            return claim_pages(session, job.document_id, indexes, lease_s=settings.worker.page_lease_s,
                               max_deliveries=settings.worker.max_deliveries)
    except Exception as exc:
        if not is_retryable(exc):
            raise
        # The database is away (a restart): keep the message, as for an engine outage, and ask again soon (a
        # restart takes seconds). Dropped, the pages would stay queued until `queued_lease_s` sends them again.
        log.warning("page.claim_retry", error=clip(str(exc)), retries=task.request.retries)
        policy = engine_outage_policy(settings)
        raise task.retry(countdown=min(policy.countdown(task.request.retries), CLAIM_RETRY_MAX_S), exc=exc,
                         max_retries=policy.max_retries) from exc


class ChunkRun:
    """The claimed pages of one delivery through their engine, each page's end in `ends` (keyed by page index).

    Pages run in order (`started` says how far a soft time limit let them get), or side by side on a generative
    engine (its server batches the requests in flight: a chunk must not serialise them). A preset that reads
    several pages per request gets the chunk's pages in its groups (`_groups`). Ended pages are recorded
    (`record`) as they become due: fast pages together, a slow page as it ends; between pages the chunk stops
    if its document was cancelled meanwhile. Every method that runs a page takes the page first."""

    def __init__(self, settings: Settings, job: PageTask, pages: dict[int, PageTask],
                 claims: dict[int, PageClaim], retries: int) -> None:
        self.settings, self.job, self.pages, self.claims, self.retries = settings, job, pages, claims, retries
        self.ends: dict[int, PageEnd] = {}
        self.started: list[int] = []
        self._recorded: set[int] = set()
        self._last_record = self._last_check = time.monotonic()
        self._record_every_s = RECORD_EVERY_S
        for index, claim in claims.items():
            if claim.outcome == Claim.SKIP:
                log.debug("page.skipped", document_id=job.document_id, index=index)
                self.ends[index] = PageEnd(Outcome.SKIP)
            elif claim.outcome == Claim.EXHAUSTED:
                self.ends[index] = failure(pages[index], "page_lost", f"the page was picked up {claim.deliveries} "
                                           "times without finishing (a worker crashed or timed out on it each time)")
            else:
                heartbeat.hold(settings, job.document_id, index)  # released when the task ends
        self.running = [index for index, claim in claims.items() if claim.outcome == Claim.RUN]

    def run(self) -> None:
        """The claimed pages through the engine their message names (loaded only when a page is to run)."""
        if not self.running:
            return
        engine = load_engine(self.pages[self.running[0]].engine or self.settings.engine.kind.value, self.settings)
        store = get_store(self.settings)
        generative = is_generative(engine)
        groups = _groups(self.running, pages_per_request(self.settings) if generative else 1)
        if len(groups) > 1 and generative:
            with ThreadPoolExecutor(min(len(groups), self.settings.engine.max_in_flight)) as pool:
                futures = [pool.submit(contextvars.copy_context().run, self._members,
                                       [self.pages[i] for i in group], engine, store) for group in groups]
                self.started.extend(self.running)
                for future in futures:
                    self.ends.update(future.result())
            return
        for group in groups:
            self.started.extend(group)
            self.ends.update(self._members([self.pages[i] for i in group], engine, store))
            if not self._record_if_due():  # cancelled: the rest are too
                self.ends.update({i: PageEnd(Outcome.SKIP) for i in self.running if i not in self.ends})
                return

    def timed_out(self) -> None:
        """The chunk's time ran out on the page running now; the pages after it never started: sent again alone."""
        for index in self.started:
            if index not in self.ends:
                self.ends[index] = failure(self.pages[index], "page_timeout",
                                           f"the page took longer than {self.settings.worker.page_timeout_s} s")
        never_started = [index for index in self.running if index not in self.ends]
        for index in never_started:
            self.ends[index] = PageEnd(Outcome.RETRY)
        resend_alone(self.settings, self.job, self.pages, never_started, self.retries, None)

    def record(self) -> None:
        """The pages that ended since the last record, recorded now (`page_ends.record`)."""
        record(self.settings, self.job, {i: end for i, end in self.ends.items() if i not in self._recorded},
               self.pages, self.retries)
        self._recorded.update(self.ends)

    def _record_if_due(self) -> bool:
        """Slow pages are recorded as they end (progress, and less to redo after a crash); fast ones together.
        False when the document was cancelled or deleted meanwhile: the chunk's other pages are not run."""
        now = time.monotonic()
        if now - self._last_record >= self._record_every_s:
            self.record()
            self._last_record = time.monotonic()
            # records spaced so that they cost at most a twentieth of the time (a busy machine, a slow database)
            self._record_every_s = max(RECORD_EVERY_S, RECORD_SHARE * (self._last_record - now))
        elif now - self._last_check < OPEN_CHECK_EVERY_S:
            return True
        self._last_check = time.monotonic()
        return document_open(self.settings, self.job.document_id)

    def _members(self, jobs: list[PageTask], engine: Engine, store: ObjectStore) -> dict[int, PageEnd]:
        """One request group's pages: each fetched and looked up in the result cache once; the misses alone
        through the engine, or several through one multi-page request (services/worker/pipeline/group.py)."""
        if len(jobs) == 1:
            return {jobs[0].page_index: self._one(jobs[0], engine, store)}
        ends: dict[int, PageEnd] = {}
        todo: list[tuple[PageTask, bytes, str | None]] = []
        for job in jobs:
            try:
                data, cached = self._fetched(job, store)
            except SoftTimeLimitExceeded:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure ends up recorded on its page, never lost
                ends[job.page_index] = ended_by(self.settings, job, exc, self.retries)
                continue
            if cached.hit:
                ends[job.page_index] = PageEnd(Outcome.CACHED, due=cached.due)
            else:
                todo.append((job, data, cached.store_key))
        if len(todo) == 1:
            job, data, cache_key = todo[0]
            ends[job.page_index] = self._parsed(job, engine, data, cache_key)
            return ends
        try:
            outcomes = self._group([PageInput(j.document_id, j.page_index, j.media_type, d) for j, d, _ in todo],
                                   engine, self._lease_keeper(jobs[0]))
            for (job, _, cache_key), outcome in zip(todo, outcomes, strict=True):
                ends[job.page_index] = _ended_run(job, self.claims[job.page_index], outcome, cache_key)
        except SoftTimeLimitExceeded:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure ends up recorded on its pages, never lost
            for job, _, _ in todo:
                if job.page_index not in ends:
                    ends[job.page_index] = ended_by(self.settings, job, exc, self.retries)
        return ends

    def _group(self, pages: list[PageInput], engine: Engine, keeper: Callable[[], None]) -> list[PageOutcome]:
        """The group's pages in page order through one request; outcomes in the order of `pages`."""
        if not is_generative(engine):  # `_groups` makes groups of several pages for generative engines only
            raise TypeError(f"the {engine.name} engine reads one page per request")
        order = sorted(range(len(pages)), key=lambda i: pages[i].index)
        try:
            if self.retries:
                engine.check_health()
            outcomes = run_group(engine, [pages[i] for i in order], self.settings, heartbeat=keeper)
        except EngineUnavailable:  # as for one page: an outage that outlasted its retries ends in the fallback
            if self.retries < self.settings.worker.unavailable_max_retries:
                raise
            outcomes = [run_fallback(pages[i], self.settings, "engine_unavailable") for i in order]
        by_index = {pages[i].index: outcome for i, outcome in zip(order, outcomes, strict=True)}
        return [by_index[page.index] for page in pages]

    def _one(self, job: PageTask, engine: Engine, store: ObjectStore) -> PageEnd:
        """One claimed page: fetched, looked up in the result cache, run, its result stored (not yet recorded)."""
        try:
            data, cached = self._fetched(job, store)
        except SoftTimeLimitExceeded:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure ends up recorded on the page, never lost
            return ended_by(self.settings, job, exc, self.retries)
        if cached.hit:
            return PageEnd(Outcome.CACHED, due=cached.due)
        return self._parsed(job, engine, data, cached.store_key)

    def _fetched(self, job: PageTask, store: ObjectStore) -> tuple[bytes, page_cache.PageCacheOutcome]:
        """The page's file, and its result-cache lookup (a hit has already finished the page)."""
        settings, page_number = self.settings, self.claims[job.page_index].page_number
        engine_name = job.engine or settings.engine.kind.value
        bind_request_id(job.request_id, document_id=job.document_id, page=job.page_index)
        if job.HasField("enqueued_at"):
            waited = (utcnow() - to_datetime(job.enqueued_at)).total_seconds()
            PAGE_STAGE.labels(stage="queue_wait", engine=engine_name).observe(max(0.0, waited))
        with stage_timer("fetch", engine_name):
            data = page_source.page_file(store, job.document_id, job.source_key, page_number,
                                         cache_mb=settings.worker.source_cache_mb)
        cached = page_cache.lookup(settings, store, job, page_number, data, engine_name)
        if cached.hit:
            log.info("page.cached")
        return data, cached

    def _parsed(self, job: PageTask, engine: Engine, data: bytes, cache_key: str | None) -> PageEnd:
        """A fetched page that missed the cache through its engine (and on to vLLM when the cpu route lost text)."""
        try:
            page = PageInput(job.document_id, job.page_index, job.media_type, data)
            outcome = self._run(page, engine, self._lease_keeper(job))
            escalation = escalation_engine(job.mode, self.settings, engine.name, outcome.output.warnings)
            if escalation is not None:  # the cpu engine lost text a configured vLLM may read
                log.info("page.escalated", engine=escalation, warnings=outcome.output.warnings)
                outcome = self._run(page, load_engine(escalation, self.settings), self._lease_keeper(job))
            return _ended_run(job, self.claims[job.page_index], outcome, cache_key)
        except SoftTimeLimitExceeded:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure ends up recorded on the page, never lost
            return ended_by(self.settings, job, exc, self.retries)

    def _run(self, page: PageInput, engine: Engine, keeper: Callable[[], None]) -> PageOutcome:
        """The page through its engine; an outage that outlasted its retries ends in the flagged cpu fallback."""
        try:
            if self.retries and is_generative(engine):
                engine.check_health()  # after an outage, ask before spending OCR on the page's anchor
            # A generative page's inputs come from this process's preparer, if it has one (the GPU worker)
            preparer = page_preparer(self.settings) if is_generative(engine) else None
            return run_page(engine, page, self.settings, heartbeat=keeper, preparer=preparer)
        except EngineUnavailable:
            if self.retries < self.settings.worker.unavailable_max_retries or engine.name == "cpu":
                raise
            return run_fallback(page, self.settings, "engine_unavailable")

    def _lease_keeper(self, job: PageTask) -> Callable[[], None]:
        """Between the attempts of a long page, push its lease forward so no other worker takes it over
        (thread pools, where GPU pages run, have no time limit that would end the page first)."""
        settings = self.settings

        def extend() -> None:
            with session_scope(settings.resolved_database_url(), autocommit=True) as session:
                if not extend_lease(session, job.document_id, job.page_index, lease_s=settings.worker.page_lease_s):
                    log.warning("page.lease_lost")  # another worker has it now; whichever finishes first counts

        return extend


def _groups(indexes: list[int], size: int) -> list[list[int]]:
    """The pages in request groups: for `size` pages per request, the pages `k*size .. k*size + size - 1` of a
    document that are here go together; one page each otherwise."""
    if size <= 1:
        return [[index] for index in indexes]
    grouped: dict[int, list[int]] = {}
    for index in sorted(indexes):
        grouped.setdefault(index // size, []).append(index)
    return list(grouped.values())


def _ended_run(job: PageTask, claim: PageClaim, outcome: PageOutcome, cache_key: str | None) -> PageEnd:
    """The page's result as its end: the result stored, and its row finished, with the chunk's next record."""
    output = outcome.output
    result = PageResult(
        document_id=job.document_id, page_index=job.page_index, page_number=claim.page_number,
        markdown=output.markdown, engine=output.engine, model=output.model, attempts=outcome.attempts,
        latency_ms=outcome.latency_ms, is_fallback=outcome.is_fallback, fallback_reason=outcome.fallback_reason,
        confidence=output.confidence or 0.0, signals=output.signals, finish_reason=output.finish_reason,
        prompt_tokens=output.prompt_tokens, completion_tokens=output.completion_tokens,
        width_px=output.width_px, height_px=output.height_px, rotation=output.rotation,
        width=output.width, height=output.height, warnings=list(output.warnings),
        elements=[from_dict(PageElement, to_wire(e)) for e in renumber(output.elements, claim.page_number)],
    )
    log.info("page.parsed", engine=output.engine, ms=outcome.latency_ms, chars=len(output.markdown),
             index=job.page_index)
    return PageEnd(Outcome.RUN, engine=output.engine, latency_ms=outcome.latency_ms, result=to_dict(result),
                    deliveries=claim.deliveries, finish=PageFinish(
        PageStatus.SUCCEEDED, engine=output.engine, model=output.model,
        attempts=outcome.attempts, latency_ms=outcome.latency_ms, is_fallback=outcome.is_fallback,
        confidence=output.confidence,
        details={"finish_reason": output.finish_reason, "prompt_tokens": output.prompt_tokens,
                 "completion_tokens": output.completion_tokens, "signals": output.signals,
                 "fallback_reason": outcome.fallback_reason, **output.details, **outcome.details},
        # A flagged fallback is not this engine's answer: a later upload tries the engine again.
        cache_key=None if outcome.is_fallback else cache_key,
    ))


def register_worker_tasks(app: Celery, settings: Settings) -> None:
    limits = {"soft_time_limit": settings.worker.page_timeout_s, "time_limit": settings.worker.page_timeout_s + 30}

    # Every task is a unit of work of the outbox (OutboxTask); retries follow services.core.retry. Not shared:
    # a task belongs to this app and its settings, not to every Celery app the process makes later.
    @app.task(name=TaskName.PARSE_PAGE.value, base=OutboxTask, bind=True, acks_late=True, reject_on_worker_lost=True,
              max_retries=engine_outage_policy(settings).max_retries, shared=False, **limits)
    def parse_page_task(self: Task, payload: dict[str, Any]) -> str:
        try:
            return parse_page(self, payload, settings)
        finally:
            heartbeat.release(settings)

    @app.task(name=TaskName.SPLIT_DOCUMENT.value, base=OutboxTask, bind=True, acks_late=True,
              reject_on_worker_lost=True, max_retries=page_policy(settings).max_retries, shared=False)
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
