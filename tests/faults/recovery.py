"""What every fault test checks and measures: each document final, no page lost or duplicated, time to recover.

The figures come from the database after the fact (pages' `started_at`/`finished_at`, documents' `finished_at`,
stamped by the platform's processes on this machine's clock), and go into the JSON report `make test-faults`
writes (`PAGEMILL_FAULTS_REPORT`), from which docs/reliability.md is made (`python -m tools.reliability`).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from services.core.db.models import Document, Page
from services.core.db.session import session_scope
from tests.harness import FINAL, Platform

PAGE_MARKER = re.compile(r"<!-- page (\d+) -->")


def now_utc() -> datetime:
    return datetime.now(UTC)


@dataclass
class FaultFigures:
    fault: str
    documents: int = 0
    pages: int = 0
    lost: int = 0  # pages without a result in their final document
    duplicated: int = 0  # pages whose result appears more than once in their document
    rerun: int = 0  # pages delivered more than once (the fault's cost, not an error)
    resume_s: float | None = None  # fault over → the first page finished after it
    recover_s: float | None = None  # fault over → every document final
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


_lock = threading.Lock()


def record(figures: FaultFigures) -> FaultFigures:
    """Adds the figures to the report file (one JSON object per fault, keyed by its name)."""
    path = os.environ.get("PAGEMILL_FAULTS_REPORT")
    if path:
        with _lock:
            report_path = Path(path)
            report = json.loads(report_path.read_text()) if report_path.exists() else {}
            report[figures.fault] = asdict(figures)
            report_path.parent.mkdir(parents=True, exist_ok=True)
            report_path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return figures


def wait_all_final(platform: Platform, document_ids: list[str], timeout: float = 180) -> list[dict[str, Any]]:
    """Polls as a client should while a backend is away: a 503 (or a refused connection) means "again shortly";
    a 500 fails the test."""
    deadline = time.monotonic() + timeout
    states = []
    with platform.client() as client:
        for document_id in document_ids:
            while True:
                try:
                    response = client.get(f"/v1/documents/{document_id}", params={"wait": 5})
                except httpx.TransportError:
                    response = None
                if response is not None and response.status_code != 503:
                    assert response.status_code == 200, response.text
                    if response.json()["status"] in FINAL:
                        states.append(response.json())
                        break
                else:
                    time.sleep(0.5)
                assert time.monotonic() < deadline, f"{document_id} not final after {timeout} s"
    return states


def check_documents(platform: Platform, fault: str, document_ids: list[str], fault_over: datetime,
                    **extra: Any) -> FaultFigures:
    """Every document final and succeeded, each page's result exactly once in it; the figures of the fault."""
    figures = FaultFigures(fault, documents=len(document_ids), extra=extra)
    states = wait_all_final(platform, document_ids)
    for state in states:
        assert state["status"] in FINAL, state
        markdown = platform.result(state["id"])
        seen = [int(n) for n in PAGE_MARKER.findall(markdown)]
        expected = list(range(1, state["pages_total"] + 1))
        figures.pages += state["pages_total"]
        figures.lost += len(set(expected) - set(seen)) + state["pages_failed"]
        figures.duplicated += len(seen) - len(set(seen))
    with session_scope(platform.database_url) as session:
        pages = session.execute(sa.select(Page).where(Page.document_id.in_(document_ids))).scalars().all()
        documents = session.execute(sa.select(Document).where(Document.id.in_(document_ids))).scalars().all()
        figures.rerun = sum(1 for page in pages if page.deliveries > 1)
        after = [p.finished_at for p in pages if p.finished_at and p.finished_at >= fault_over]
        if after:
            figures.resume_s = round((min(after) - fault_over).total_seconds(), 2)
        ends = [d.finished_at for d in documents if d.finished_at]
        if len(ends) == len(documents):
            figures.recover_s = round(max(0.0, (max(ends) - fault_over).total_seconds()), 2)
    assert figures.lost == 0, figures
    assert figures.duplicated == 0, figures
    assert all(state["status"] == "succeeded" for state in states), states
    return figures


def page_row(platform: Platform, document_id: str, index: int) -> Page:
    with session_scope(platform.database_url) as session:
        page = session.get(Page, (document_id, index))
        assert page is not None
        session.expunge(page)
        return page


def running_page_owner(platform: Platform, document_id: str, timeout: float = 60) -> tuple[int, int]:
    """(page index, pid) of a page a worker process is parsing right now."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with session_scope(platform.database_url) as session:
            for page in session.execute(sa.select(Page).where(Page.document_id == document_id,
                                                              Page.status == "running")).scalars():
                owner = page.lease_owner or ""
                if owner:
                    return page.index, int(owner.rsplit(":", 1)[1])
        time.sleep(0.05)
    raise AssertionError("no page started running")


def wait_pages_done(platform: Platform, document_id: str, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with platform.client() as client:
        while client.get(f"/v1/documents/{document_id}").json()["pages_done"] < count:
            assert time.monotonic() < deadline, f"fewer than {count} pages done after {timeout} s"
            time.sleep(0.05)
