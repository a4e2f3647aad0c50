"""Uploads on the wire, against a real gateway: the key and the size limit are checked while the body streams
(never after spooling it), a slow client cannot hold a worker, and Redis being down is a 503, not a 500."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Platform
from tests.servers import start_redis

pytestmark = pytest.mark.slow

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"


def test_redis_down_answers_503_with_retry_after(sqlite_url: str, corpus: Path, tmp_path: Path) -> None:
    redis_url, stop_redis = start_redis(tmp_path)  # a throwaway server of its own, stopped mid-test
    platform = Platform(workdir=tmp_path / "platform", database_url=sqlite_url, redis_base_url=redis_url)
    stopped = False
    try:
        platform.start(worker=False)
        platform.upload(corpus / ONE_PAGE)  # Redis up: accepted
        stop_redis()
        stopped = True
        with platform.client() as client:
            response = client.post("/v1/documents", files={"file": ("c.pdf", (corpus / ONE_PAGE).read_bytes())})
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "service_unavailable"
            assert int(response.headers["Retry-After"]) >= 1
            assert client.get("/readyz").status_code == 503
    finally:
        platform.stop()
        if not stopped:
            stop_redis()
