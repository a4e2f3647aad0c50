"""Queues, task names, the Celery app on Redis, and the one way to send a job: `enqueue(job)` into the outbox.

The gateway sends tasks by name; it imports no worker code. Every producer (the gateway, the worker's tasks,
the reconciler, webhook retries) calls `enqueue`; the unit of work it runs in (`outbox(app)`) sends the jobs
after the commit (see `services.core.outbox`), each with its send time and its fair-share priority.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

import redis
from celery import Celery, Task
from kombu.entity import Queue as KombuQueue  # = kombu.Queue, which kombu does not export to type checkers
from kombu.exceptions import BatchPublishError

from services.core import broker as broker_transport
from services.core import cache, notices
from services.core import outbox as _outbox
from services.core.contracts import ChunkPage, DocumentTask, PageTask, timestamp, to_dict
from services.core.db.models import Document
from services.core.db.session import get_autocommit_sessionmaker
from services.core.logging import get_logger
from services.core.pdf import PDF, PNG
from services.core.settings import Settings

log = get_logger(__name__)

# Every message carries its send time, so the queue exporter can tell how long the oldest one has waited.
SENT_AT_HEADER = "pagemill_sent_at"


class Queue(StrEnum):
    PAGES_GPU = "pages.gpu"
    PAGES_CPU = "pages.cpu"
    DOCUMENTS = "documents"  # split a document into page jobs
    RESULTS = "results"  # assemble finished documents
    WEBHOOKS = "webhooks"


class TaskName(StrEnum):
    SPLIT_DOCUMENT = "pagemill.worker.split_document"
    PARSE_PAGE = "pagemill.worker.parse_page"
    ASSEMBLE_DOCUMENT = "pagemill.results.assemble_document"
    DELIVER_WEBHOOK = "pagemill.results.deliver_webhook"


# Redis priorities: 0 is served first. See `services.core.fairness` for who gets which.
PRIORITY_STEPS = (0, 3, 6, 9)
PRIORITY_SEP = "\x06\x16"


def redis_lists(queue: Queue | str) -> list[str]:
    """The Redis lists behind one queue, one per priority step (for queue-depth gauges)."""
    name = str(queue)
    return [name if step == 0 else f"{name}{PRIORITY_SEP}{step}" for step in PRIORITY_STEPS]


PAGE_QUEUES = (Queue.PAGES_CPU, Queue.PAGES_GPU)  # the queues of page jobs: chunked, their workers announce slots


def page_queue(engine: str) -> Queue:
    return Queue.PAGES_GPU if engine == "vllm" else Queue.PAGES_CPU


def make_celery(settings: Settings) -> Celery:
    broker = settings.resolved_redis_url()
    app = Celery("pagemill", broker=broker, set_as_current=False)
    if broker.startswith("redis://"):  # kombu's Redis transport with a fix for a channel closed late
        app.conf.broker_transport = broker_transport.TRANSPORT
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,  # the database says what is done; nothing ever waits on a task result
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=Queue.PAGES_CPU.value,
        task_queues=[KombuQueue(q.value, routing_key=q.value) for q in Queue],
        task_create_missing_queues=True,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            # A message a dead worker had taken comes back after this long. It must outlast the slowest page
            # (a live page's lease makes a second delivery skip it); the reconciler is much faster.
            "visibility_timeout": settings.worker.longest_page_s + 300,
            "socket_timeout": 10,
            "socket_connect_timeout": 5,
            # Fair share: each queue is a list per priority step, and a worker pops the lowest step first.
            "priority_steps": list(PRIORITY_STEPS),
            "sep": PRIORITY_SEP,
        },
        broker_pool_limit=10,
        worker_send_task_events=False,
        task_send_sent_event=False,
        worker_hijack_root_logger=False,
        worker_disable_rate_limits=True,
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )
    return app


@lru_cache(maxsize=4)
def _cached_celery(redis_url: str) -> Celery:
    return make_celery(Settings(redis_url=redis_url))


def get_celery(settings: Settings) -> Celery:
    return _cached_celery(settings.resolved_redis_url())


@dataclass(slots=True)
class Job:
    name: TaskName
    queue: Queue
    payload: dict[str, Any]
    priority: int = 0  # the fair-share step (services.core.fairness): 0 is served first
    countdown: float | None = None  # held back this long (a webhook's next attempt, a page's retry)
    soft_time_limit: float | None = None  # this message's own limit (a chunk of pages: the page limit per page)


# Seconds between a task's soft time limit (it is told to stop) and its hard one (its process is killed).
HARD_LIMIT_GRACE_S = 30


@dataclass(frozen=True, slots=True)
class SentMark:
    """The document's first jobs are in this batch: once they are published, its `jobs_unsent_since` is
    cleared, so the reconciler knows they went out (see `mark_sent`)."""

    database_url: str
    document_id: str


def mark_sent(database_url: str, document_id: str) -> None:
    """Called with a new document's first jobs: when they are published (after the commit), one UPDATE clears
    the document's `jobs_unsent_since`. A process that dies between the commit and the send leaves it set, and
    the reconciler sends them a grace later (`reconciler.unsent_grace_s`) instead of a queued lease later."""
    _outbox.enqueue(SentMark(database_url, document_id))


Outgoing = Job | notices.DocumentNotice | SentMark


def send_jobs(app: Celery, jobs: Sequence[Outgoing]) -> None:
    """The only place a task is sent: one producer for the batch, the send-time header on every message, and
    on Redis every message of the batch in one pipeline (one round trip). A pipeline that fails is not retried
    by kombu (some of its writes may have landed): its messages are sent again one by one, with kombu's
    retries; a page, split or assembly message that arrives twice is skipped by its claim. Document notices
    of the batch are published on the broker's Redis after the tasks, even when sending the tasks failed, by
    the process's notice thread (a notice is best effort and never raises: `services.core.notices`)."""
    tasks = [job for job in jobs if isinstance(job, Job)]
    try:
        if tasks:
            with app.producer_or_acquire() as producer:
                try:
                    with producer.batch(max_size=PUBLISH_BATCH):
                        _send(app, producer, tasks)
                except (BatchPublishError, *producer.connection.connection_errors) as exc:
                    if not producer.supports_batch_publish:  # sent one by one already, with kombu's retries
                        raise
                    log.warning("queue.batch_send_failed", jobs=len(tasks), error=f"{type(exc).__name__}: {exc}")
                    _send(app, producer, tasks)
        _clear_marks([job for job in jobs if isinstance(job, SentMark)])  # only once the tasks are out
    finally:
        document_notices = [job for job in jobs if isinstance(job, notices.DocumentNotice)]
        if document_notices:
            notices.publish_soon(str(app.conf.broker_url), document_notices)


# The documents whose first jobs this process has published and whose marks are not cleared yet, by database;
# `_clearing` is held by the one thread clearing them (`_clear_marks`).
_unsent_lock = threading.Lock()
_unsent: dict[str, set[str]] = {}
_clearing = threading.Lock()


def _clear_marks(marks: Sequence[SentMark]) -> None:
    """One UPDATE per database for the marks of this batch and of the batches other threads published
    meanwhile (a group commit: while one thread's UPDATE runs, the uploads that finish behind it leave their
    marks to it, instead of each waiting for the write lock with a statement of its own). Outside the outbox's
    transactions (it runs while the outbox flushes); a failure is logged, not raised: the jobs are out, and the
    reconciler sends them once more after the grace, which their claims then skip."""
    with _unsent_lock:
        for mark in marks:
            _unsent.setdefault(mark.database_url, set()).add(mark.document_id)
    # Whoever holds `_clearing` looks at `_unsent` again after releasing it, so a mark added while it cleared
    # (by a thread that then found `_clearing` taken) is never left behind.
    while _clearing.acquire(blocking=False):
        try:
            with _unsent_lock:
                batch = {url: sorted(ids) for url, ids in _unsent.items()}
                _unsent.clear()
            for url, document_ids in batch.items():
                _clear_unsent(url, document_ids)
        finally:
            _clearing.release()
        with _unsent_lock:
            if not _unsent:
                return


def _clear_unsent(url: str, document_ids: list[str]) -> None:
    # at call time: the lifecycle package imports this module (a page's queue) as it loads
    from services.core.lifecycle.marks import clear_unsent

    try:
        with get_autocommit_sessionmaker(url)() as session:
            clear_unsent(session, document_ids)
            session.commit()
    except Exception as exc:  # noqa: BLE001 - see `_clear_marks`
        log.warning("queue.sent_mark_failed", documents=len(document_ids), error=f"{type(exc).__name__}: {exc}")


# Messages per pipeline: a batch larger than this goes out in several round trips.
PUBLISH_BATCH = 500


def _send(app: Celery, producer: Any, tasks: Sequence[Job]) -> None:
    for job in tasks:
        limits = {} if job.soft_time_limit is None else {
            "soft_time_limit": job.soft_time_limit, "time_limit": job.soft_time_limit + HARD_LIMIT_GRACE_S}
        app.send_task(job.name.value, args=[job.payload], queue=job.queue.value, routing_key=job.queue.value,
                      producer=producer, priority=job.priority, countdown=job.countdown,
                      headers={SENT_AT_HEADER: time.time()}, **limits)


def enqueue(job: Job) -> None:
    """Sends `job` once the current transaction commits; dropped if it rolls back (`services.core.outbox`)."""
    _outbox.enqueue(job)


@contextmanager
def outbox(app: Celery | Callable[[], Celery]) -> Iterator[_outbox.Outbox]:
    """One unit of work whose jobs go out through `app` (or the app a callable builds on first send)."""

    def send(jobs: Sequence[Outgoing]) -> None:
        send_jobs(app if isinstance(app, Celery) else app(), jobs)

    with _outbox.open_outbox(send) as box:
        yield box


class OutboxTask(Task):  # type: ignore[misc]  # Celery is untyped
    """A task that is a unit of work of the outbox: what it enqueues is sent after its commits."""

    abstract = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with outbox(self.app):
            return super().__call__(*args, **kwargs)


# Job builders: the only places task payloads are made, each checked against its proto contract.


def page_media_type(document: Document, key: str) -> str:
    if key == document.source_key:
        return document.media_type
    return PDF if key.endswith(".pdf") else PNG


def page_job(document: Document, index: int, source_key: str, *, engine: str | None = None) -> Job:
    return chunk_job(document, [(index, source_key)], engine=engine)


def chunk_job(document: Document, pages: Sequence[tuple[int, str]], *, engine: str | None = None,
              page_timeout_s: float | None = None, prior_retries: int = 0,
              countdown: float | None = None) -> Job:
    """One message for these pages (index, source key) of the document; one page is a plain page message.
    A chunk's time limit is `page_timeout_s` per page (the task's own limit is one page's)."""
    engine = engine or document.engine
    options = document.options or {}
    index, source_key = pages[0]
    task = PageTask(document_id=document.id, page_index=index, source_key=source_key,
                    media_type=page_media_type(document, source_key), engine=engine, mode=document.mode,
                    request_id=document.request_id or "", tenant_id=document.tenant_id or "",
                    enqueued_at=timestamp(), cache_lookup=cache.lookup_wanted(options),
                    cache_store=cache.store_wanted(options), cache_scope=cache.scope(options),
                    prior_retries=prior_retries)
    if len(pages) > 1:
        task.chunk.extend(ChunkPage(page_index=i, source_key=key) for i, key in pages)
    limit = page_timeout_s * len(pages) if page_timeout_s is not None and len(pages) > 1 else None
    return Job(TaskName.PARSE_PAGE, page_queue(engine), to_dict(task), priority=document.priority or 0,
               countdown=countdown, soft_time_limit=limit)


def chunk_jobs(document: Document, pages: Sequence[tuple[int, str, str]], settings: Settings, *,
               group: int = 1) -> list[Job]:
    """The messages for these pages (index, source key, engine) of one document: per engine, chunks of
    `chunk_size` pages in index order. With `group` > 1 (a vLLM preset that reads several pages per request),
    a GPU chunk never cuts a request group (pages `k*group .. k*group + group - 1`) in two."""
    jobs = []
    for engine in sorted({engine for _, _, engine in pages}):
        mine = sorted((index, key) for index, key, e in pages if e == engine)
        queue = page_queue(engine)
        # Without announcements (no worker up yet): one worker's slots. A GPU worker runs `engine.max_in_flight`
        # threads (services/cli/components.py), a cpu one its processes.
        workers = settings.engine.max_in_flight if queue == Queue.PAGES_GPU else settings.worker.concurrency
        waiting, announced = queue_load(settings, queue)
        size = chunk_size(len(mine), settings, waiting=waiting, workers=announced or workers)
        step = group if queue == Queue.PAGES_GPU else 1
        current: list[tuple[int, str]] = []
        for index, key in mine:
            if len(current) >= size and index % step == 0:
                jobs.append(chunk_job(document, current, engine=engine, page_timeout_s=settings.worker.page_timeout_s))
                current = []
            current.append((index, key))
        if current:
            jobs.append(chunk_job(document, current, engine=engine, page_timeout_s=settings.worker.page_timeout_s))
    return jobs


def chunk_size(pages: int, settings: Settings, *, waiting: int, workers: int | None = None) -> int:
    """Pages per message: `worker.chunk_max_pages`, fewer while workers may be idle (fewer messages waiting on
    the queue than `workers`: the slots the queue's consumers announce, by default `worker.concurrency`), so a
    document's pages spread over every idle one."""
    idle = max(1, (workers or settings.worker.concurrency) - waiting)
    return max(1, min(settings.worker.chunk_max_pages, -(-pages // idle)))


@lru_cache(maxsize=4)
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


# Each worker consuming a page queue announces its slots (processes or threads) there, in a sorted set whose
# scores are the times its announcements expire; it renews them while it runs and withdraws them when it stops.
CONSUMERS_KEY = "pagemill:consumers:{queue}"
CONSUMER_TTL_S = 30.0


def _consumer(node: str, slots: int) -> str:
    return f"{slots} {node}"


def announce_consumer(client: redis.Redis, queues: Sequence[str], node: str, slots: int,
                      ttl_s: float = CONSUMER_TTL_S) -> None:
    """This worker consumes these queues with `slots` slots, for the next `ttl_s` seconds. Announcements that
    expired (their worker died without withdrawing them) are dropped on the way."""
    now = time.time()
    with client.pipeline(transaction=False) as pipe:
        for queue in queues:
            key = CONSUMERS_KEY.format(queue=queue)
            pipe.zadd(key, {_consumer(node, slots): now + ttl_s})
            pipe.zremrangebyscore(key, "-inf", now)
        pipe.execute()


def withdraw_consumer(client: redis.Redis, queues: Sequence[str], node: str, slots: int) -> None:
    with client.pipeline(transaction=False) as pipe:
        for queue in queues:
            pipe.zrem(CONSUMERS_KEY.format(queue=queue), _consumer(node, slots))
        pipe.execute()


def _slots(members: Sequence[bytes]) -> int:
    return sum(int(member.split(b" ", 1)[0]) for member in members)


def consumer_slots(client: redis.Redis, queues: Sequence[Queue] = PAGE_QUEUES) -> dict[str, int]:
    """The slots the live consumers of each page queue announce, in one round trip."""
    now = time.time()
    with client.pipeline(transaction=False) as pipe:
        for queue in queues:
            pipe.zrangebyscore(CONSUMERS_KEY.format(queue=queue), now, "+inf")
        return {queue.value: _slots(members) for queue, members in zip(queues, pipe.execute(), strict=True)}


def queue_load(settings: Settings, queue: Queue) -> tuple[int, int]:
    """Messages waiting on a queue (every priority step) and the slots its live consumers announce, in one round
    trip; (0, 0) when Redis does not answer or is not configured (the jobs will not go out then either, and the
    reconciler sends them later)."""
    if not settings.redis_url:
        return 0, 0
    try:
        with _redis(settings.resolved_redis_url()).pipeline(transaction=False) as pipe:
            for name in redis_lists(queue):
                pipe.llen(name)
            pipe.zrangebyscore(CONSUMERS_KEY.format(queue=queue), time.time(), "+inf")
            *lengths, consumers = pipe.execute()
    except redis.RedisError:
        return 0, 0
    return sum(int(n) for n in lengths), _slots(consumers)


def split_job(document: Document) -> Job:
    task = DocumentTask(document_id=document.id, request_id=document.request_id or "")
    return Job(TaskName.SPLIT_DOCUMENT, Queue.DOCUMENTS, to_dict(task))


def assemble_job(document_id: str, request_id: str | None) -> Job:
    task = DocumentTask(document_id=document_id, request_id=request_id or "")
    return Job(TaskName.ASSEMBLE_DOCUMENT, Queue.RESULTS, to_dict(task))
