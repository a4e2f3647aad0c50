"""Forms printed without fields, generated with known answers (`pagemill_eval.figures` and the tests): option
boxes drawn as squares (ticked with a drawn tick or an "X", or empty), a grid of small cells and square bullets
that are not boxes, key–value lines.
`boxes_pdf()` is the digital page; `boxes_scan()` the same page rendered to pixels (a scan without a text layer)."""

from __future__ import annotations

import ctypes
import io

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

PAGE = (612.0, 792.0)
SIDE = 10.0
# (label, state, left, baseline): state "tick" (a drawn tick), "cross" (an X character), "" (empty)
OPTIONS = [("Yes", "tick", 72.0, 600.0), ("No", "", 160.0, 600.0),
           ("Email me the invoice", "", 72.0, 570.0),
           ("Post it to the billing address", "cross", 72.0, 540.0)]
KEY_VALUES = [("Invoice no.:", "12345", 700.0), ("Date:", "2024-01-02", 680.0), ("Customer:", "Ada Lovelace", 660.0)]
TITLE = "Order form"


def _text(document: pdfium.PdfDocument, page: pdfium.PdfPage, font: object, text: str, left: float, baseline: float,
          size: float = 11.0) -> None:
    text_object = pdfium_c.FPDFPageObj_CreateTextObj(document.raw, font, ctypes.c_float(size))
    encoded = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
    pdfium_c.FPDFText_SetText(text_object, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
    pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, left, baseline)
    pdfium_c.FPDFPage_InsertObject(page.raw, text_object)


def _square(page: pdfium.PdfPage, left: float, bottom: float, side: float, *, filled: bool = False) -> None:
    square = pdfium_c.FPDFPageObj_CreateNewRect(left, bottom, side, side)
    pdfium_c.FPDFPageObj_SetStrokeColor(square, 0, 0, 0, 255)
    pdfium_c.FPDFPageObj_SetStrokeWidth(square, ctypes.c_float(1.0))
    pdfium_c.FPDFPath_SetDrawMode(square, pdfium_c.FPDF_FILLMODE_ALTERNATE if filled else 0, 0 if filled else 1)
    pdfium_c.FPDFPage_InsertObject(page.raw, square)


def _tick(page: pdfium.PdfPage, left: float, bottom: float) -> None:
    tick = pdfium_c.FPDFPageObj_CreateNewPath(left + 2, bottom + 5)
    pdfium_c.FPDFPath_LineTo(tick, left + 4.5, bottom + 2)
    pdfium_c.FPDFPath_LineTo(tick, left + 8.5, bottom + 8.5)
    pdfium_c.FPDFPageObj_SetStrokeColor(tick, 0, 0, 0, 255)
    pdfium_c.FPDFPageObj_SetStrokeWidth(tick, ctypes.c_float(1.5))
    pdfium_c.FPDFPath_SetDrawMode(tick, 0, 1)
    pdfium_c.FPDFPage_InsertObject(page.raw, tick)


def boxes_pdf() -> bytes:
    """A US-letter page: a title, three key–value lines, four options (Yes ticked, No empty on one line; two
    options on lines of their own, the second crossed with an "X"), a row of touching small cells (a grid, not
    boxes) and a line starting with a filled square bullet (not a box)."""
    document = pdfium.PdfDocument.new()
    page = document.new_page(*PAGE)
    helvetica = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    _text(document, page, helvetica, TITLE, 72, 740, 18)
    for key, value, baseline in KEY_VALUES:
        _text(document, page, helvetica, f"{key} {value}", 72, baseline)
    for label, state, left, baseline in OPTIONS:
        _square(page, left, baseline - 1, SIDE)
        if state == "tick":
            _tick(page, left, baseline - 1)
        elif state == "cross":
            _text(document, page, helvetica, "X", left + 1.8, baseline + 0.8, 9)
        _text(document, page, helvetica, label, left + SIDE + 6, baseline)
    for n in range(8):  # a strip of touching cells: a grid
        _square(page, 72 + n * SIDE, 480, SIDE)
    _text(document, page, helvetica, "Cells above are a grid, not options.", 72, 465)
    _square(page, 72, 440, 6, filled=True)
    _text(document, page, helvetica, "A square bullet is not a box.", 84, 440)
    page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def boxes_scan(dpi: int = 150) -> bytes:
    """`boxes_pdf()` rendered at `dpi` as a PNG: the same form as a scan has it, pixels only."""
    document = pdfium.PdfDocument(boxes_pdf())
    try:
        image = document[0].render(scale=dpi / 72, grayscale=True).to_pil()
    finally:
        document.close()
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()
