"""Queues, task names and the Celery app on Redis. The gateway sends tasks by name; it imports no worker code."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any

from celery import Celery
from kombu.entity import Queue as KombuQueue  # = kombu.Queue, which kombu does not export to type checkers

from services.core import cache
from services.core.contracts import DocumentTask, PageTask, timestamp, to_dict
from services.core.db.models import Document
from services.core.pdf import PDF, PNG
from services.core.settings import Settings

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


def page_queue(engine: str) -> Queue:
    return Queue.PAGES_GPU if engine == "vllm" else Queue.PAGES_CPU


def make_celery(settings: Settings) -> Celery:
    app = Celery("pagemill", broker=settings.resolved_redis_url(), set_as_current=False)
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
    priority: int = 0


@dataclass(slots=True)
class JobBatch:
    """Jobs collected while a transaction is open, sent only after it commits.

    A job sent before its commit can run before its rows exist; a job never sent is found by the reconciler.
    """

    jobs: list[Job] = field(default_factory=list)

    def add(self, job: Job) -> None:
        self.jobs.append(job)

    def send(self, app: Celery) -> int:
        if not self.jobs:
            return 0
        with app.producer_or_acquire() as producer:
            for job in self.jobs:
                app.send_task(job.name.value, args=[job.payload], queue=job.queue.value,
                              routing_key=job.queue.value, producer=producer, priority=job.priority,
                              headers={SENT_AT_HEADER: time.time()})
        sent = len(self.jobs)
        self.jobs.clear()
        return sent


# Job builders: the only places task payloads are made, each checked against its proto contract.


def page_media_type(document: Document, key: str) -> str:
    if key == document.source_key:
        return document.media_type
    return PDF if key.endswith(".pdf") else PNG


def page_job(document: Document, index: int, source_key: str, *, engine: str | None = None) -> Job:
    engine = engine or document.engine
    options = document.options or {}
    task = PageTask(document_id=document.id, page_index=index, source_key=source_key,
                    media_type=page_media_type(document, source_key), engine=engine, mode=document.mode,
                    request_id=document.request_id or "", tenant_id=document.tenant_id or "",
                    enqueued_at=timestamp(), cache_lookup=cache.lookup_wanted(options),
                    cache_store=cache.store_wanted(options), cache_scope=cache.scope(options))
    return Job(TaskName.PARSE_PAGE, page_queue(engine), to_dict(task), priority=document.priority or 0)


def split_job(document: Document) -> Job:
    task = DocumentTask(document_id=document.id, request_id=document.request_id or "")
    return Job(TaskName.SPLIT_DOCUMENT, Queue.DOCUMENTS, to_dict(task))


def assemble_job(document_id: str, request_id: str | None) -> Job:
    task = DocumentTask(document_id=document_id, request_id=request_id or "")
    return Job(TaskName.ASSEMBLE_DOCUMENT, Queue.RESULTS, to_dict(task))
