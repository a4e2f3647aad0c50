"""`/v1/batches` on a running platform (gateway, Celery workers, a webhook worker, SQLite, the fake engine): files
and a URL the server fetches become one batch; an item the upload refuses is reported and left out; the status
counts documents per status; `batch.completed` reaches the batch's webhook once, signed; another tenant's batch is
not found."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform, wait_until
from tests.receivers import Receiver

pytestmark = pytest.mark.slow


@pytest.fixture
def platform(platform_factory: PlatformFactory, sqlite_url: str) -> Platform:
    return platform_factory(sqlite_url, engine="fake").start(webhook_worker=True)


@pytest.fixture
def file_server(corpus: Path) -> Iterator[str]:
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(corpus / "dev"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_batch_of_files_and_a_url(platform: Platform, corpus: Path, file_server: str) -> None:
    pdf = corpus / "dev" / "docling_multi_page" / "multi_page.pdf"
    image = corpus / "dev" / "tesseract_phototest" / "phototest.png"
    with platform.client() as client:
        receiver = Receiver(secret=client.get("/v1/tenant").json()["webhook_secret"])
        response = client.post("/v1/batches", files=[
            ("file", (pdf.name, pdf.read_bytes())), ("file", (image.name, image.read_bytes())),
            ("file", ("notes.txt", b"plain words, not a document")),
        ], data={"url": f"{file_server}/docling_normal_4pages/normal_4pages.pdf", "webhook_url": receiver.url,
                 "metadata": '{"run": 7}', "mode": "fast"})
        assert response.status_code == 202, response.text
        created = response.json()
        items = created["items"]
        assert [item["source"] for item in items] == [pdf.name, image.name, "notes.txt",
                                                       f"{file_server}/docling_normal_4pages/normal_4pages.pdf"]
        assert items[2]["document_id"] is None and items[2]["error"]["code"] == "unsupported_media_type"
        assert created["documents_total"] == 3 and all(items[i]["document_id"] for i in (0, 1, 3))

        def completed() -> dict[str, Any] | None:
            body: dict[str, Any] = client.get(f"/v1/batches/{created['id']}").json()
            return body if body["status"] == "completed" else None

        batch = wait_until(completed, 120, "the batch to complete")
        assert batch["counts"]["succeeded"] == 3 and sum(batch["counts"].values()) == 3
        assert [d["id"] for d in batch["documents"]] == [items[i]["document_id"] for i in (0, 1, 3)]
        assert batch["metadata"] == {"run": 7}
        wait_until(lambda: receiver.of_type("batch.completed"), 60, "batch.completed")
        wait_until(lambda: len(receiver.of_type("document.succeeded")) == 3, 60, "the documents' events")
        (event,) = receiver.of_type("batch.completed")  # once, though three documents carry the URL
        assert event.verified
        assert event.json["data"]["batch_id"] == created["id"] and event.json["data"]["counts"]["succeeded"] == 3
        assert event.json["data"]["metadata"] == {"run": 7}
        other = platform.create_tenant("other")
        with platform.client(key=other.key) as stranger:
            assert stranger.get(f"/v1/batches/{created['id']}").status_code == 404
        refused = client.post("/v1/batches", files=[("file", ("a.txt", b"words"))])
        assert (refused.status_code, refused.json()["error"]["code"]) == (422, "batch_empty")
        assert client.post("/v1/batches", data={"mode": "fast"}).json()["error"]["code"] == "validation_error"
    receiver.close()


def test_fair_share_weighs_a_batch_like_its_documents(platform_factory: PlatformFactory, sqlite_url: str,
                                                      corpus: Path) -> None:
    """No worker runs, so every page stays in flight: the batch's documents get the queue priorities the same
    files uploaded one by one get (each from its tenant's pages in flight when it is accepted)."""
    import sqlalchemy as sa

    platform = platform_factory(sqlite_url, engine="fake").start(worker=False)
    pdf = corpus / "dev" / "docling_multi_page" / "multi_page.pdf"
    copies = 14
    with platform.client() as client:
        created = client.post("/v1/batches", files=[("file", (f"{n}.pdf", pdf.read_bytes())) for n in range(copies)],
                              data={"cache": "false"}).json()
    batch_ids = [item["document_id"] for item in created["items"]]
    alone = platform.create_tenant("alone")
    with platform.client(key=alone.key) as client:
        single_ids = [client.post("/v1/documents", files={"file": (f"{n}.pdf", pdf.read_bytes())},
                                  data={"cache": "false"}).json()["id"] for n in range(copies)]
    engine = sa.create_engine(sqlite_url)
    with engine.connect() as connection:
        def priorities(ids: list[str]) -> list[int]:
            rows = {row[0]: int(row[1]) for row in connection.execute(sa.text("SELECT id, priority FROM documents"))}
            return [rows[i] for i in ids]

        in_batch, one_by_one = priorities(batch_ids), priorities(single_ids)
    engine.dispose()
    assert in_batch == one_by_one, (in_batch, one_by_one)
    assert in_batch[0] < in_batch[-1]  # the batch's own pages in flight lowered its later documents' priority
