"""Figures through the running platform (gateway, worker, cpu engine): the JSON lists the kept image, the
figure route serves it, Markdown names it and the HTML inlines it; `figures=false` keeps none; a cached copy
serves its own copy of the images; DELETE takes them with the rest. `furniture=keep` puts the running heads
and feet in the Markdown, marked; a PDF's form fields, boxes drawn or scanned and key–value pairs are listed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pagemill_client import Client
from PIL import Image

from pagemill_eval.generated_forms import KEY_VALUES, OPTIONS, boxes_pdf, boxes_scan
from services.core.storage import figure_key, get_store
from tests.conftest import PlatformFactory
from tests.integration.test_running_furniture_pdf import TITLE, running_pdf
from tests.pdfs import FIGURE_CAPTION, figure_pdf, form_pdf

pytestmark = pytest.mark.slow


def test_figures_are_kept_served_cached_turned_off_and_deleted(platform_factory: PlatformFactory,
                                                               sqlite_url: str, tmp_path: Path) -> None:
    api = platform_factory(sqlite_url, engine="cpu").start(concurrency=1)
    pdf = tmp_path / "figure.pdf"
    pdf.write_bytes(figure_pdf())
    first = api.upload(pdf)
    assert api.wait_done(first["id"])["status"] == "succeeded"
    [asset] = api.result(first["id"], "json")["figures"]
    assert asset["caption"] == FIGURE_CAPTION and asset["media_type"] == "image/png"
    name = asset["path"].removeprefix("figures/")
    with api.client() as client:
        response = client.get(f"/v1/documents/{first['id']}/figures/{name}")
        assert response.status_code == 200 and response.headers["content-type"] == "image/png"
        image = Image.open(io.BytesIO(response.content)).convert("RGB")
        assert image.size == (asset["width_px"], asset["height_px"]) and image.getpixel((20, 20))[0] > 150
        assert client.get(f"/v1/documents/{first['id']}/figures/p9-e9.png").json()["error"]["code"] == "not_found"
        assert client.get(f"/v1/documents/{first['id']}/figures/..%2Fsource.pdf").status_code in (404, 422)
    with Client(api.url, api.api_key) as sdk:  # the SDKs: each image by its path, and all of them
        assert sdk.figure(first["id"], asset["path"]) == response.content
        assert sdk.figures(first["id"]) == {asset["path"]: response.content}
    assert f"]({asset['path']})" in api.result(first["id"])
    assert "data:image/png;base64," in api.result(first["id"], "html")

    with Client(api.url, api.api_key) as sdk:  # another cache key: parsed again (its pages from the page cache)
        off = sdk.parse(pdf, figures=False, formats=["markdown", "json"], timeout=120)
    assert off.results["json"]["figures"] == [] and "](figures/" not in off.results["markdown"]

    copy = api.upload(pdf)  # answered from the cache: the images are copied under its own id
    assert copy["cached"] is True and copy["id"] != first["id"]
    with api.client() as client:
        assert client.delete(f"/v1/documents/{first['id']}").status_code == 200
        served = client.get(f"/v1/documents/{copy['id']}/figures/{name}")
        assert served.status_code == 200 and served.content == response.content
        gone = client.get(f"/v1/documents/{first['id']}/figures/{name}")
        assert gone.status_code == 404
    store = get_store(api.settings())
    assert not store.exists(figure_key(first["id"], name)) and store.exists(figure_key(copy["id"], name))
    with api.client() as client:
        refused = client.post("/v1/documents", files={"file": ("f.pdf", pdf.read_bytes())},
                              data={"furniture": "sometimes"})
        assert refused.status_code == 422 and "furniture" in refused.json()["error"]["message"]


def test_furniture_kept_at_upload(platform_factory: PlatformFactory, sqlite_url: str, tmp_path: Path) -> None:
    api = platform_factory(sqlite_url, engine="cpu").start(concurrency=1)
    pdf = tmp_path / "running.pdf"
    pdf.write_bytes(running_pdf(2))
    dropped = api.upload(pdf)
    assert api.wait_done(dropped["id"])["status"] == "succeeded"
    with Client(api.url, api.api_key) as sdk:  # another result: another cache key
        kept = sdk.parse(pdf, furniture="keep", timeout=120)
    assert kept.state.cached is False and TITLE not in api.result(dropped["id"])
    form = tmp_path / "form.pdf"  # and a PDF's own form fields, in the JSON and the Markdown
    form.write_bytes(form_pdf())
    created = api.upload(form)
    assert api.wait_done(created["id"])["status"] == "succeeded"
    fields = api.result(created["id"], "json")["fields"]
    assert [(f["name"], f["checked"]) for f in fields if f["type"] == "checkbox"] == [("agree", True),
                                                                                     ("newsletter", False)]
    assert "[x] agree" in api.result(created["id"])
    for name, data in (("boxes.pdf", boxes_pdf()), ("boxes.png", boxes_scan())):  # boxes drawn, boxes scanned
        printed = tmp_path / name
        printed.write_bytes(data)
        done = api.upload(printed)
        assert api.wait_done(done["id"])["status"] == "succeeded"
        listed = api.result(done["id"], "json")["fields"]
        boxes = sorted((f for f in listed if f["type"] == "checkbox"), key=lambda f: (round(f["bbox"][1] / 20),
                                                                                      f["bbox"][0]))
        assert [f["checked"] for f in boxes] == [state != "" for _, state, _, _ in OPTIONS], (name, listed)
        assert [(f["name"], f["value"]) for f in listed if f["type"] == "key_value"] == \
            [(key.rstrip(":"), value) for key, value, _ in KEY_VALUES]
    markdown = kept.results["markdown"]
    assert markdown.count(f"<!-- page_header -->\n{TITLE}") == 2 and "<!-- page_footer -->\nPage 2 of 2" in markdown
