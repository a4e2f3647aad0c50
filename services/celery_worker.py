"""Starting a Celery worker with every task of the services it serves, plus its metrics endpoint."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

import redis
from celery import Task
from celery.signals import task_postrun, worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown

from services.core.logging import configure_logging
from services.core.metrics import TASKS, initialise_worker_series, record_rss
from services.core.metrics import start_metrics_server as _start_metrics_server
from services.core.queues import (
    CONSUMER_TTL_S,
    PAGE_QUEUES,
    Queue,
    announce_consumer,
    make_celery,
    withdraw_consumer,
)
from services.core.settings import Settings
from services.results.tasks import register_results_tasks
from services.worker.tasks import register_worker_tasks


@worker_process_shutdown.connect
def _mark_process_dead(pid: int | None = None, **_: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


@worker_process_init.connect
def _record_start_rss(**_: Any) -> None:
    record_rss("worker")


@task_postrun.connect
def _count_task(task: Task | None = None, state: str | None = None, **_: Any) -> None:
    """Every task run that ended, by queue: "is anybody consuming queue X" is a rate over this."""
    delivery = getattr(getattr(task, "request", None), "delivery_info", None) or {}
    queue = delivery.get("routing_key") or delivery.get("queue") or "unknown"
    TASKS.labels(task=getattr(task, "name", "unknown"), queue=queue, state=state or "unknown").inc()
    record_rss("worker")  # after each page: where an image bomb or a leak shows


def start_metrics_server(port: int) -> None:
    _start_metrics_server(port)


def preload_assembly(settings: Settings) -> None:
    """Loads the chunk tokenizer's vocabulary (about a second) in the main process, before the pool forks: every
    pool process, and each one that replaces a process over `max_memory_mb`, starts with it instead of spending
    that second on its first assembly."""
    from services.core.settings import OutputFormat
    from services.results.render.chunks import encoding

    if OutputFormat.CHUNKS in settings.outputs.formats:
        encoding(settings.outputs.chunk_tokenizer.value)


class SlotAnnouncer:
    """From the moment the worker consumes until it stops, its main process announces the slots it has for the
    page queues it consumes, renewed every third of their lifetime (`services.core.queues.announce_consumer`):
    a document's pages are chunked by how many slots the whole fleet has idle, not by one worker's settings."""

    def __init__(self, redis_url: str, queues: list[str], slots: int) -> None:
        self.redis_url, self.slots = redis_url, slots
        self.queues = [q for q in queues if q in PAGE_QUEUES]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, sender: Any = None, **_: Any) -> None:  # worker_ready: sender is the worker's consumer
        if self.queues and self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(sender.hostname,), daemon=True,
                                            name="pagemill-slots")
            self._thread.start()

    def stop(self, **_: Any) -> None:  # worker_shutdown
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self, node: str) -> None:
        client = redis.Redis.from_url(self.redis_url, socket_timeout=5, socket_connect_timeout=5)
        while True:
            with contextlib.suppress(redis.RedisError):  # Redis away: the announcement expires, and comes back
                announce_consumer(client, self.queues, node, self.slots)
            if self._stop.wait(CONSUMER_TTL_S / 3):
                break
        with contextlib.suppress(redis.RedisError):
            withdraw_consumer(client, self.queues, node, self.slots)


def run_worker(settings: Settings, *, queues: list[str], concurrency: int | None, pool: str,
               metrics_port: int | None, name: str | None) -> None:
    configure_logging(json=settings.log_json, level=settings.log_level)
    app = make_celery(settings)
    register_worker_tasks(app, settings)
    register_results_tasks(app, settings)
    app.conf.worker_max_memory_per_child = settings.worker.max_memory_mb * 1024
    initialise_worker_series(settings.engine.kind.value)
    if Queue.RESULTS.value in queues:
        preload_assembly(settings)
    if metrics_port:
        start_metrics_server(metrics_port)
    if settings.engine.prepare_processes and pool == "threads":
        # The GPU worker's page-preparing processes start with it, not with its first pages. Threads only: a
        # prefork worker would fork its pool's children from a process that already runs the pool's threads.
        from services.worker.pipeline.prepare import page_preparer

        def warm(**_: Any) -> None:
            preparer = page_preparer(settings)
            if preparer is not None:
                preparer.warm()

        worker_ready.connect(warm, weak=False)
    slots = concurrency or settings.worker.concurrency
    announcer = SlotAnnouncer(settings.resolved_redis_url(), queues, slots)
    worker_ready.connect(announcer.start, weak=False)
    worker_shutdown.connect(announcer.stop, weak=False)
    argv = ["worker", "-Q", ",".join(queues), "-c", str(slots),
            "--pool", pool, "-l", settings.log_level, "--without-gossip", "--without-mingle", "--without-heartbeat"]
    if name:
        argv += ["-n", name]
    app.worker_main(argv)
