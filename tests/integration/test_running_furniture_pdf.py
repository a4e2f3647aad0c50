"""A real multi-page PDF through the cpu engine and the document step: its running title and page numbers are
typed furniture in the element tree and gone from the Markdown; its section headings stay."""

from __future__ import annotations

import ctypes
import io
import json

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from services.core.settings import Settings
from services.results.furniture import keep_furniture
from services.results.render.formats import render_document
from services.runner import parse_locally

TITLE = "Quarterly Review of the Example Corporation"
BODY = "The quarterly report lists revenue, costs and the outlook for the coming year in plain words."


def _text(document: pdfium.PdfDocument, page: pdfium.PdfPage, font: object, text: str, size: float, x: float,
          y: float) -> None:
    text_object = pdfium_c.FPDFPageObj_CreateTextObj(document.raw, font, ctypes.c_float(size))
    encoded = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
    pdfium_c.FPDFText_SetText(text_object, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
    pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, x, y)
    pdfium_c.FPDFPage_InsertObject(page.raw, text_object)


def running_pdf(pages: int) -> bytes:
    """US-letter pages: a running title set larger than the body at the top, a section heading, body lines, and
    "Page N of M" at the foot."""
    document = pdfium.PdfDocument.new()
    helvetica = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    bold = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica-Bold")
    for number in range(1, pages + 1):
        page = document.new_page(612, 792)
        _text(document, page, helvetica, TITLE, 13, 72, 750)
        _text(document, page, bold, f"Section {number}: Results of Quarter {number}", 16, 72, 690)
        for row in range(20):
            _text(document, page, helvetica, BODY, 10, 72, 660 - row * 14)
        _text(document, page, helvetica, f"Page {number} of {pages}", 10, 280, 40)
        page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_running_title_and_page_numbers_leave_the_markdown_but_stay_typed_in_the_tree() -> None:
    result = parse_locally(running_pdf(3), Settings(), engine_name="cpu")
    assert [page["status"] for page in result.pages] == ["succeeded"] * 3
    assert TITLE not in result.markdown and "of 3" not in result.markdown
    for number, page in enumerate(result.pages, 1):
        first = page["markdown"].split("\n\n")[0]
        assert first.startswith("#") and first.endswith(f"Section {number}: Results of Quarter {number}")
        types = {element["text"]: element["type"] for element in page["elements"]}
        assert types[TITLE] == "page_header"
        assert types[f"Page {number} of 3"] == "page_footer"


def test_a_single_page_keeps_its_title() -> None:
    result = parse_locally(running_pdf(1), Settings(), engine_name="cpu")
    assert TITLE in result.markdown


def test_furniture_kept_on_request_is_in_markdown_latex_and_chunks_marked() -> None:
    result = parse_locally(running_pdf(3), Settings(), engine_name="cpu")
    dropped = render_document(result.pages, {"id": "doc"}, Settings(), only=["markdown", "chunks", "latex"])
    assert b"Page 2 of 3" not in dropped.bodies["chunks"] and b"Page 2 of 3" not in dropped.bodies["latex"]
    assert keep_furniture(result.pages) == 3
    kept = render_document(result.pages, {"id": "doc"}, Settings(), only=["markdown", "chunks", "latex"],
                           keep_furniture=True)
    markdown = kept.bodies["markdown"].decode()
    for number in (1, 2, 3):  # each page: its running title first, its page number last, each marked
        page = markdown.split(f"<!-- page {number} -->")[1].split("<!-- page ")[0].strip()
        assert page.startswith(f"<!-- page_header -->\n{TITLE}\n\n#")
        assert page.endswith(f"<!-- page_footer -->\nPage {number} of 3")
    chunks = json.loads(kept.bodies["chunks"])["chunks"]
    footers = [c for c in chunks if "Page 2 of 3" in c["text"]]
    assert len(footers) == 1 and footers[0]["furniture"] and all(
        element_id in footers[0]["element_ids"] for element_id in footers[0]["furniture"])
    assert sum(c["text"].count(TITLE) for c in chunks) == 3  # every element in exactly one chunk
    assert "\\textit{page footer:} Page 2 of 3" in kept.bodies["latex"].decode()
