"""Fair share: one tenant's 2,000-page upload does not starve another tenant's one-page upload.

Ordering, not speed: the small document must end while the big one is still running. With
`PAGEMILL_LIMITS__FAIR_SHARE=false` (plain FIFO) it ends after the big one; `bench/fair_share.py` measures both.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import PlatformFactory
from tests.harness import wait_until
from tests.pdfs import repeat_pages

pytestmark = pytest.mark.slow

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"
BIG_PAGES = 2000


def test_a_one_page_upload_finishes_while_a_2000_page_upload_is_still_running(
        platform_factory: PlatformFactory, postgres_url: str, corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "10"}).start(concurrency=2)
    bulk, interactive = platform.create_tenant("bulk"), platform.create_tenant("interactive")
    big = tmp_path / "big.pdf"
    big.write_bytes(repeat_pages(corpus / ONE_PAGE, BIG_PAGES))
    # cache=false: every page of the big upload really runs the engine (its pages are all alike)
    big_doc = platform.upload(big, key=bulk.key, cache="false")["id"]
    with platform.client(key=bulk.key) as client:
        wait_until(lambda: client.get(f"/v1/documents/{big_doc}").json()["pages_done"] >= 20, 300,
                   "the big upload to start")
    started = time.monotonic()
    small_doc = platform.upload(corpus / ONE_PAGE, key=interactive.key, cache="false")["id"]
    state = platform.wait_done(small_doc, key=interactive.key, timeout=600)
    seconds = time.monotonic() - started
    with platform.client(key=bulk.key) as client:
        big_state = client.get(f"/v1/documents/{big_doc}").json()
    print(f"\nfair share: the 1-page upload ended {state['status']} after {seconds:.1f} s, while the 2,000-page "
          f"upload had {big_state['pages_done']}/{BIG_PAGES} pages done ({big_state['status']})")
    assert state["status"] == "succeeded"
    assert big_state["status"] == "running" and big_state["pages_done"] < BIG_PAGES - 100, big_state
