"""The results service's Celery tasks: assemble a finished document, deliver a webhook."""

from __future__ import annotations

from typing import Any

from celery import Celery, Task

from services.core.contracts import DocumentTask, WebhookTask, from_dict
from services.core.db.models import DocumentStatus
from services.core.db.session import session_scope
from services.core.errors import DETAIL_CHARS, describe
from services.core.lifecycle import finalize_document
from services.core.logging import bind_request_id, get_logger
from services.core.queues import OutboxTask, TaskName
from services.core.retry import is_retryable, page_policy, retry_task
from services.core.settings import Settings
from services.core.storage import get_store
from services.results.assemble import assemble_document
from services.results.webhooks import deliver

log = get_logger(__name__)


def register_results_tasks(app: Celery, settings: Settings) -> None:
    # Every task is a unit of work of the outbox (OutboxTask); retries follow services.core.retry.
    @app.task(name=TaskName.ASSEMBLE_DOCUMENT.value, base=OutboxTask, bind=True, acks_late=True,
              reject_on_worker_lost=True, max_retries=page_policy(settings).max_retries)
    def assemble_document_task(self: Task, payload: dict[str, Any]) -> str | None:
        job = from_dict(DocumentTask, payload)
        bind_request_id(job.request_id, document_id=job.document_id)
        try:
            return assemble_document(job.document_id, settings, get_store(settings))
        except Exception as exc:
            if is_retryable(exc):
                if page_policy(settings).allows(self.request.retries):
                    raise retry_task(self, exc, page_policy(settings)) from exc
                raise  # a backend still down: the reconciler claims the assembly again once its lease runs out
            # Anything else would come back at every assembly lease, forever: end the document with the reason.
            log.exception("document.assemble_error", error=str(exc))
            with session_scope(settings.resolved_database_url()) as session:
                finalize_document(session, job.document_id, DocumentStatus.FAILED, error_code="assembly_failed",
                                  error_message=describe(exc, DETAIL_CHARS))
            return None

    # No Celery retries: attempts are counted in the database and `deliver` enqueues the next one itself
    # (services.core.retry.webhook_policy), so a redelivered or reconciled message keeps the same budget.
    @app.task(name=TaskName.DELIVER_WEBHOOK.value, base=OutboxTask, bind=True, acks_late=True,
              reject_on_worker_lost=True,
              soft_time_limit=settings.webhooks.timeout_s + 30, time_limit=settings.webhooks.timeout_s + 60)
    def deliver_webhook_task(self: Task, payload: dict[str, Any]) -> str:
        job = from_dict(WebhookTask, payload)
        return deliver(settings, job.delivery_id)
