"""A PDF page's text layer through pdfium: lines of styled words, ruling lines, images, links, health signals.

The characters are read in textchars.py and made into lines in textlines.py; what this module reads itself is what
the page draws beside its text (ruling lines, images, the shapes a chart is drawn with) and its link targets.
"""

from __future__ import annotations

import ctypes

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from services.core.pdf import page_text
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.model import Box, PageText, Segment, Shape
from services.worker.engines.cpu.shapes import shape_of
from services.worker.engines.cpu.textchars import Transform, attach_accents, drop_leaders, read_chars
from services.worker.engines.cpu.textlines import content_runs, rotated_lines, run_box, run_text, upright_lines


def read_page(pdf_bytes: bytes) -> PageText:
    """Page 0 of a (single-page) PDF as lines of styled words, ruling lines and text-layer health signals."""
    with page_text(pdf_bytes) as opened:
        return _read(opened.pdf, opened.page, opened.textpage)


def _read(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> PageText:
    left, bottom, right, top = page.get_cropbox()
    transform = Transform(left, bottom, right, top, page.get_rotation())
    result = PageText(width=transform.width, height=transform.height)
    links = _links(pdf, page, transform)
    result.rules, result.image_coverage = _graphics(page, transform, result.images, result.shapes)
    chars, rotated = read_chars(textpage, transform, links, result)
    runs = content_runs(drop_leaders(attach_accents(chars)))
    result.lines = upright_lines(runs)
    result.runs = [(text, run_box(run)) for run in runs if (text := run_text(run))]
    result.margin_lines = rotated_lines(drop_leaders(rotated))
    return result


def _links(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, transform: Transform) -> list[tuple[Box, str]]:
    links: list[tuple[Box, str]] = []
    position = ctypes.c_int(0)
    link = pdfium_c.FPDF_LINK()
    rect = pdfium_c.FS_RECTF()
    while pdfium_c.FPDFLink_Enumerate(page.raw, position, link):
        action = pdfium_c.FPDFLink_GetAction(link)
        if not action or pdfium_c.FPDFAction_GetType(action) != pdfium_c.PDFACTION_URI:
            continue
        size = pdfium_c.FPDFAction_GetURIPath(pdf.raw, action, None, 0)
        if size <= 1 or size > 65536:
            continue
        buffer = ctypes.create_string_buffer(size)
        pdfium_c.FPDFAction_GetURIPath(pdf.raw, action, buffer, size)
        uri = buffer.raw[: size - 1].decode("latin-1")
        if pdfium_c.FPDFLink_GetAnnotRect(link, rect):
            links.append((transform.box(rect.left, rect.bottom, rect.right, rect.top), uri))
    return links


def _graphics(page: pdfium.PdfPage, transform: Transform, images: list[Box],
              shapes: list[Shape]) -> tuple[list[Segment], float]:
    """Straight ruling lines (strokes, hairline fills, rectangle edges) and the share of the page under images
    (whose boxes go into `images`; bars and polylines a chart may be drawn with into `shapes`)."""
    rules: list[Segment] = []
    image_area = 0.0
    page_area = max(1.0, transform.width * transform.height)
    left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    stack = [(page.raw, False)]
    while stack:
        parent, is_form = stack.pop()
        count = pdfium_c.FPDFFormObj_CountObjects(parent) if is_form else pdfium_c.FPDFPage_CountObjects(parent)
        for index in range(max(0, count)):
            obj = pdfium_c.FPDFFormObj_GetObject(parent, index) if is_form else pdfium_c.FPDFPage_GetObject(parent,
                                                                                                            index)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_FORM and len(stack) < 8:
                stack.append((obj, True))
                continue
            if kind not in (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE):
                continue
            if not pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
                continue
            box = transform.box(left.value, bottom.value, right.value, top.value)
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                image_area += max(0.0, box.width) * max(0.0, box.height)
                images.append(box)
                continue
            if box.width * box.height > 0.5 * page_area:
                continue  # a page background, not a rule
            if (shape := shape_of(obj, box, transform.point)) is not None:
                shapes.append(shape)
            if box.height <= tuning.RULE_MAX_THICKNESS and box.width > tuning.RULE_MIN_LENGTH:
                rules.append(Segment(box.x0, box.cy, box.x1, box.cy))
            elif box.width <= tuning.RULE_MAX_THICKNESS and box.height > tuning.RULE_MIN_LENGTH:
                rules.append(Segment(box.cx, box.y0, box.cx, box.y1))
            elif box.width > 2 and box.height > 2 and _is_rectangle(obj):
                rules.extend([Segment(box.x0, box.y0, box.x1, box.y0), Segment(box.x0, box.y1, box.x1, box.y1),
                              Segment(box.x0, box.y0, box.x0, box.y1), Segment(box.x1, box.y0, box.x1, box.y1)])
    return rules, min(1.0, image_area / page_area)


def _is_rectangle(obj: object) -> bool:
    """A path of one closed four-sided figure (cell shading, boxed cells) rather than a curve or a glyph."""
    count = pdfium_c.FPDFPath_CountSegments(obj)
    if count < 4 or count > 6:
        return False
    fill_mode, stroke = ctypes.c_int(0), ctypes.c_int(0)
    if not pdfium_c.FPDFPath_GetDrawMode(obj, fill_mode, stroke) or not stroke.value:
        return False  # a filled band (row shading) is no border: its edges do not separate cells
    for index in range(count):
        segment = pdfium_c.FPDFPath_GetPathSegment(obj, index)
        if pdfium_c.FPDFPathSegment_GetType(segment) == pdfium_c.FPDF_SEGMENT_BEZIERTO:
            return False
    return True
