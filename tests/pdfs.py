"""Test PDFs: built out of real corpus pages (pdfium's page import), or single pages of a known make-up drawn
in memory with pdfium (text lines, ruling lines, an image) for tests that need one without a file."""

from __future__ import annotations

import ctypes
import io
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image


def repeat_pages(source: Path, pages: int) -> bytes:
    """A PDF of `pages` pages, cycling through the pages of `source`."""
    src = pdfium.PdfDocument(source.read_bytes())
    out = pdfium.PdfDocument.new()
    count = len(src)
    out.import_pages(src, [i % count for i in range(pages)])  # one import: pages share fonts and images
    buffer = io.BytesIO()
    out.save(buffer)
    out.close()
    src.close()
    return buffer.getvalue()


def select_pages(source: Path, numbers: list[int]) -> bytes:
    """A PDF made of the given 1-based pages of `source`, in that order."""
    src = pdfium.PdfDocument(source.read_bytes())
    out = pdfium.PdfDocument.new()
    out.import_pages(src, [n - 1 for n in numbers])
    buffer = io.BytesIO()
    out.save(buffer)
    out.close()
    src.close()
    return buffer.getvalue()


SENTENCE = "The quarterly report lists revenue, costs and the outlook for the coming year in plain words."


def make_pdf(*, lines: list[str] | None = None, symbol_lines: list[str] | None = None, rules: int = 0,
             image_box: tuple[float, float, float, float] | None = None, size: float = 11.0) -> bytes:
    """A US-letter page: `lines` of text from the top (Helvetica), then `symbol_lines` (the Symbol font, which
    has the math glyphs), `rules` horizontal lines, an image at `image_box` (left, bottom, width, height in pt)."""
    document = pdfium.PdfDocument.new()
    page = document.new_page(612, 792)
    helvetica = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    symbol = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Symbol")
    placed = [(line, helvetica) for line in lines or []] + [(line, symbol) for line in symbol_lines or []]
    for number, (line, font) in enumerate(placed):
        text_object = pdfium_c.FPDFPageObj_CreateTextObj(document.raw, font, ctypes.c_float(size))
        encoded = ctypes.create_string_buffer((line + "\0").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(text_object, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, 72, 720 - number * (size + 3))
        pdfium_c.FPDFPage_InsertObject(page.raw, text_object)
    for number in range(rules):
        rule = pdfium_c.FPDFPageObj_CreateNewRect(72, 80 + number * 6, 468, 0.5)
        pdfium_c.FPDFPath_SetDrawMode(rule, pdfium_c.FPDF_FILLMODE_ALTERNATE, 0)
        pdfium_c.FPDFPage_InsertObject(page.raw, rule)
    if image_box:
        left, bottom, width, height = image_box
        picture = pdfium.PdfImage.new(document)
        bitmap = pdfium.PdfBitmap.from_pil(Image.new("RGB", (64, 64), (90, 120, 200)))
        picture.set_bitmap(bitmap)
        picture.set_matrix(pdfium.PdfMatrix().scale(width, height).translate(left, bottom))
        page.insert_obj(picture)
    page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def text_page(count: int = 12) -> bytes:
    return make_pdf(lines=[f"{number}. {SENTENCE}" for number in range(1, count + 1)])


def text_pages(count: int) -> bytes:
    """A PDF of `count` alike text pages, drawn in memory: an upload that needs no corpus file."""
    document = pdfium.PdfDocument(text_page(3))
    if count > 1:
        document.import_pages(pdfium.PdfDocument(text_page(3)), [0] * (count - 1))
    buffer = io.BytesIO()
    document.save(buffer)
    document.close()
    return buffer.getvalue()
