"""A document committed by a process that died before sending its jobs is sent by the reconciler within seconds,
not after `worker.queued_lease_s` (15 min); a normal upload's jobs are known to be sent before its 202, so the
reconciler never sends them twice. Real processes: gateway, worker, reconciler, PostgreSQL and Redis."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from services.core.db.models import Document, Page
from services.core.db.session import session_scope
from tests.conftest import PlatformFactory
from tests.harness import REPO, Platform
from tests.pdfs import text_pages

pytestmark = pytest.mark.slow

# Commits a 3-page upload as the gateway does (rows and jobs in one transaction, jobs sent by the outbox after
# the commit) and dies at the send: the crash between commit and send, with nothing sent.
COMMIT_THEN_DIE = """
import os, sys
from pathlib import Path
from services.core.db.session import session_scope
from services.core.outbox import open_outbox
from services.core.settings import Settings
from services.core.storage import get_store
from services.gateway.documents.service import create_document
from tests.pdfs import stored_upload

settings = Settings()
upload = stored_upload(Path(sys.argv[1]).read_bytes(), Path(sys.argv[1]).parent)

def die(jobs):
    print(f"dying with {len(jobs)} unsent", flush=True)
    os._exit(9)

with open_outbox(die), session_scope(settings.resolved_database_url()) as session:
    document = create_document(session, get_store(settings), settings, upload, tenant_id=sys.argv[2],
                               request_id="req-unsent")
    print(document.id, flush=True)
"""


def commit_then_die(platform: Platform, source: Path, **env: str) -> str:
    done = subprocess.run([sys.executable, "-c", COMMIT_THEN_DIE, str(source), platform.tenant_id or ""],
                          env={**platform.env, **env}, cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 9 and "unsent" in done.stdout, done.stdout + done.stderr
    return done.stdout.split()[0]


def timing(platform: Platform, document_id: str) -> tuple[datetime, datetime]:
    with session_scope(platform.database_url) as session:
        document = session.get(Document, document_id)
        assert document is not None and document.finished_at is not None
        return document.created_at, document.finished_at


def test_jobs_never_sent_are_sent_by_the_reconciler_within_seconds(platform_factory: PlatformFactory,
                                                                    postgres_url: str, tmp_path: Path) -> None:
    # The queued lease stays at its 15 min default: only the new path can end these documents in the test's time.
    platform = platform_factory(postgres_url, engine="fake").start(reconciler=True)
    source = tmp_path / "three.pdf"
    source.write_bytes(text_pages(3))
    # Its pages queued with it (a small PDF for the cpu queue), and one whose split job was its only job.
    queued = commit_then_die(platform, source)
    split = commit_then_die(platform, source, PAGEMILL_WORKER__PAGE_FILES_OVER_MB="0")
    for document_id in (queued, split):
        assert platform.wait_done(document_id, timeout=60)["status"] == "succeeded"
    grace = platform.settings().reconciler.unsent_grace_s
    for document_id in (queued, split):
        created, finished = timing(platform, document_id)
        # sent after the grace (a live process might still have been sending), within seconds of it
        assert grace <= (finished - created).total_seconds() < grace + 30
    assert re.search(r"reconcile\.done.*unsent=[12]", platform.log("reconciler")), platform.log("reconciler")[-2000:]
    with session_scope(platform.database_url) as session:
        pages = session.execute(sa.select(Page.document_id, Page.deliveries).where(
            Page.document_id.in_([queued, split]))).all()
    assert sorted(deliveries for _, deliveries in pages) == [1] * 6  # each page sent once, by the reconciler

    # A normal upload: its jobs are out, and known to be, before its 202 — the reconciler never sends them again.
    normal = platform.upload(source)
    with session_scope(platform.database_url) as session:
        document = session.get(Document, normal["id"])
        assert document is not None and document.jobs_unsent_since is None
    assert platform.wait_done(normal["id"])["status"] == "succeeded"
    with session_scope(platform.database_url) as session:
        assert set(session.execute(sa.select(Page.deliveries).where(Page.document_id == normal["id"])).scalars()) \
            == {1}
