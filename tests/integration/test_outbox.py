"""The outbox on real Redis: a job of a transaction that rolls back is never sent; one that commits is sent
exactly once, after the commit, with its send time and its fair-share priority."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa

from services.core import queues
from services.core.db.models import Document, Tenant
from services.core.db.session import session_scope
from services.core.outbox import OutboxMissing
from services.core.queues import (
    SENT_AT_HEADER,
    Queue,
    TaskName,
    assemble_job,
    enqueue,
    make_celery,
    outbox,
    page_job,
    redis_lists,
)
from services.core.settings import Settings
from services.core.storage import get_store
from services.gateway.documents.service import create_document
from tests.pdfs import stored_upload, text_page


def messages(client: redis.Redis, queue: Queue) -> list[dict[str, Any]]:
    """Every message waiting on `queue`, over all its priority lists."""
    found: list[dict[str, Any]] = []
    for name in redis_lists(queue):
        found += [json.loads(raw) for raw in client.lrange(name, 0, -1)]  # type: ignore[union-attr]
    return found


def upload(session: sa.orm.Session, settings: Settings, *, priority: int = 0) -> Document:
    return create_document(session, get_store(settings), settings, stored_upload(text_page(3), Path(settings.data_dir)),
                           tenant_id=None, request_id="req-1", priority=priority)


def documents(url: str) -> int:
    with session_scope(url) as session:
        return int(session.execute(sa.select(sa.func.count()).select_from(Document)).scalar_one())


def test_a_job_of_a_rolled_back_transaction_is_never_sent(broker: tuple[str, redis.Redis], sqlite_url: str,
                                                          tmp_path: Path) -> None:
    url, client = broker
    settings = Settings(redis_url=url, database_url=sqlite_url, data_dir=tmp_path)
    app = make_celery(settings)
    with outbox(app) as box:
        with pytest.raises(RuntimeError, match="after the job"), session_scope(sqlite_url) as session:
            upload(session, settings)
            assert box.pending == 2  # its split job and its sent mark, collected: the transaction is still open
            raise RuntimeError("a failure after the job was enqueued")
        assert box.pending == 0  # dropped with the rollback
        with session_scope(sqlite_url) as session:  # the unit of work goes on; its next transaction commits
            session.add(Tenant(id="ten_1", name="acme", webhook_secret="whsec_x", limits={}))
    assert documents(sqlite_url) == 0
    assert messages(client, Queue.DOCUMENTS) == [] and client.dbsize() == 0
    assert box.sent == 0

    # A unit of work that raises drops what it enqueued outside a transaction, too.
    with pytest.raises(ValueError), outbox(app):
        enqueue(assemble_job("doc_x", None))
        raise ValueError
    assert client.dbsize() == 0


def test_a_job_of_a_committed_transaction_is_sent_once_with_its_header_and_priority(
        broker: tuple[str, redis.Redis], sqlite_url: str, tmp_path: Path) -> None:
    url, client = broker
    # every PDF split into page files: the upload's one job is its split (a small PDF's pages go out with it)
    settings = Settings(redis_url=url, database_url=sqlite_url, data_dir=tmp_path, worker={"page_files_over_mb": 0})
    app = make_celery(settings)
    with outbox(app) as box:
        with session_scope(sqlite_url) as session:
            document = upload(session, settings, priority=3)
            assert messages(client, Queue.DOCUMENTS) == []  # nothing before the commit
        sent = messages(client, Queue.DOCUMENTS)
        assert len(sent) == 1  # sent right after the commit, not at the end of the unit of work
    assert box.sent == 2  # the job, then the mark that says it is out
    with session_scope(sqlite_url) as session:
        assert session.get(Document, document.id).jobs_unsent_since is None  # type: ignore[union-attr]
    sent = messages(client, Queue.DOCUMENTS)
    assert len(sent) == 1, "sent exactly once: the end of the unit of work sends nothing again"
    message = sent[0]
    assert message["headers"]["task"] == TaskName.SPLIT_DOCUMENT.value
    assert message["headers"][SENT_AT_HEADER] > 0
    body = json.loads(base64.b64decode(message["body"]))
    assert body[0][0]["document_id"] == document.id
    assert documents(sqlite_url) == 1

    # Page jobs keep the document's fair-share priority: they land on the queue's priority-3 list.
    with outbox(app), session_scope(sqlite_url):
        enqueue(page_job(document, 0, "documents/x/pages/00000.pdf", engine="cpu"))
    lists = {name: client.llen(name) for name in redis_lists(Queue.PAGES_CPU)}
    assert [name for name, length in lists.items() if length] == [redis_lists(Queue.PAGES_CPU)[1]]


def test_enqueue_outside_a_unit_of_work_is_an_error() -> None:
    with pytest.raises(OutboxMissing):
        enqueue(assemble_job("doc_y", None))


def test_a_sent_mark_left_while_another_thread_clears_goes_with_its_next_clear(
        broker: tuple[str, redis.Redis], sqlite_url: str, tmp_path: Path) -> None:
    url, _ = broker
    settings = Settings(redis_url=url, database_url=sqlite_url, data_dir=tmp_path)
    with session_scope(sqlite_url) as session, outbox(make_celery(settings)) as box:
        first, second = upload(session, settings), upload(session, settings)
        box.discard()  # their jobs and marks are not sent here: the marks go through `_clear_marks` below

    def unsent() -> set[str]:
        with session_scope(sqlite_url) as session:
            return set(session.execute(sa.select(Document.id).where(Document.jobs_unsent_since.is_not(None)))
                       .scalars())

    assert unsent() == {first.id, second.id}
    # another thread is clearing: this one leaves its mark to it and returns at once
    assert queues._clearing.acquire(blocking=False)
    try:
        queues._clear_marks([queues.SentMark(sqlite_url, first.id)])
        assert unsent() == {first.id, second.id}
    finally:
        queues._clearing.release()
    # the next clear (the clearing thread's look after it releases, or the next batch's) takes it along
    queues._clear_marks([queues.SentMark(sqlite_url, second.id)])
    assert unsent() == set() and not queues._unsent
