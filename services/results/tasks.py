"""The results service's Celery tasks: assemble a finished document, deliver a webhook."""

from __future__ import annotations

from typing import Any

from celery import Celery, Task

from services.core.contracts import DocumentTask, WebhookTask, from_dict
from services.core.logging import bind_request_id
from services.core.queues import TaskName
from services.core.retry import is_retryable
from services.core.settings import Settings
from services.core.storage import get_store
from services.results.assemble import assemble_document
from services.results.webhooks import deliver


def register_results_tasks(app: Celery, settings: Settings) -> None:
    @app.task(name=TaskName.ASSEMBLE_DOCUMENT.value, bind=True, acks_late=True, reject_on_worker_lost=True,
              max_retries=settings.worker.max_retries)
    def assemble_document_task(self: Task, payload: dict[str, Any]) -> str | None:
        job = from_dict(DocumentTask, payload)
        bind_request_id(job.request_id, document_id=job.document_id)
        try:
            return assemble_document(job.document_id, settings, get_store(settings))
        except Exception as exc:
            if is_retryable(exc) and self.request.retries < settings.worker.max_retries:
                raise self.retry(countdown=settings.worker.retry_backoff_s * 2**self.request.retries, exc=exc) from exc
            raise  # the reconciler claims the assembly again once its lease runs out

    # No Celery retries: a failed attempt is recorded and the next one scheduled by `deliver` itself.
    @app.task(name=TaskName.DELIVER_WEBHOOK.value, bind=True, acks_late=True, reject_on_worker_lost=True,
              soft_time_limit=settings.webhooks.timeout_s + 30, time_limit=settings.webhooks.timeout_s + 60)
    def deliver_webhook_task(self: Task, payload: dict[str, Any]) -> str:
        job = from_dict(WebhookTask, payload)
        return deliver(settings, job.delivery_id, self.app)
