"""`GET /v1/documents/{id}/pages/{n}/image` decodes within a pixel budget, renders each page and size once (kept
in the object store) and counts against the tenant's rate."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from services.core.storage import get_store
from services.gateway.documents.images import decode_within_budget
from tests.api.conftest import Api, ApiFactory, error_of
from tests.pdfs import png_claiming

BUDGET = 1_000_000  # pixels the gateway decodes to show one page image, in these tests


def encoded(size: tuple[int, int], kind: str) -> bytes:
    """A real image of `size`: a gradient, so that a wrong scale or an empty decode shows."""
    image = Image.linear_gradient("L").resize(size)
    buffer = io.BytesIO()
    image.save(buffer, kind)
    return buffer.getvalue()


@pytest.fixture
def api(api_factory: ApiFactory) -> Api:
    return api_factory(limits={"page_image_max_pixels": BUDGET})


def image_of(response: object) -> Image.Image:
    assert response.status_code == 200, response.text  # type: ignore[attr-defined]
    assert response.headers["content-type"] == "image/png"  # type: ignore[attr-defined]
    return Image.open(io.BytesIO(response.content))  # type: ignore[attr-defined]


def test_a_jpeg_is_decoded_at_a_reduced_scale_and_anything_over_the_budget_is_refused_undecoded() -> None:
    jpeg = encoded((4000, 3000), "JPEG")
    decoded = decode_within_budget(jpeg, longest_side=500, max_pixels=BUDGET)
    assert decoded.size == (500, 375)  # 1/8: what libjpeg decoded, not 12 Mpx shrunk afterwards
    assert decode_within_budget(jpeg, longest_side=1000, max_pixels=BUDGET).size == (1000, 750)  # 1/4
    with pytest.raises(Exception, match="4000 x 3000 px") as refused:
        decode_within_budget(encoded((4000, 3000), "PNG"), longest_side=500, max_pixels=BUDGET)
    assert getattr(refused.value, "code", None) == "image_too_large"
    # a PNG claiming 14,000 px square over a few hundred bytes (the 196 Mpx) is refused from its header
    with pytest.raises(Exception, match="14000 x 14000 px"):
        decode_within_budget(png_claiming(14000, 14000), longest_side=1600, max_pixels=40_000_000)


def test_page_images_over_the_budget_answer_422_and_a_large_jpeg_is_shown(api: Api) -> None:
    png = api.upload(encoded((2000, 2000), "PNG"), filename="scan.png")
    jpeg = api.upload(encoded((4000, 3000), "JPEG"), filename="photo.jpg")
    bomb = api.upload(png_claiming(14000, 14000), filename="bomb.png")
    with api.client() as client:
        response = client.get(f"/v1/documents/{png['id']}/pages/1/image")
        assert error_of(response) == (422, "image_too_large")
        assert "2000 x 2000 px" in response.json()["error"]["message"]
        assert error_of(client.get(f"/v1/documents/{bomb['id']}/pages/1/image")) == (422, "image_too_large")
        shown = image_of(client.get(f"/v1/documents/{jpeg['id']}/pages/1/image", params={"longest_side": 500}))
        assert shown.size == (500, 375)
        gradient = shown.convert("L")
        top, bottom = gradient.getpixel((250, 5)), gradient.getpixel((250, 370))
        assert isinstance(top, int) and isinstance(bottom, int) and top < 30 and bottom > 220  # the picture
        # 1600 px needs the 1/2 scale: 2000 x 1500 = 3 Mpx, over the budget
        response = client.get(f"/v1/documents/{jpeg['id']}/pages/1/image", params={"longest_side": 1600})
        assert error_of(response) == (422, "image_too_large")


def test_the_second_request_is_served_from_the_stored_render(api: Api) -> None:
    created = api.upload(encoded((900, 600), "PNG"), filename="small.png")
    store = get_store(api.settings)
    with api.client() as client:
        path = f"/v1/documents/{created['id']}/pages/1/image"
        first = client.get(path, params={"longest_side": 300})
        assert image_of(first).size == (300, 200)
        source = next(key for key in local_keys(api, created["id"]) if "/source" in key)
        store.delete_prefix(source)  # the page's pixels are gone: only the kept render can answer now
        second = client.get(path, params={"longest_side": 300})
        assert image_of(second).size == (300, 200) and second.content == first.content
        # another size was never rendered: it needs the source, which is gone
        assert error_of(client.get(path, params={"longest_side": 200})) == (410, "result_expired")
        # the kept render goes with the document
        assert client.delete(f"/v1/documents/{created['id']}").status_code == 200
        assert local_keys(api, created["id"]) == []
        assert error_of(client.get(path, params={"longest_side": 300})) == (404, "not_found")


def local_keys(api: Api, document_id: str) -> list[str]:
    root = api.settings.data_dir / "objects"
    folder = root / "documents" / document_id
    return sorted(str(p.relative_to(root)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_page_images_count_against_the_tenants_rate_apart_from_its_submissions(api: Api) -> None:
    tenant = api.create_tenant("viewer", requests_per_minute=3)
    created = api.upload(encoded((300, 300), "PNG"), key=tenant.key, filename="a.png")
    with api.client(key=tenant.key) as client:
        path = f"/v1/documents/{created['id']}/pages/1/image"
        assert [client.get(path).status_code for _ in range(3)] == [200, 200, 200]
        response = client.get(path)
        assert error_of(response) == (429, "rate_limited") and float(response.headers["Retry-After"]) > 0
        assert "page images per minute" in response.json()["error"]["message"]
    # its submissions have a rate of their own: one used, two left
    api.upload(encoded((300, 300), "PNG"), key=tenant.key, filename="b.png")
    # another tenant's page images are not held back
    with api.client() as client:
        other = api.upload(encoded((300, 300), "PNG"), filename="c.png")
        assert client.get(f"/v1/documents/{other['id']}/pages/1/image").status_code == 200
