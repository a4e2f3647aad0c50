"""The one retry policy (services/core/retry.py): capped exponential waits with jitter, a budget for every
retried thing, and no failure that comes back forever."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from services.core.contracts import DocumentTask, to_dict
from services.core.db.models import Document, Page, PageStatus
from services.core.db.session import session_scope
from services.core.queues import TaskName, make_celery, outbox
from services.core.retry import RetryPolicy, page_policy, webhook_policy
from services.core.settings import Settings
from services.core.storage import get_store, page_result_key
from services.gateway.documents.service import create_document
from services.results.tasks import register_results_tasks
from tests.pdfs import stored_upload, text_page


def test_waits_double_up_to_the_cap_with_at_most_half_again_of_jitter() -> None:
    policy = RetryPolicy(base_s=2.0, max_s=120.0, max_retries=5)
    assert [policy.nominal_s(n) for n in range(8)] == [2, 4, 8, 16, 32, 64, 120, 120]
    for retries in (0, 3, 6, 10_000):  # no overflow however many retries an outage takes
        nominal = policy.nominal_s(retries)
        waits = [policy.countdown(retries) for _ in range(200)]
        assert all(nominal <= wait <= nominal * 1.5 for wait in waits)
        assert len({round(w, 6) for w in waits}) > 100  # spread: pages that failed together come back apart
    assert policy.allows(4) and not policy.allows(5)


def test_the_policies_come_from_the_settings() -> None:
    settings = Settings(worker={"retry_backoff_s": 0.5, "retry_backoff_max_s": 4, "max_retries": 2},
                        webhooks={"retry_backoff_s": 5, "retry_backoff_max_s": 3600, "max_attempts": 8})
    assert page_policy(settings) == RetryPolicy(0.5, 4.0, 2)
    assert webhook_policy(settings).max_retries == 7  # 8 attempts: the first and 7 retries
    assert webhook_policy(settings).nominal_s(2) == 20


def test_an_assembly_that_can_never_succeed_ends_the_document_failed(redis_server: str, sqlite_url: str,
                                                                     tmp_path: Path) -> None:
    """A page result that is not JSON is no blip: the document ends `failed` with the reason, instead of the
    reconciler claiming its assembly again at every lease, forever."""
    settings = Settings(redis_url=redis_server, database_url=sqlite_url, data_dir=tmp_path)
    store = get_store(settings)
    app = make_celery(settings)
    with outbox(app), session_scope(sqlite_url) as session:
        document = create_document(session, store, settings, stored_upload(text_page(2), tmp_path),
                                   tenant_id=None, request_id=None)
    with session_scope(sqlite_url) as session:
        for index in (0, 1):
            key = page_result_key(document.id, index)
            store.put(key, b"{not json", content_type="application/json")
            session.execute(sa.update(Page).where(Page.document_id == document.id, Page.index == index)
                            .values(status=PageStatus.SUCCEEDED, result_key=key))
        session.execute(sa.update(Document).where(Document.id == document.id).values(pages_done=2, status="running"))
    register_results_tasks(app, settings)
    task = app.tasks[TaskName.ASSEMBLE_DOCUMENT.value]
    result = task.apply(args=[to_dict(DocumentTask(document_id=document.id))])
    assert result.successful(), result.traceback
    with session_scope(sqlite_url) as session:
        row = session.get(Document, document.id)
        assert row is not None
        assert (row.status, row.error_code) == ("failed", "assembly_failed")
        assert "JSONDecodeError" in (row.error_message or "")
