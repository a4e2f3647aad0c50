"""`GET /v1/documents/{id}/pages/{n}/image`: the stored page as PNG (PDF pages rendered, images passed through),
only for the document's own tenant."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from tests.conftest import PlatformFactory
from tests.harness import Platform

pytestmark = pytest.mark.slow


@pytest.fixture
def api(platform_factory: PlatformFactory, sqlite_url: str) -> Platform:
    return platform_factory(sqlite_url, engine="fake").start(concurrency=1)


def test_page_images_for_pdf_and_image_uploads(api: Platform, corpus: Path) -> None:
    pdf = api.upload(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", pages="2,4")
    png = next((corpus / "dev" / "docling_ocr_test").glob("*.png"), None) or \
        next((corpus / "dev" / "docling_webp-test").glob("*.webp"))
    image = api.upload(png)
    api.wait_done(pdf["id"])
    api.wait_done(image["id"])
    with api.client() as client:
        response = client.get(f"/v1/documents/{pdf['id']}/pages/2/image", params={"longest_side": 800})
        assert response.status_code == 200 and response.headers["content-type"] == "image/png"
        rendered = Image.open(io.BytesIO(response.content))
        assert max(rendered.size) == 800 and rendered.size[1] > rendered.size[0]  # a portrait page, to scale
        first = Image.open(io.BytesIO(client.get(f"/v1/documents/{pdf['id']}/pages/1/image").content))
        assert max(first.size) == 1600 and first.tobytes() != rendered.resize(first.size).tobytes()
        scan = Image.open(io.BytesIO(client.get(f"/v1/documents/{image['id']}/pages/1/image").content))
        with Image.open(png) as original:
            assert scan.size == original.size or max(scan.size) == 1600
        assert client.get(f"/v1/documents/{pdf['id']}/pages/3/image").json()["error"]["code"] == "not_found"
        assert client.get(f"/v1/documents/{pdf['id']}/pages/1/image",
                          params={"longest_side": 10}).status_code == 422
    other = api.create_tenant("someone-else")
    with api.client(key=other.key) as client:
        assert client.get(f"/v1/documents/{pdf['id']}/pages/1/image").status_code == 404
    with api.client(auth=False) as client:
        assert client.get(f"/v1/documents/{pdf['id']}/pages/1/image").status_code == 401
