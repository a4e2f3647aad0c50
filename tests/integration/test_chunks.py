"""Page jobs in chunks: one message carries several pages of a document, claimed in one statement and finished
in one, while every page keeps its own lease, deliveries and retries. On real PostgreSQL, SQLite and Redis."""

from __future__ import annotations

import base64
import json
import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa

from services.core.contracts import PageTask, from_dict, to_dict
from services.core.db.models import Document, Page, PageStatus, utcnow
from services.core.db.session import session_scope
from services.core.errors import EngineUnavailable
from services.core.lifecycle import Claim, PageFinish, cancel_document, claim_pages, finish_pages, worker_identity
from services.core.queues import (
    CONSUMERS_KEY,
    Queue,
    TaskName,
    announce_consumer,
    chunk_size,
    make_celery,
    outbox,
    queue_load,
    redis_lists,
    withdraw_consumer,
)
from services.core.settings import Settings
from services.core.storage import get_store, load_page_result, page_result_key
from services.gateway.documents.service import create_document
from services.reconciler.loop import reconcile_once
from services.worker import tasks as worker_tasks
from services.worker.engines import Engine, PageInput
from services.worker.engines.base import PageOutput
from services.worker.engines.fake import FakeEngine
from services.worker.split import split_document
from services.worker.tasks import register_worker_tasks
from tests.conftest import PlatformFactory
from tests.harness import wait_until
from tests.integration.test_lifecycle import make_document
from tests.pdfs import make_pdf, stored_upload, text_pages

DATABASES = ["postgres_url", "sqlite_url"]


def page_rows(url: str, document_id: str) -> dict[int, Page]:
    with session_scope(url) as session:
        rows = session.execute(sa.select(Page).where(Page.document_id == document_id)).scalars().all()
        session.expunge_all()
    return {row.index: row for row in rows}


@pytest.mark.parametrize("database", DATABASES)
def test_a_chunk_is_claimed_in_one_statement_and_finished_once(database: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(database)
    document_id = make_document(url, pages=5)
    with session_scope(url, autocommit=True) as session:
        claims = claim_pages(session, document_id, [0, 1, 2, 3], lease_s=60, max_deliveries=3)
    assert {index: claim.outcome for index, claim in claims.items()} == dict.fromkeys(range(4), Claim.RUN)
    assert [claims[i].source_key for i in range(4)] == ["p0", "p1", "p2", "p3"]
    rows = page_rows(url, document_id)
    assert all(rows[i].status == "running" and rows[i].lease_owner == worker_identity() for i in range(4))
    assert rows[4].status == "queued"

    # Each page its own values, in one statement: a result, an error, a JSON details object, a fallback.
    finishes = {
        0: PageFinish(PageStatus.SUCCEEDED, result_key="r0", engine="fake", attempts=1, latency_ms=7,
                      confidence=0.5, details={"signals": {"a": 1.0}}),
        1: PageFinish(PageStatus.FAILED, engine="fake", error_code="engine_error", error_message='boom: «ü» "q"'),
        2: PageFinish(PageStatus.SUCCEEDED, result_key="r2", engine="cpu", attempts=2, latency_ms=11,
                      is_fallback=True, details={"fallback_reason": "engine_unavailable"}),
    }
    with session_scope(url) as session:
        assert finish_pages(session, document_id, finishes) is False  # pages 3 and 4 are still open
    with session_scope(url) as session:  # the same chunk delivered twice: nothing changes, nothing is counted
        assert finish_pages(session, document_id, finishes) is False
    rows = page_rows(url, document_id)
    assert (rows[0].status, rows[0].result_key, rows[0].latency_ms, rows[0].confidence, rows[0].details) == \
        ("succeeded", "r0", 7, 0.5, {"signals": {"a": 1.0}})
    assert (rows[1].status, rows[1].error_code, rows[1].error_message, rows[1].confidence) == \
        ("failed", "engine_error", 'boom: «ü» "q"', None)
    assert (rows[2].engine, rows[2].is_fallback, rows[2].attempts) == ("cpu", True, 2)
    assert rows[0].lease_owner is None and rows[0].lease_expires_at is None and rows[0].finished_at is not None
    with session_scope(url) as session:
        document = session.get(Document, document_id)
        assert document is not None and (document.pages_done, document.pages_failed) == (2, 1)

    with session_scope(url, autocommit=True) as session:
        assert claim_pages(session, document_id, [4], lease_s=60, max_deliveries=3)[4].outcome == Claim.RUN
    last = {3: PageFinish(PageStatus.SUCCEEDED, result_key="r3"), 4: PageFinish(PageStatus.SUCCEEDED)}
    with session_scope(url) as session:
        assert finish_pages(session, document_id, last) is True  # ended the document: its assembly is ours
    with session_scope(url) as session:
        assert finish_pages(session, document_id, last) is False  # exactly once
        document = session.get(Document, document_id)
        assert document is not None and (document.pages_done, document.pages_failed) == (4, 1)


@pytest.mark.parametrize("database", DATABASES)
def test_a_chunk_claim_asks_about_each_page_it_could_not_take(database: str,
                                                             request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(database)
    document_id = make_document(url, pages=5)
    now = utcnow()
    dead = f"{worker_identity().rpartition(':')[0]}:{2 ** 22 + 7}"  # a pid that does not run on this host
    with session_scope(url) as session:
        def set_page(index: int, **values: Any) -> None:
            session.execute(sa.update(Page).where(Page.document_id == document_id, Page.index == index)
                            .values(**values))

        set_page(0, status="succeeded")  # finished already
        set_page(1, status="running", deliveries=1, lease_owner="elsewhere:1",
                 lease_expires_at=now + timedelta(seconds=60))  # a live worker holds it
        set_page(2, status="running", deliveries=1, lease_owner=dead, lease_expires_at=now + timedelta(seconds=60))
        set_page(3, status="running", deliveries=1, lease_owner="elsewhere:1",
                 lease_expires_at=now - timedelta(seconds=1))  # its lease ran out
        set_page(4, status="queued", deliveries=3)  # delivered too often
    with session_scope(url, autocommit=True) as session:
        claims = claim_pages(session, document_id, list(range(5)), lease_s=60, max_deliveries=3)
    assert [claims[i].outcome for i in range(5)] == [Claim.SKIP, Claim.SKIP, Claim.RUN, Claim.RUN, Claim.EXHAUSTED]
    assert claims[2].deliveries == 2 and claims[3].deliveries == 2  # taken over from a dead process, expired

    other = make_document(url, pages=3)
    with session_scope(url) as session:
        cancel_document(session, other)
    with session_scope(url, autocommit=True) as session:
        claims = claim_pages(session, other, [0, 1, 2], lease_s=60, max_deliveries=3)
    assert all(claim.outcome == Claim.SKIP for claim in claims.values())


def test_chunk_size_spreads_a_document_over_idle_workers() -> None:
    settings = Settings(worker={"concurrency": 4, "chunk_max_pages": 16})
    assert chunk_size(25, settings, waiting=0) == 7  # four idle workers: 7, 7, 7, 4
    assert chunk_size(25, settings, waiting=2) == 13  # two may be idle
    assert chunk_size(2000, settings, waiting=50) == 16  # nobody idle: the largest chunks
    assert chunk_size(1, settings, waiting=0) == 1
    assert chunk_size(64, settings, waiting=0, workers=8) == 8  # a GPU worker's eight threads
    assert chunk_size(40, Settings(worker={"chunk_max_pages": 1}), waiting=0) == 1


def page_messages(client: redis.Redis) -> list[tuple[PageTask, dict[str, Any]]]:
    """The page messages waiting on the cpu page queue, with their Celery headers."""
    found = []
    for name in redis_lists(Queue.PAGES_CPU):
        for raw in client.lrange(name, 0, -1):
            message = json.loads(raw)
            assert message["headers"]["task"] == TaskName.PARSE_PAGE.value
            body = json.loads(base64.b64decode(message["body"]))
            found.append((from_dict(PageTask, body[0][0]), message["headers"]))
    client.delete(*redis_lists(Queue.PAGES_CPU))
    return found


class FailingOnce:
    """The fake engine, except that page `index` meets an engine outage on its first try (a retryable error)."""

    def __init__(self, engine: Engine, index: int) -> None:
        self.engine, self.index, self.name = engine, index, engine.name
        self.calls: list[int] = []

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        self.calls.append(page.index)
        if page.index == self.index and self.calls.count(page.index) == 1:
            raise EngineUnavailable("the engine's server is restarting")
        return self.engine.parse(page, temperature=temperature)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


@pytest.fixture
def split_platform(broker: tuple[str, redis.Redis], sqlite_url: str,
                   tmp_path: Path) -> Iterator[tuple[Settings, Any, redis.Redis]]:
    url, client = broker
    settings = Settings(redis_url=url, database_url=sqlite_url, data_dir=tmp_path, engine={"kind": "fake"},
                        worker={"concurrency": 1, "chunk_max_pages": 16})
    app = make_celery(settings)
    register_worker_tasks(app, settings)
    yield settings, app, client


def uploaded_and_split(settings: Settings, app: Any, pages: int) -> Document:
    """A small PDF: its pages are queued with it, in chunks; the split job has nothing left to do."""
    store = get_store(settings)
    with outbox(app), session_scope(settings.resolved_database_url()) as session:
        document = create_document(session, store, settings, stored_upload(text_pages(pages), Path(settings.data_dir)),
                                   tenant_id=None, request_id="req-chunks")
        session.expunge(document)
    assert {row.status for row in page_rows(settings.resolved_database_url(), document.id).values()} == {"queued"}
    with outbox(app):
        assert split_document(document.id, settings, store) == 0
    return document


def test_chunks_follow_the_slots_the_live_workers_announce(split_platform: tuple[Settings, Any, redis.Redis]) -> None:
    """Chunk sizes come from the slots the queue's live consumers announce (the fleet), not from one worker's
    settings: with 12 announced slots a 24-page upload goes out as 12 messages of 2 pages, with none in chunks of
    up to 16 (`worker.concurrency` is 1 here), and a worker that stopped renewing is not counted."""
    settings, app, client = split_platform
    assert queue_load(settings, Queue.PAGES_CPU) == (0, 0)
    assert [len(task.chunk) for task, _ in page_messages_after(settings, app, client, 24)] == [8, 16]

    announce_consumer(client, [Queue.PAGES_CPU.value], "gpu-box-1@a", 8)
    announce_consumer(client, [Queue.PAGES_CPU.value, Queue.PAGES_GPU.value], "gpu-box-2@b", 4)
    announce_consumer(client, [Queue.PAGES_CPU.value], "gone@c", 16, ttl_s=-1)  # died without withdrawing
    assert queue_load(settings, Queue.PAGES_CPU) == (0, 12)
    assert queue_load(settings, Queue.PAGES_GPU) == (0, 4)
    assert [len(task.chunk) for task, _ in page_messages_after(settings, app, client, 24)] == [2] * 12

    withdraw_consumer(client, [Queue.PAGES_CPU.value], "gpu-box-1@a", 8)
    announce_consumer(client, [Queue.PAGES_CPU.value], "gpu-box-2@b", 4)  # renewed; "gone" dropped on the way
    assert client.zcard(CONSUMERS_KEY.format(queue=Queue.PAGES_CPU.value)) == 1
    assert [len(task.chunk) for task, _ in page_messages_after(settings, app, client, 24)] == [6] * 4


def test_a_worker_announces_its_slots_while_it_consumes_and_withdraws_them_when_it_stops(
        platform_factory: PlatformFactory, sqlite_url: str) -> None:
    platform = platform_factory(sqlite_url, engine="fake").start(concurrency=3)
    settings = platform.settings()
    wait_until(lambda: queue_load(settings, Queue.PAGES_CPU) == (0, 3), 60, "the worker's announcement")
    members = redis.Redis.from_url(platform.redis_url).zrange(CONSUMERS_KEY.format(queue=Queue.PAGES_CPU.value), 0, -1)
    assert members == [f"3 {platform.nodes['worker']}".encode()]
    assert queue_load(settings, Queue.PAGES_GPU) == (0, 3)  # it consumes every queue, pages.gpu among them
    assert queue_load(settings, Queue.RESULTS) == (0, 0)  # only page queues are chunked
    platform.kill("worker", signal.SIGTERM)  # a warm shutdown, as in a rolling deploy
    assert queue_load(settings, Queue.PAGES_CPU) == (0, 0) and queue_load(settings, Queue.PAGES_GPU) == (0, 0)


def page_messages_after(settings: Settings, app: Any, client: redis.Redis, pages: int) -> list[tuple[PageTask, Any]]:
    uploaded_and_split(settings, app, pages)
    return sorted(page_messages(client), key=lambda message: len(message[0].chunk))


def test_a_failed_page_of_a_chunk_is_sent_again_alone_and_its_siblings_stay_done(
        split_platform: tuple[Settings, Any, redis.Redis], monkeypatch: pytest.MonkeyPatch) -> None:
    settings, app, client = split_platform
    document = uploaded_and_split(settings, app, 4)
    [(chunk, _)] = page_messages(client)  # one worker, an empty queue: the four pages in one message
    assert [p.page_index for p in chunk.chunk] == [0, 1, 2, 3]

    real_load = worker_tasks.load_engine
    engines: list[FailingOnce] = []

    def load(name: str, s: Settings) -> Engine:
        if not engines:
            engines.append(FailingOnce(real_load("fake", s), index=2))
        return engines[0]  # type: ignore[return-value]  # duck-typed: the Engine protocol

    monkeypatch.setattr(worker_tasks, "load_engine", load)
    # the chunk's pages are recorded together at its end, however slow a loaded machine makes its first page
    monkeypatch.setattr(worker_tasks, "RECORD_EVERY_S", 600.0)
    task = app.tasks[TaskName.PARSE_PAGE.value]
    with outbox(app):
        result = task.apply(args=[to_dict(chunk)])
    assert result.successful(), result.traceback
    assert result.result == "run,run,retry,run"
    rows = page_rows(settings.resolved_database_url(), document.id)
    assert [rows[i].status for i in range(4)] == ["succeeded", "succeeded", "queued", "succeeded"]
    assert rows[2].details.get("last_retry_reason") == "engine_unavailable"
    assert all(rows[i].deliveries == 1 for i in (0, 1, 3))
    assert rows[2].deliveries == 0, "an engine outage does not count against the page's deliveries"

    [(alone, headers)] = page_messages(client)  # page 2 alone, after the policy's wait, one retry spent
    assert (alone.page_index, list(alone.chunk), alone.prior_retries) == (2, [], 1)
    assert headers["eta"] is not None
    with outbox(app):
        assert task.apply(args=[to_dict(alone)]).result == "run"
    assert engines[0].calls == [0, 1, 2, 3, 2], "the siblings were not run again"
    rows = page_rows(settings.resolved_database_url(), document.id)
    assert all(rows[i].status == "succeeded" for i in range(4))
    store = get_store(settings)
    assert all(load_page_result(store, rows[i].result_key or "", i)["page_index"] == i for i in range(4))
    # pages 0, 1 and 3 ended together: their results share one object, written once; page 2 has its own
    assert rows[0].result_key == rows[1].result_key == rows[3].result_key != rows[2].result_key
    assert rows[2].result_key == page_result_key(document.id, 2)
    with session_scope(settings.resolved_database_url()) as session:
        row = session.get(Document, document.id)
        assert row is not None and row.pages_done == 4 and row.assembly_claimed_at is not None
    assembly = [json.loads(raw) for name in redis_lists(Queue.RESULTS) for raw in client.lrange(name, 0, -1)]
    assert len(assembly) == 1, "the assembly is queued exactly once"


def test_a_chunk_of_a_cancelled_document_runs_nothing(split_platform: tuple[Settings, Any, redis.Redis]) -> None:
    settings, app, client = split_platform
    document = uploaded_and_split(settings, app, 3)
    [(chunk, _)] = page_messages(client)
    with session_scope(settings.resolved_database_url()) as session:
        cancel_document(session, document.id)
    with outbox(app):
        assert app.tasks[TaskName.PARSE_PAGE.value].apply(args=[to_dict(chunk)]).result == "skip,skip,skip"
    store = get_store(settings)
    assert not any(store.exists(page_result_key(document.id, i)) for i in range(3))
    rows = page_rows(settings.resolved_database_url(), document.id)
    assert {row.status for row in rows.values()} == {"cancelled"}


def test_pages_whose_lease_ran_out_are_queued_again_in_chunks(
        split_platform: tuple[Settings, Any, redis.Redis]) -> None:
    """A worker died holding a chunk: its pages' leases run out and the reconciler queues them again, as chunks."""
    settings, app, client = split_platform
    document = uploaded_and_split(settings, app, 6)
    page_messages(client)  # the worker took the message and died with it
    url = settings.resolved_database_url()
    with session_scope(url, autocommit=True) as session:
        claims = claim_pages(session, document.id, list(range(6)), lease_s=60, max_deliveries=5)
    assert all(claim.outcome == Claim.RUN for claim in claims.values())
    with session_scope(url) as session:
        session.execute(sa.update(Page).where(Page.document_id == document.id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    report = reconcile_once(settings, app, redis.Redis.from_url(settings.resolved_redis_url()))
    assert report.pages_requeued == 6
    requeued = page_messages(client)
    assert [[p.page_index for p in job.chunk] for job, _ in requeued] == [list(range(6))]
    with outbox(app):
        result = app.tasks[TaskName.PARSE_PAGE.value].apply(args=[to_dict(requeued[0][0])])
    assert result.result == ",".join(["run"] * 6)
    rows = page_rows(url, document.id)
    assert all(row.status == "succeeded" and row.deliveries == 2 for row in rows.values())


def test_a_chunk_stops_when_its_document_is_cancelled_midway(broker: tuple[str, redis.Redis], sqlite_url: str,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages of a chunk are claimed together, but a cancel still stops those not yet run."""
    url, client = broker
    settings = Settings(redis_url=url, database_url=sqlite_url, data_dir=tmp_path,
                        engine={"kind": "fake", "fake_latency_ms": 300}, worker={"concurrency": 1})
    app = make_celery(settings)
    register_worker_tasks(app, settings)
    document = uploaded_and_split(settings, app, 8)
    [(chunk, _)] = page_messages(client)
    assert len(chunk.chunk) == 8

    # The cancel is committed while the third page is being parsed (inside the engine call), not by a thread
    # racing the chunk: a loaded machine once let that thread fall pages behind. A page takes longer than the
    # worker's open check interval, so the chunk must stop right after the page running at the cancel.
    parse = FakeEngine.parse
    recorded_at_cancel: list[int] = []

    def parse_and_cancel_on_the_third(engine: FakeEngine, page: PageInput, **kwargs: Any) -> PageOutput:
        if page.index == 2:
            recorded_at_cancel.extend(i for i, row in page_rows(sqlite_url, document.id).items()
                                      if row.status == "succeeded")
            with session_scope(sqlite_url) as session:
                cancel_document(session, document.id)
        return parse(engine, page, **kwargs)

    monkeypatch.setattr(FakeEngine, "parse", parse_and_cancel_on_the_third)
    with outbox(app):
        outcomes = app.tasks[TaskName.PARSE_PAGE.value].apply(args=[to_dict(chunk)]).result.split(",")
    assert outcomes == ["run"] * 3 + ["skip"] * 5, outcomes
    rows = page_rows(sqlite_url, document.id)
    assert {rows[i].status for i in range(3, 8)} == {"cancelled"}, "the pages not run stay cancelled"
    # The first page is recorded as it ends (a page is slower than the first record's interval); what was
    # recorded before the cancel stays succeeded, the pages run but not yet recorded may end either way.
    assert 0 in recorded_at_cancel and all(rows[i].status == "succeeded" for i in recorded_at_cancel)
    assert all(rows[i].status in ("succeeded", "cancelled") for i in range(3))


WORDS = ["Alpha", "Bravo", "Charlie"]


def worded_pages() -> bytes:
    """Three pages, each with its own word, so a page read can be told from its neighbours."""
    import io

    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    for word in WORDS:
        out.import_pages(pdfium.PdfDocument(make_pdf(lines=[f"{word} is the word of this page."] * 3)))
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("page_files_over_mb", [16.0, 0.0])
def test_a_small_pdf_gets_no_file_per_page_and_reads_the_same(
        broker: tuple[str, redis.Redis], sqlite_url: str, tmp_path: Path, page_files_over_mb: float) -> None:
    """A PDF up to `worker.page_files_over_mb` is not written out page by page: its pages name the document's PDF
    and the worker copies each out of it. Over the limit every page gets its file. Each page reads its own text."""
    url, client = broker
    settings = Settings(redis_url=url, database_url=sqlite_url, data_dir=tmp_path, engine={"kind": "cpu"},
                        worker={"concurrency": 1, "page_files_over_mb": page_files_over_mb})
    app = make_celery(settings)
    register_worker_tasks(app, settings)
    store = get_store(settings)
    with outbox(app), session_scope(sqlite_url) as session:
        document = create_document(session, store, settings, stored_upload(worded_pages(), tmp_path),
                                   tenant_id=None, request_id="req-source-pages")
        session.expunge(document)
    with outbox(app):  # a small PDF's pages were queued with it; a larger one's wait for the split
        assert split_document(document.id, settings, store) == (0 if page_files_over_mb else 3)
    rows = page_rows(sqlite_url, document.id)
    page_files = [store.exists(f"documents/{document.id}/pages/{i:05d}.pdf") for i in range(3)]
    if page_files_over_mb:
        assert not any(page_files) and all(rows[i].source_key == document.source_key for i in range(3))
    else:
        assert all(page_files) and rows[1].source_key == f"documents/{document.id}/pages/00001.pdf"
    [(chunk, _)] = page_messages(client)
    with outbox(app):
        assert app.tasks[TaskName.PARSE_PAGE.value].apply(args=[to_dict(chunk)]).result == "run,run,run"
    rows = page_rows(sqlite_url, document.id)
    for index, word in enumerate(WORDS):
        result = load_page_result(store, rows[index].result_key or "", index)
        assert result["page_number"] == index + 1 and word in result["markdown"], result["markdown"][:200]
        assert not any(other in result["markdown"] for other in WORDS if other != word)
