"""A page's state changes: claimed by a delivery, its lease renewed, ended alone or with its chunk, requeued.

Each one a conditional UPDATE, so any number of workers may race; a page's end counts on its document, and the
one that ends a document's last page claims its assembly (`services.core.lifecycle.documents`).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from services.core import notices
from services.core.db.models import (
    DOCUMENT_FINAL,
    PAGE_FINAL,
    Base,
    Document,
    DocumentStatus,
    Page,
    PageStatus,
    utcnow,
)
from services.core.db.session import rowcount
from services.core.db.types import UTCDateTime
from services.core.lifecycle.documents import claim_assembly
from services.core.queues import page_queue

_FINAL_PAGE_VALUES = [s.value for s in PAGE_FINAL]
_FINAL_DOC_VALUES = [s.value for s in DOCUMENT_FINAL]


def worker_identity() -> str:
    """`host:pid` of this process; a lease held by a dead process on this host can be taken over at once."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_is_dead(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class Claim(StrEnum):
    RUN = "run"  # this delivery owns the page now
    SKIP = "skip"  # finished, cancelled, or another live worker holds it: drop the message
    EXHAUSTED = "exhausted"  # delivered too many times without finishing: fail it for good


@dataclass(frozen=True, slots=True)
class PageClaim:
    outcome: Claim
    deliveries: int = 0
    page_number: int = 0
    source_key: str | None = None


# The hot path (every page, twice) runs prebuilt Core statements: building SQLAlchemy expressions per call
# costs more than the database round trip they make.
def _table(model: type[Base]) -> sa.Table:
    """The model's Table: `__table__` is typed as any FromClause, and `sa.update` takes only a table."""
    table = model.__table__
    assert isinstance(table, sa.Table)
    return table


_pages = _table(Page)
_documents = _table(Document)
_p = sa.bindparam


def _at(name: str) -> sa.BindParameter[datetime]:
    return sa.bindparam(name, type_=UTCDateTime())


_DOCUMENT_OPEN = sa.select(_documents.c.id).where(
    _documents.c.id == _p("b_document"), _documents.c.status.not_in(_FINAL_DOC_VALUES)).exists()
_TAKE_VALUES = {"status": PageStatus.RUNNING.value, "deliveries": _pages.c.deliveries + 1,
                "started_at": _at("now"), "lease_expires_at": _at("lease_until"), "lease_owner": _p("owner")}
_RETURN = (_pages.c.deliveries, _pages.c.page_number, _pages.c.source_key)
_THIS_PAGE = (_pages.c.document_id == _p("b_document"), _pages.c.index == _p("b_index"))
CLAIM = sa.update(_pages).where(
    *_THIS_PAGE, _pages.c.deliveries < _p("max_deliveries"), _DOCUMENT_OPEN,
    sa.or_(_pages.c.status == PageStatus.QUEUED.value,
           sa.and_(_pages.c.status == PageStatus.RUNNING.value, _pages.c.lease_expires_at <= _at("now"))),
).values(_TAKE_VALUES).returning(*_RETURN)
TAKE_OVER = sa.update(_pages).where(
    *_THIS_PAGE, _pages.c.status == PageStatus.RUNNING.value, _pages.c.lease_owner == _p("old_owner"),
    _pages.c.deliveries == _p("old_deliveries"),
).values(_TAKE_VALUES).returning(*_RETURN)
FINISH = sa.update(_pages).where(*_THIS_PAGE, _pages.c.status.not_in(_FINAL_PAGE_VALUES)).values({
    **{name: _p(f"v_{name}", type_=_pages.c[name].type) for name in (
        "status", "finished_at", "result_key", "engine", "model", "attempts", "latency_ms", "is_fallback",
        "confidence", "error_code", "error_message", "details", "cache_key", "cached")},
    "lease_expires_at": None, "lease_owner": None})


def _count_page(counter: str) -> sa.Update:
    column = _documents.c[counter]
    return sa.update(_documents).where(_documents.c.id == _p("b_document")).values({
        column: column + 1, "updated_at": _at("now"),
        "status": sa.case((_documents.c.status == DocumentStatus.QUEUED.value, DocumentStatus.RUNNING.value),
                          else_=_documents.c.status),
        "started_at": sa.func.coalesce(_documents.c.started_at, _at("now")),
    }).returning(_documents.c.pages_done, _documents.c.pages_failed, _documents.c.pages_total)


COUNT_DONE, COUNT_FAILED = _count_page("pages_done"), _count_page("pages_failed")


# A document starts when its first page does (not when it was split, nor when a page first ended): it is
# `running` from then on.
MARK_STARTED = sa.update(_documents).where(_documents.c.id == _p("b_document"),
                                           _documents.c.started_at.is_(None)).values(
    started_at=_at("now"), updated_at=_at("now"),  # explicit: an UPDATE in a CTE gets no `onupdate` value
    status=sa.case((_documents.c.status == DocumentStatus.QUEUED.value, DocumentStatus.RUNNING.value),
                   else_=_documents.c.status))


def _claim_and_start(claim: sa.Update) -> sa.Select[Any]:
    """PostgreSQL: the claim and, when it took a page's first delivery, its document's start, in one statement
    (a data-modifying CTE runs to completion whether or not the query reads it): one round trip, not two."""
    claimed = claim.cte("claimed")
    started = MARK_STARTED.where(sa.exists().where(claimed.c.deliveries == 1)).cte("started")
    return sa.select(*claimed.c).add_cte(started)


EXTEND_LEASE = sa.update(_pages).where(
    *_THIS_PAGE, _pages.c.status == PageStatus.RUNNING.value, _pages.c.lease_owner == _p("owner"),
).values(lease_expires_at=_at("lease_until"))


def extend_lease(session: Session, document_id: str, index: int, *, lease_s: int) -> bool:
    """Pushes this process's lease on a running page forward (between the attempts of a long page).
    False when the lease is no longer ours: another worker took the page over."""
    return bool(rowcount(session.execute(EXTEND_LEASE, {
        "b_document": document_id, "b_index": index, "owner": worker_identity(),
        "lease_until": utcnow() + timedelta(seconds=lease_s)})))


def renew_leases(session: Session, pages: list[tuple[str, int]], *, lease_s: float,
                 now: datetime | None = None) -> set[tuple[str, int]]:
    """The heartbeat: pushes forward, in one statement, the leases this process holds on these running pages.
    Returns the pages renewed; a page missing from it has ended or was taken over by another worker."""
    if not pages:
        return set()
    now = now or utcnow()
    rows = session.execute(
        sa.update(_pages).where(
            _pages.c.status == PageStatus.RUNNING.value, _pages.c.lease_owner == worker_identity(),
            sa.tuple_(_pages.c.document_id, _pages.c.index).in_(pages),
        ).values(lease_expires_at=now + timedelta(seconds=lease_s))
        .returning(_pages.c.document_id, _pages.c.index)
    ).all()
    return {(str(document_id), int(index)) for document_id, index in rows}


def _finish_and_count(count: sa.Update) -> sa.Update:
    """PostgreSQL: the page's end and the document's counter in one statement (a data-modifying CTE)."""
    finished = FINISH.returning(_pages.c.document_id).cte("finished")
    return count.where(sa.exists(sa.select(finished.c.document_id))).add_cte(finished)


FINISH_AND_COUNT_DONE, FINISH_AND_COUNT_FAILED = _finish_and_count(COUNT_DONE), _finish_and_count(COUNT_FAILED)


def claim_page(session: Session, document_id: str, index: int, *, lease_s: int, max_deliveries: int,
               now: datetime | None = None) -> PageClaim:
    """Takes a page for this delivery: one conditional UPDATE on the common path."""
    now = now or utcnow()
    params = {"b_document": document_id, "b_index": index, "now": now, "owner": worker_identity(),
              "lease_until": now + timedelta(seconds=lease_s)}
    postgres = session.get_bind().dialect.name == "postgresql"
    row = session.execute(CLAIM_AND_START if postgres else CLAIM,
                          {**params, "max_deliveries": max_deliveries}).one_or_none()
    if row is not None:
        if row.deliveries == 1 and not postgres:  # a page's first delivery may be its document's first to start
            session.execute(MARK_STARTED, {"b_document": document_id, "now": now})
        return PageClaim(Claim.RUN, row.deliveries, row.page_number, row.source_key)
    # Not takeable as is: find out why (rare path).
    page = session.get(Page, (document_id, index))
    if page is None or page.status in _FINAL_PAGE_VALUES or page.status == PageStatus.PENDING:
        return PageClaim(Claim.SKIP)
    if not session.execute(sa.select(_DOCUMENT_OPEN), {"b_document": document_id}).scalar():
        return PageClaim(Claim.SKIP)
    if page.deliveries >= max_deliveries:
        return PageClaim(Claim.EXHAUSTED, page.deliveries, page.page_number, page.source_key)
    if page.status == PageStatus.RUNNING and _owner_is_dead(page.lease_owner):
        # The process holding the lease died on this host (a killed Celery child): no need to wait it out.
        row = session.execute(TAKE_OVER, {**params, "old_owner": page.lease_owner,
                                          "old_deliveries": page.deliveries}).one_or_none()
        if row is not None:
            return PageClaim(Claim.RUN, row.deliveries, row.page_number, row.source_key)
    return PageClaim(Claim.SKIP)  # another live worker holds it


_THESE_PAGES = (_pages.c.document_id == _p("b_document"), _pages.c.index.in_(_p("b_indexes", expanding=True)))
CLAIM_CHUNK = sa.update(_pages).where(
    *_THESE_PAGES, _pages.c.deliveries < _p("max_deliveries"), _DOCUMENT_OPEN,
    sa.or_(_pages.c.status == PageStatus.QUEUED.value,
           sa.and_(_pages.c.status == PageStatus.RUNNING.value, _pages.c.lease_expires_at <= _at("now"))),
).values(_TAKE_VALUES).returning(_pages.c.index, *_RETURN)


CLAIM_AND_START, CLAIM_CHUNK_AND_START = _claim_and_start(CLAIM), _claim_and_start(CLAIM_CHUNK)


def claim_pages(session: Session, document_id: str, indexes: list[int], *, lease_s: int, max_deliveries: int,
                now: datetime | None = None) -> dict[int, PageClaim]:
    """Takes the pages of a chunk for this delivery: one UPDATE … RETURNING for all of them on the common path.
    A page it could not take is asked about alone (`claim_page`: finished, held by a live or a dead worker,
    delivered too often), so every page keeps its own lease, deliveries and outcome."""
    now = now or utcnow()
    params = {"b_document": document_id, "b_indexes": list(indexes), "now": now, "owner": worker_identity(),
              "lease_until": now + timedelta(seconds=lease_s), "max_deliveries": max_deliveries}
    postgres = session.get_bind().dialect.name == "postgresql"
    claims = {int(row[0]): PageClaim(Claim.RUN, row.deliveries, row.page_number, row.source_key)
              for row in session.execute(CLAIM_CHUNK_AND_START if postgres else CLAIM_CHUNK, params)}
    if not postgres and any(claim.deliveries == 1 for claim in claims.values()):
        session.execute(MARK_STARTED, {"b_document": document_id, "now": now})
    for index in indexes:
        if index not in claims:
            claims[index] = claim_page(session, document_id, index, lease_s=lease_s,
                                       max_deliveries=max_deliveries, now=now)
    return claims


@dataclass(frozen=True, slots=True)
class PageFinish:
    status: PageStatus
    result_key: str | None = None
    engine: str | None = None
    model: str | None = None
    attempts: int = 0
    latency_ms: int | None = None
    is_fallback: bool = False
    confidence: float | None = None
    error_code: str | None = None
    error_message: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    cache_key: str | None = None  # the result may answer later uploads (services/core/cache.py)
    cached: bool = False  # the result was copied from the cache: no engine call, not charged


def finish_page(session: Session, document_id: str, index: int, finish: PageFinish,
                now: datetime | None = None) -> bool:
    """Records a page's end once. Returns True when this call ended the document's last open page
    and claimed its assembly, so exactly one caller enqueues the assembly.

    On PostgreSQL the page and its document's counter change in one statement, so the session may be in
    autocommit mode (the worker's record is); elsewhere they are two statements that need a transaction."""
    now = now or utcnow()
    values = {f"v_{name}": getattr(finish, name) for name in (
        "status", "result_key", "engine", "model", "attempts", "latency_ms", "is_fallback", "confidence",
        "error_code", "error_message", "details", "cache_key", "cached")}
    values["v_status"] = finish.status.value
    params = {"b_document": document_id, "b_index": index, "v_finished_at": now, "now": now, **values}
    succeeded = finish.status == PageStatus.SUCCEEDED
    if session.get_bind().dialect.name == "postgresql":
        statement = FINISH_AND_COUNT_DONE if succeeded else FINISH_AND_COUNT_FAILED
        row = session.execute(statement, params).one_or_none()  # None: another delivery finished it first
    else:
        if not rowcount(session.execute(FINISH, params)):
            return False  # another delivery of the same page finished first
        row = session.execute(COUNT_DONE if succeeded else COUNT_FAILED, params).one_or_none()
    if row is not None:
        notices.notify(document_id)  # its page counts moved: the event streams send a progress event
    if row is None or row.pages_done + row.pages_failed < row.pages_total:
        return False
    return claim_assembly(session, document_id, lease_s=None, now=now)


_FINISH_COLUMNS = ("status", "result_key", "engine", "model", "attempts", "latency_ms", "is_fallback", "confidence",
                   "error_code", "error_message", "details", "cache_key", "cached")


def _finish_chunk(dialect: str) -> sa.Update:
    """The UPDATE that ends several pages of one document, of one shape whatever their number: the pages' values
    travel as one JSON array (`rows`, an object per page), read as a table (PostgreSQL `jsonb_to_recordset`,
    SQLite `json_each`). So the statement text never changes: the driver and the server prepare it once, where a
    CASE per column and page made a new statement of hundreds of parameters for each chunk size."""
    if dialect == "postgresql":
        rows = sa.func.jsonb_to_recordset(sa.cast(_p("rows", type_=sa.Text), JSONB)).table_valued(
            *[sa.column(name, _pages.c[name].type) for name in ("index", *_FINISH_COLUMNS)],
        ).render_derived(name="finished", with_types=True)
        value = {name: rows.c[name] for name in _FINISH_COLUMNS}
        index = rows.c.index
    else:
        rows = sa.func.json_each(_p("rows", type_=sa.Text)).table_valued("value").alias("finished")

        def field(name: str) -> Any:
            return sa.func.json_extract(rows.c.value, f"$.{name}")

        value = {name: field(name) for name in _FINISH_COLUMNS}
        index = field("index")
    return sa.update(_pages).where(
        _pages.c.document_id == _p("b_document"), _pages.c.index == index,
        _pages.c.status.not_in(_FINAL_PAGE_VALUES),
    ).values({**value, "finished_at": _at("now"), "lease_expires_at": None,
              "lease_owner": None}).returning(_pages.c.index, _pages.c.status)


_FINISH_CHUNK = {dialect: _finish_chunk(dialect) for dialect in ("postgresql", "sqlite")}


COUNT_CHUNK = sa.update(_documents).where(_documents.c.id == _p("b_document")).values({
    "pages_done": _documents.c.pages_done + _p("done"), "pages_failed": _documents.c.pages_failed + _p("failed"),
    "updated_at": _at("now"), "started_at": sa.func.coalesce(_documents.c.started_at, _at("now")),
    "status": sa.case((_documents.c.status == DocumentStatus.QUEUED.value, DocumentStatus.RUNNING.value),
                      else_=_documents.c.status),
}).returning(_documents.c.pages_done, _documents.c.pages_failed, _documents.c.pages_total)


def _finish_chunk_and_count() -> sa.Update:
    """PostgreSQL: a chunk's pages ended and counted on their document in one statement (a data-modifying CTE):
    only the pages it ended are counted, as in the two statements elsewhere."""
    ended = _FINISH_CHUNK["postgresql"].cte("ended")
    succeeded = sa.select(sa.func.count()).select_from(ended) \
        .where(ended.c.status == PageStatus.SUCCEEDED.value).scalar_subquery()
    failed = sa.select(sa.func.count()).select_from(ended) \
        .where(ended.c.status != PageStatus.SUCCEEDED.value).scalar_subquery()
    return sa.update(_documents).where(_documents.c.id == _p("b_document"), sa.exists(sa.select(ended.c.index))) \
        .values({
            "pages_done": _documents.c.pages_done + succeeded, "pages_failed": _documents.c.pages_failed + failed,
            "updated_at": _at("now"), "started_at": sa.func.coalesce(_documents.c.started_at, _at("now")),
            "status": sa.case((_documents.c.status == DocumentStatus.QUEUED.value, DocumentStatus.RUNNING.value),
                              else_=_documents.c.status),
        }).returning(_documents.c.pages_done, _documents.c.pages_failed, _documents.c.pages_total).add_cte(ended)


FINISH_CHUNK_AND_COUNT = _finish_chunk_and_count()


def finish_pages(session: Session, document_id: str, finishes: dict[int, PageFinish],
                 now: datetime | None = None) -> bool:
    """Records the end of several pages of one document in one UPDATE, and counts them on the document in a
    second (on PostgreSQL both in one statement): only pages not ended yet change (another delivery may have
    finished one first, or the document was cancelled), and only those are counted. Returns True when this call
    ended the document's last open page and claimed its assembly. Elsewhere than on PostgreSQL it needs a
    transaction (the two statements count together); on PostgreSQL each statement is atomic alone, and an
    assembly whose claim a crash prevented is claimed by the reconciler."""
    if not finishes:
        return False
    now = now or utcnow()
    rows = [{"index": index, **{column: finish.status.value if column == "status" else getattr(finish, column)
                                for column in _FINISH_COLUMNS}} for index, finish in finishes.items()]
    params = {"b_document": document_id, "rows": json.dumps(rows, ensure_ascii=False), "now": now}
    if session.get_bind().dialect.name == "postgresql":
        row = session.execute(FINISH_CHUNK_AND_COUNT, params).one_or_none()  # None: no page was still open
    else:
        ended = [(int(index), status) for index, status in session.execute(_FINISH_CHUNK["sqlite"], params)]
        if not ended:
            return False
        done = sum(1 for _, status in ended if status == PageStatus.SUCCEEDED.value)
        row = session.execute(COUNT_CHUNK, {"b_document": document_id, "now": now, "done": done,
                                            "failed": len(ended) - done}).one_or_none()
    if row is not None:
        notices.notify(document_id)  # its page counts moved: the event streams send a progress event
    if row is None or row.pages_done + row.pages_failed < row.pages_total:
        return False
    return claim_assembly(session, document_id, lease_s=None, now=now)


def queue_split_pages(session: Session, document_id: str,
                      chunk: Sequence[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """The split queues a chunk of pages (index, source key, engine): those still pending become queued with
    their source key, engine and queue, in one statement per engine. Returns the pages moved (a second split
    finds them queued and skips them)."""
    now = utcnow()
    keys = {index: key for index, key, _ in chunk}
    # the pages of a PDF read from the document itself all name it: one value, not a CASE of them
    source_key = sa.case(keys, value=Page.index) if len(set(keys.values())) > 1 \
        else next(iter(keys.values()), None)
    moved: list[tuple[int, str, str]] = []
    for engine in sorted({engine for _, _, engine in chunk}):
        moved += [(index, keys[index], engine) for index in session.execute(
            sa.update(Page).where(Page.document_id == document_id, Page.status == PageStatus.PENDING,
                                  Page.index.in_([i for i, _, e in chunk if e == engine]))
            .values(status=PageStatus.QUEUED, source_key=source_key, enqueued_at=now,
                    engine=engine, queue=page_queue(engine).value)
            .returning(Page.index)
        ).scalars()]
    return moved


def requeue_page(session: Session, document_id: str, index: int) -> bool:
    """A page of a chunk sent again alone (released, or never started): queued anew, without a lease. False when
    it ended or was cancelled meanwhile (then no message is sent for it)."""
    return bool(rowcount(session.execute(
        sa.update(Page).where(Page.document_id == document_id, Page.index == index,
                              Page.status.in_([PageStatus.QUEUED.value, PageStatus.RUNNING.value]))
        .values(status=PageStatus.QUEUED, enqueued_at=utcnow(), lease_expires_at=None, lease_owner=None))))


def release_page(session: Session, document_id: str, index: int, *, reason: str,
                 refund_delivery: bool = False) -> None:
    """Gives a page back to the queue (a retryable error): it is queued again, not failed.

    `refund_delivery`: this delivery ended cleanly for a reason outside the page (its engine is down), so it
    does not count towards `max_deliveries`, the budget for deliveries that crashed or hung.
    """
    page = session.get(Page, (document_id, index))
    if page is None or page.status in _FINAL_PAGE_VALUES:
        return
    if refund_delivery and page.deliveries > 0:
        page.deliveries -= 1
    page.status = PageStatus.QUEUED
    page.enqueued_at = utcnow()
    page.lease_expires_at = None
    page.details = {**page.details, "last_retry_reason": reason}


