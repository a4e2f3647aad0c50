"""Starting a Celery worker with every task of the services it serves, plus its metrics endpoint."""

from __future__ import annotations

import os
from typing import Any

from celery import Task
from celery.signals import task_postrun, worker_process_init, worker_process_shutdown

from services.core.logging import configure_logging
from services.core.metrics import TASKS, initialise_worker_series, record_rss
from services.core.metrics import start_metrics_server as _start_metrics_server
from services.core.queues import Queue, make_celery
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
    argv = ["worker", "-Q", ",".join(queues), "-c", str(concurrency or settings.worker.concurrency),
            "--pool", pool, "-l", settings.log_level, "--without-gossip", "--without-mingle", "--without-heartbeat"]
    if name:
        argv += ["-n", name]
    app.worker_main(argv)
