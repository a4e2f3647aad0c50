"""The Python SDK's `parse_many` (sync and async) on `/v1/batches`, against a running platform (fake engine)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from pagemill_client import AsyncClient, BatchParsed, Client

from tests.harness import Platform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("parse-many")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="fake")
    platform.start(concurrency=2)
    yield platform
    platform.stop()


def test_parse_many(platform: Platform, corpus: Path) -> None:
    pdf = corpus / "dev" / "docling_multi_page" / "multi_page.pdf"
    image = corpus / "dev" / "tesseract_phototest" / "phototest.png"
    with Client(base_url=platform.url, api_key=platform.api_key) as client:
        parsed = client.parse_many([pdf, image.read_bytes(), b"not a document"], metadata={"run": 1},
                                   formats=["markdown", "json"])
        assert [d.status for d in parsed.documents] == ["succeeded", "succeeded"]
        assert all(d.results["markdown"] and d.results["json"]["pages"] for d in parsed.documents)
        assert [(r.index, r.error.code if r.error else None) for r in parsed.refused] == [
            (2, "unsupported_media_type")]
        batch = client.batch(parsed.id)
        assert batch.status == "completed" and batch.counts["succeeded"] == 2 and batch.metadata == {"run": 1}

    async def in_parallel() -> BatchParsed:
        async with AsyncClient(base_url=platform.url, api_key=platform.api_key) as client:
            return await client.parse_many([pdf, image])

    parsed = asyncio.run(in_parallel())
    assert [d.results["markdown"] != "" for d in parsed.documents] == [True, True] and not parsed.refused
