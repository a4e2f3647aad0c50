"""The page/document state machine under racing workers, on real PostgreSQL and SQLite."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa

from services.core.db.models import Document, DocumentStatus, Page, PageStatus, new_id, utcnow
from services.core.db.session import session_scope
from services.core.lifecycle import Claim, PageFinish, claim_page, finish_page
from services.core.lost_work import expired_running_pages, unassembled_documents

PAGES = 12


def make_document(url: str, pages: int = PAGES) -> str:
    document_id = new_id("doc")
    with session_scope(url) as session:
        session.add(Document(id=document_id, status=DocumentStatus.QUEUED, media_type="application/pdf",
                             size_bytes=1, sha256="0" * 64, source_key="k", pages_total=pages,
                             page_numbers=list(range(1, pages + 1)), split_at=utcnow()))
        session.flush()
        for index in range(pages):
            session.add(Page(document_id=document_id, index=index, page_number=index + 1,
                             status=PageStatus.QUEUED, source_key=f"p{index}"))
    return document_id


@pytest.mark.parametrize("database", ["postgres_url", "sqlite_url"])
def test_last_page_claims_assembly_exactly_once_under_races(database: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(database)
    document_id = make_document(url)
    claims: list[bool] = []
    barrier = threading.Barrier(PAGES)

    def work(index: int) -> None:
        with session_scope(url) as session:
            assert claim_page(session, document_id, index, lease_s=60, max_deliveries=3).outcome == Claim.RUN
        barrier.wait()
        for _ in range(2):  # a duplicate delivery finishing the same page changes nothing
            with session_scope(url) as session:
                claims.append(finish_page(session, document_id, index, PageFinish(PageStatus.SUCCEEDED)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(PAGES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert claims.count(True) == 1 and len(claims) == 2 * PAGES
    with session_scope(url) as session:
        document = session.get(Document, document_id)
        assert document is not None
        assert (document.pages_done, document.pages_failed, document.status) == (PAGES, 0, DocumentStatus.RUNNING)
        assert document.assembly_claimed_at is not None
        assert unassembled_documents(session, utcnow(), lease_s=300) == []
        # a claim older than the lease is offered to the reconciler again
        later = utcnow() + timedelta(seconds=301)
        assert unassembled_documents(session, later, lease_s=300) == [document_id]


def test_claims_skip_live_leases_and_stop_after_max_deliveries(postgres_url: str) -> None:
    document_id = make_document(postgres_url, pages=1)
    with session_scope(postgres_url) as session:
        assert claim_page(session, document_id, 0, lease_s=60, max_deliveries=2).outcome == Claim.RUN
    with session_scope(postgres_url) as session:
        # this process is alive and its lease is fresh: a second delivery must not run the page twice
        assert claim_page(session, document_id, 0, lease_s=60, max_deliveries=2).outcome == Claim.SKIP
        assert expired_running_pages(session, utcnow()) == []
        expired = expired_running_pages(session, utcnow() + timedelta(seconds=61))
        assert [p.index for p in expired] == [0]
    later = utcnow() + timedelta(seconds=61)
    with session_scope(postgres_url) as session:
        assert claim_page(session, document_id, 0, lease_s=60, max_deliveries=2, now=later).outcome == Claim.RUN
    much_later = later + timedelta(seconds=61)
    with session_scope(postgres_url) as session:
        claim = claim_page(session, document_id, 0, lease_s=60, max_deliveries=2, now=much_later)
        assert claim.outcome == Claim.EXHAUSTED and claim.deliveries == 2
    with session_scope(postgres_url) as session:
        statuses = session.execute(sa.select(Page.status).where(Page.document_id == document_id)).scalars().all()
        assert statuses == ["running"]


@pytest.mark.parametrize("database", ["postgres_url", "sqlite_url"])
def test_document_started_at_is_its_first_page_start(database: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(database)
    document_id = make_document(url, pages=2)
    first = utcnow() - timedelta(minutes=5)
    with session_scope(url) as session:
        assert claim_page(session, document_id, 0, lease_s=60, max_deliveries=3, now=first).outcome == Claim.RUN
    with session_scope(url) as session:
        assert session.get(Document, document_id).started_at == first  # type: ignore[union-attr]
        assert claim_page(session, document_id, 1, lease_s=60, max_deliveries=3).outcome == Claim.RUN
    for index in (0, 1):  # pages ending later do not move it
        with session_scope(url) as session:
            finish_page(session, document_id, index, PageFinish(PageStatus.SUCCEEDED))
    with session_scope(url) as session:
        assert session.get(Document, document_id).started_at == first  # type: ignore[union-attr]


@pytest.mark.parametrize("database", ["postgres_url", "sqlite_url"])
def test_the_heartbeat_renews_only_the_running_pages_it_holds(database: str, request: pytest.FixtureRequest) -> None:
    from services.worker.heartbeat import Heartbeat

    url = request.getfixturevalue(database)
    document_id = make_document(url, pages=3)
    with session_scope(url) as session:
        for index in range(3):
            assert claim_page(session, document_id, index, lease_s=5, max_deliveries=3).outcome == Claim.RUN
        finish_page(session, document_id, 2, PageFinish(PageStatus.SUCCEEDED))
        session.execute(sa.update(Page).where(Page.document_id == document_id, Page.index == 1)
                        .values(lease_owner="elsewhere:1"))  # another worker took page 1 over
    beat = Heartbeat(url, lease_s=300, interval_s=3600)
    beat.held = {thread: {(document_id, thread)} for thread in range(3)}  # as three task threads would hold them
    assert beat.beat() == 1  # page 0: ours and running; page 1 is someone else's, page 2 has ended
    assert sorted(set().union(*beat.held.values())) == [(document_id, 0)], "pages it no longer holds are dropped"
    with session_scope(url) as session:
        pages = {p.index: p for p in session.execute(sa.select(Page).where(Page.document_id == document_id)).scalars()}
        assert pages[0].lease_expires_at is not None and pages[0].lease_expires_at > utcnow() + timedelta(seconds=200)
        assert pages[1].lease_expires_at is not None and pages[1].lease_expires_at < utcnow() + timedelta(seconds=10)
