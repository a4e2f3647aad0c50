"""Every hostile or broken file of the shared corpus gets a documented error code or a best-effort parse,
within a time and memory bound, and the server keeps serving. The error codes at upload are checked in
process (tests/api/test_bad_inputs.py); the files accepted are parsed here by real workers."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.api.test_bad_inputs import REJECTED, case_file
from tests.conftest import PlatformFactory

pytestmark = pytest.mark.slow

# What a customer gets for each case: an HTTP error code at upload (REJECTED, checked in process by
# tests/api/test_bad_inputs.py), or a document that ends in a final state (here, with real workers).
PARSED = {
    # case: (final status, pages)
    "encrypted_pypdf_r6-owner-password": ("succeeded", 1),  # owner password only: readable
    "hugecount_pdfjs_poppler-67295-0": ("succeeded", 1),  # /Count lies; one real page
    "longdoc_pdfjs_freeculture": ("succeeded", 352),
    "hugepage_pdfjs_poppler-85140-0": ("failed", 1),  # a 2^31 pt page: refused at render, with the reason
    "imagebomb_ocrmypdf_hugemono": ("succeeded", 1),
    "javascript_pypdf_issue-297": ("succeeded", 1),
    "javascript_pypdf_SF424_page2": ("succeeded", 1),
    "injection_pymupdf4llm_link_malicious": ("succeeded", 1),
    "xref_qpdf_bad-xref": ("succeeded", 1),
    "xref_qpdf_append-xref-loop": ("succeeded", 30),
    "loop_qpdf_pages-loop": ("succeeded", 1),
}
MAX_SECONDS_PER_DOCUMENT = 300
MAX_RSS_BYTES = 3 * 1024**3


class PeakRss:
    """Samples the resident memory of a process tree (the worker and its children)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                root = psutil.Process(self.pid)
                for proc in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        self.peak = max(self.peak, proc.memory_info().rss)
            except psutil.Error:
                pass
            time.sleep(0.1)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def test_every_bad_file_has_a_documented_outcome(platform_factory: PlatformFactory, sqlite_url: str,
                                                 corpus: Path) -> None:
    cases = sorted(p.name for p in (corpus / "bad").iterdir() if p.is_dir())
    assert set(cases) == set(REJECTED) | set(PARSED), "a new bad case needs an expected outcome here"
    platform = platform_factory(sqlite_url).start(concurrency=2)
    rss = PeakRss(platform.processes["worker"].pid)
    accepted: dict[str, str] = {}
    with platform.client() as client:
        for case in sorted(PARSED):
            path = case_file(corpus, case)
            response = client.post("/v1/documents", files={"file": (path.name, path.read_bytes())})
            assert response.status_code == 202, (case, response.text)
            assert response.json()["pages_total"] == PARSED[case][1], case
            accepted[case] = response.json()["id"]
    for case, document_id in accepted.items():
        state = platform.wait_done(document_id, timeout=MAX_SECONDS_PER_DOCUMENT)
        assert state["status"] == PARSED[case][0], (case, state)
        if state["status"] == "failed":
            with platform.client() as client:
                page = client.get(f"/v1/documents/{document_id}/pages/1").json()
            assert page["error"]["code"] and page["error"]["message"], page  # failed with a reason
    peak = rss.stop()
    assert peak < MAX_RSS_BYTES, f"worker peak RSS {peak / 1e9:.2f} GB"
    assert httpx.get(f"{platform.url}/healthz").status_code == 200
    assert platform.processes["worker"].poll() is None, "the worker must survive every input"
    # and it still parses a normal document afterwards
    created = platform.upload(corpus / "dev" / "pypdf_crazyones" / "crazyones.pdf")
    assert platform.wait_done(created["id"])["status"] == "succeeded"
