"""Every output format through the HTTP API: `result?format=` for all five, their media types, the formats
listed on the status, a wrong format's error naming the allowed ones, the enum in OpenAPI, a page's Markdown."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.results.render import typeset
from tests.conftest import PlatformFactory

pytestmark = pytest.mark.slow

FORMATS = ["markdown", "html", "latex", "json", "chunks"]


def test_every_format_from_the_api(platform_factory: PlatformFactory, sqlite_url: str, corpus: Path) -> None:
    api = platform_factory(sqlite_url, engine="fake").start()
    created = api.upload(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", pages="1-2")
    with api.client() as client:
        assert client.get(f"/v1/documents/{created['id']}").json()["formats"] == []  # nothing ready yet
    state = api.wait_done(created["id"])
    assert state["status"] == "succeeded" and state["formats"] == FORMATS
    with api.client() as client:
        def get(fmt: str) -> object:
            response = client.get(f"/v1/documents/{created['id']}/result", params={"format": fmt})
            assert response.status_code == 200, (fmt, response.text)
            return response

        html = get("html")
        assert html.headers["content-type"].startswith("text/html")  # type: ignore[attr-defined]
        text = html.text  # type: ignore[attr-defined]
        assert text.startswith("<!DOCTYPE html>") and '<section class="page" data-page="2"' in text
        assert "<h2 " in text and "fake engine output" in text and 'data-bbox="null"' in text
        latex = get("latex")
        assert latex.headers["content-type"].startswith("application/x-tex")  # type: ignore[attr-defined]
        assert "\\subsection*{Page 2}" in latex.text and latex.text.rstrip().endswith("\\end{document}")  # type: ignore[attr-defined]
        chunks = get("chunks").json()  # type: ignore[attr-defined]
        assert chunks["document_id"] == created["id"] and chunks["tokenizer"] == "cl100k_base"
        assert [c["heading_path"] for c in chunks["chunks"]] == [["Page 1"], ["Page 2"]]
        assert [c["pages"] for c in chunks["chunks"]] == [[1], [2]]
        assert get("json").json()["formats"] == FORMATS  # type: ignore[attr-defined]

        wrong = client.get(f"/v1/documents/{created['id']}/result", params={"format": "docx"})
        assert wrong.status_code == 422 and wrong.json()["error"]["code"] == "validation_error"
        assert all(f"'{fmt}'" in wrong.json()["error"]["message"] for fmt in FORMATS), wrong.json()

        page = client.get(f"/v1/documents/{created['id']}/pages/2", params={"format": "markdown"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/markdown")
        assert page.text.startswith("## Page 2")
        assert client.get(f"/v1/documents/{created['id']}/pages/2", params={"format": "html"}).status_code == 422

        if typeset.available():  # the KaTeX build document.html inlines, for clients typesetting elements' LaTeX
            css = client.get("/assets/katex/katex.min.css")
            assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
            assert client.get("/assets/katex/fonts/KaTeX_Main-Regular.woff2").status_code == 200

        schema = client.get("/openapi.json").json()
        parameters = schema["paths"]["/v1/documents/{document_id}/result"]["get"]["parameters"]
        fmt = next(p for p in parameters if p["name"] == "format")["schema"]
        enum = fmt.get("enum") or schema["components"]["schemas"][fmt["$ref"].rsplit("/", 1)[1]]["enum"]
        assert enum == [*FORMATS, "extraction", "translation", "summary"]  # and the model tasks' answers
