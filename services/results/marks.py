"""Checkboxes without a form: small squares drawn on a digital page, and boxes on a scan, as `checkbox` elements.

A form printed without fields draws its options as small squares. At assembly each parsed page of a PDF upload
is looked at once more:

- **Digital pages** (a text layer): every top-level path object that is a stroked, unfilled square of
  `MIN_SIDE`..`MAX_SIDE` points, made of straight lines only, touching no other path but what lies inside it
  (a grid of cells is a table, not options) and holding at most one character, is a box. It is `checked` when
  another path (a tick, a cross) or a character ("X", "✓") lies inside it. Its label is the text of the same
  line to its right, up to the next box.
- **Scanned pages** (no text layer, or an image upload): the page's pixels (a PDF page rendered at
  `outputs.figure_dpi`; an image upload's longest side taken as a letter sheet's 11 inches to know the size of
  a point) are searched for square outlines of the same size: a dark run of pixels whose length is the side, a
  matching run one side further down, and dark left and right edges between them. Its interior's dark share
  (`FILLED_SHARE` or more) says checked; a solid square (`SOLID_SHARE`) is a bullet, a square a rule
  runs through is a grid's cell, and a square without blank paper left of, above and below it
  (`CLEAR_MARGIN`) is a letter among letters (Hangul's ㅁ) or a QR code's eye. Its label is the text of the
  element holding it or to its right when that element is one line (a box inside a block of several lines
  gets none: the engines give a block's box, not its lines').

A box becomes a `checkbox` element (`checked`, `text` its label, `markdown` `[x] label` / `[ ] label`). When a
paragraph's words are exactly its boxes' labels, the boxes replace it; otherwise they are put before it. A box
under one of the PDF's own form widgets is the widget's printed frame and is not counted twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pypdfium2.raw as pdfium_c
from PIL import Image

from services.core.db.models import Document, Page
from services.core.elements import BBox, Element, ElementType, page_markdown
from services.core.errors import describe
from services.core.logging import get_logger
from services.core.pages import PageEntry, entry_elements, entry_size
from services.core.pdf import PDF, PDFIUM_LOCK, open_pdf
from services.core.settings import Settings
from services.core.storage import ObjectStore
from services.results.figures import stored_pixels
from services.results.forms import displayed, insert_in_order

log = get_logger(__name__)

MIN_SIDE = 5.0  # points: a square smaller than this is a bullet or a dot
MAX_SIDE = 20.0  # points: larger is a frame, a table cell, a figure
SQUARE = 0.15  # |width - height| / side: how far from square a box may be
FILLED_SHARE = 0.08  # of a scanned box's interior dark: ticked
SOLID_SHARE = 0.45  # of its interior dark: a solid square (a bullet, a QR code's eye), not a box
CLEAR_MARGIN = 0.3  # of the side: blank paper left of, above and below a box on a scan
CLEAR_INK = 0.02  # share of that margin's pixels that may be ink (specks)
LABEL_REACH = 250.0  # points to the right of a box where its label may be
LABEL_GAP = 14.0  # points between a box and the start of its label's paragraph
TICK_CHARACTERS = frozenset("Xx\u2713\u2714\u2717\u2718")  # X ✓ ✔ ✗ ✘ written in a box
BOX_GLYPHS = frozenset("\u25a1\u2610\u2611\u2612\u25a0")  # □ ☐ ☑ ☒ ■: what OCR reads a box as
DARK = 128  # grey level below which a pixel is ink
SHEET_POINTS = 792.0  # an image upload's longest side, in points: a letter sheet (A4's is 842)
MIN_PIXELS = 8  # a box smaller than this many pixels cannot be told from a letter


@dataclass(frozen=True, slots=True)
class FoundBox:
    bbox: BBox  # displayed page points, top-left origin
    checked: bool
    label: str
    source: str  # "drawn" or "scan"


# digital pages ----------------------------------------------------------------------------------------------------

def _bounds(obj: Any) -> tuple[float, float, float, float]:
    left, bottom, right, top = (pdfium_c.FS_FLOAT(), pdfium_c.FS_FLOAT(), pdfium_c.FS_FLOAT(), pdfium_c.FS_FLOAT())
    pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top)
    return left.value, bottom.value, right.value, top.value


def _is_outline_square(obj: Any, bounds: tuple[float, float, float, float]) -> bool:
    width, height = bounds[2] - bounds[0], bounds[3] - bounds[1]
    side = max(width, height)
    if not MIN_SIDE <= side <= MAX_SIDE or abs(width - height) > SQUARE * side:
        return False
    fill, stroke = pdfium_c.c_int(), pdfium_c.FPDF_BOOL()
    if not pdfium_c.FPDFPath_GetDrawMode(obj, fill, stroke) or not stroke.value or fill.value:
        return False
    segments = pdfium_c.FPDFPath_CountSegments(obj)
    if not 4 <= segments <= 6:
        return False
    curve = pdfium_c.FPDF_SEGMENT_BEZIERTO
    return all(pdfium_c.FPDFPathSegment_GetType(pdfium_c.FPDFPath_GetPathSegment(obj, i)) != curve
               for i in range(segments))


def _inside(inner: tuple[float, float, float, float], box: tuple[float, float, float, float]) -> bool:
    """The inner object's centre lies in the box and it is not much larger than the box (a tick may overhang)."""
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    side = box[2] - box[0]
    return (box[0] < cx < box[2] and box[1] < cy < box[3]
            and inner[2] - inner[0] <= 1.6 * side and inner[3] - inner[1] <= 1.6 * side)


def _touching(a: tuple[float, float, float, float], b: tuple[float, float, float, float], gap: float = 1.5) -> bool:
    return a[0] - gap <= b[2] and b[0] - gap <= a[2] and a[1] - gap <= b[3] and b[1] - gap <= a[3]


def _bounded_text(textpage: Any, left: float, top: float, right: float, bottom: float) -> str:
    count = pdfium_c.FPDFText_GetBoundedText(textpage, left, top, right, bottom, None, 0)
    if count <= 0:
        return ""
    buffer = (pdfium_c.c_ushort * (count + 1))()
    pdfium_c.FPDFText_GetBoundedText(textpage, left, top, right, bottom, buffer, count + 1)
    return bytes(buffer)[: count * 2].decode("utf-16-le", errors="replace").replace("\x00", "")


def page_drawn_boxes(page: Any, textpage: Any, width: float, height: float, *, rotation: int) -> list[FoundBox]:
    """The boxes drawn on one open pdfium page (raw handles; `width`, `height` as unrotated)."""
    paths: list[tuple[Any, tuple[float, float, float, float]]] = []
    for index in range(pdfium_c.FPDFPage_CountObjects(page)):
        obj = pdfium_c.FPDFPage_GetObject(page, index)
        if pdfium_c.FPDFPageObj_GetType(obj) == pdfium_c.FPDF_PAGEOBJ_PATH:
            paths.append((obj, _bounds(obj)))
    squares = [bounds for obj, bounds in paths if _is_outline_square(obj, bounds)]
    # a box stands alone: a square touching another path that is not inside it (a tick) is a table's cell
    lone = [s for s in squares if not any(o is not s and _touching(s, o) and not _inside(o, s) for _, o in paths)]
    if rotation % 180:
        width, height = height, width
    found: list[FoundBox] = []
    for box in lone:
        ticked = any(b is not box and b not in squares and _inside(b, box) for _, b in paths)
        inner = "".join(_bounded_text(textpage, box[0] + 0.5, box[3] - 0.5, box[2] - 0.5, box[1] + 0.5).split())
        if len(inner) > 1:
            continue  # words or a number in a square: a cell or a frame, not a box (a box holds one mark)
        ticked = ticked or bool(inner)
        same_line = [o for o in lone if o[0] > box[2] and o[1] < box[3] and o[3] > box[1]]
        right = min([o[0] for o in same_line] + [box[2] + LABEL_REACH])
        label = " ".join(_bounded_text(textpage, box[2] + 0.5, box[3] + 2, right - 0.5, box[1] - 2).split())
        rect = pdfium_c.FS_RECTF(box[0], box[3], box[2], box[1])
        found.append(FoundBox(bbox=displayed(page, width, height, rect), checked=ticked, label=label,
                              source="drawn"))
    return found


# scanned pages ----------------------------------------------------------------------------------------------------

def _runs(row: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of True in a 1-D boolean array."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], row.view(np.int8), [0]))))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True))


def scanned_boxes(image: Image.Image, width_pt: float, height_pt: float, *,
                  sheet: bool = False) -> list[tuple[BBox, bool]]:
    """Square outlines in a page's pixels, with whether each is ticked: (box in the page's units, checked).
    `sheet`: the page is an image upload (its units are its pixels): its longest side is taken as a sheet's
    (`SHEET_POINTS`) to know how many pixels a point is."""
    ink = np.asarray(image.convert("L")) < DARK
    scale = image.width / width_pt  # pixels per page unit
    per_point = max(image.size) / SHEET_POINTS if sheet else scale
    low, high = max(MIN_PIXELS, int(MIN_SIDE * per_point)), int(MAX_SIDE * per_point) + 1
    runs: dict[int, list[tuple[int, int]]] = {}
    for y in np.flatnonzero(ink.any(axis=1)).tolist():
        kept = [(a, b) for a, b in _runs(ink[y]) if low <= b - a <= high]
        if kept:
            runs[y] = kept
    found: list[tuple[int, int, int, int]] = []
    for y, row_runs in runs.items():
        for a, b in row_runs:
            side = b - a
            if any(f[0] - 2 <= a <= f[2] and f[1] - 2 <= y <= f[3] for f in found):
                continue  # a thick edge's next row, or a box already found
            bottom = _matching_edge(runs, y, a, b, side)
            if bottom is None:
                continue
            thick = max(2, side // 8)
            left, right = ink[y:bottom + 1, a:a + thick].any(axis=1), ink[y:bottom + 1, b - thick:b].any(axis=1)
            if left.mean() < 0.9 or right.mean() < 0.9:
                continue
            found.append((a, y, b, bottom + 1))
    boxes: list[tuple[BBox, bool]] = []
    for x0, y0, x1, y1 in found:
        margin = max(2, (x1 - x0) // 5)
        interior = ink[y0 + margin:y1 - margin, x0 + margin:x1 - margin]
        share = float(interior.mean()) if interior.size else 1.0
        if share >= SOLID_SHARE or _crossed_by_line(ink, x0, y0, x1, y1) or not _clear_around(ink, x0, y0, x1, y1):
            continue  # a solid square is a bullet; a box a rule runs through is a grid's cell
        bbox = (round(x0 / scale, 2), round(y0 / scale, 2), round(x1 / scale, 2), round(y1 / scale, 2))
        boxes.append((bbox, share >= FILLED_SHARE))
    return boxes


def _matching_edge(runs: dict[int, list[tuple[int, int]]], y: int, a: int, b: int, side: int) -> int | None:
    """The row of the box's bottom edge: a run of the same span about one side below `y`."""
    tolerance = max(2, side // 8)
    for bottom in range(y + side + tolerance, y + side - tolerance - 1, -1):
        if any(abs(a2 - a) <= tolerance and abs(b2 - b) <= tolerance for a2, b2 in runs.get(bottom, ())):
            return bottom
    return None


def _clear_around(ink: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> bool:
    """Blank paper left of, above and below the box (`CLEAR_MARGIN` of its side): a square letter (Hangul's ㅁ,
    a bold O) sits among its word's letters and a QR code's eye among its modules; a box stands apart (its
    label, to its right, may come close)."""
    margin = max(4, int(CLEAR_MARGIN * (x1 - x0)))
    top, bottom, left = max(0, y0 - margin), min(ink.shape[0], y1 + margin), max(0, x0 - margin)
    ring = [ink[top:y0 - 1, left:x1], ink[y1 + 1:bottom, left:x1], ink[y0:y1, left:x0 - 1]]
    dark = sum(int(part.sum()) for part in ring)
    return dark <= CLEAR_INK * sum(part.size for part in ring)


def _crossed_by_line(ink: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> bool:
    """A rule runs through the box's sides (a table's grid, underlining): ink just outside on both sides."""
    middle = (y0 + y1) // 2
    outside_left = ink[middle, max(0, x0 - 3):x0].any() if x0 >= 3 else False
    outside_right = ink[middle, x1:x1 + 3].any() if x1 + 3 <= ink.shape[1] else False
    above = ink[max(0, y0 - 3):y0, (x0 + x1) // 2].any() if y0 >= 3 else False
    below = ink[y1:y1 + 3, (x0 + x1) // 2].any() if y1 + 3 <= ink.shape[0] else False
    return bool((outside_left and outside_right) or (above and below))


def _area(element: Element) -> float:
    return (element.bbox[2] - element.bbox[0]) * (element.bbox[3] - element.bbox[1]) if element.bbox else 0.0


def _left(element: Element) -> float:
    return element.bbox[0] if element.bbox else 0.0


def scan_labels(boxes: list[tuple[BBox, bool]], elements: list[Element], per_point: float = 1.0) -> list[FoundBox]:
    """Each scanned box with a label: the text of the one-line element holding it or nearest to its right
    (within `LABEL_REACH` points; `per_point`: page units per point), without a box glyph the OCR read."""
    found = []
    for bbox, checked in boxes:
        middle = (bbox[1] + bbox[3]) / 2
        level = [e for e in elements if e.bbox is not None and e.bbox[1] <= middle <= e.bbox[3]
                 and e.type is not ElementType.CHECKBOX]
        holding = [e for e in level if e.bbox is not None and e.bbox[0] - 2 <= bbox[0] and e.bbox[2] >= bbox[2]]
        right = [e for e in level if e.bbox is not None and bbox[2] - 2 <= e.bbox[0] <= bbox[2] + LABEL_REACH *
                 per_point]
        smallest = min(holding, key=_area, default=None)
        nearest = smallest if smallest is not None else min(right, key=_left, default=None)
        label = ""
        if nearest is not None and nearest.bbox is not None and \
                nearest.bbox[3] - nearest.bbox[1] <= 2.5 * (bbox[3] - bbox[1]):
            words = nearest.text.split()
            while words and (words[0] in BOX_GLYPHS or words[0] in TICK_CHARACTERS):
                words = words[1:]
            label = " ".join(words)[:200]
        found.append(FoundBox(bbox=bbox, checked=checked, label=label, source="scan"))
    return found


# into the page's tree ---------------------------------------------------------------------------------------------

def _overlaps(a: BBox, b: BBox) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def add_boxes(entry: PageEntry, boxes: list[FoundBox]) -> int:
    """Puts the page's boxes into its entry as `checkbox` elements (changed in place); returns how many."""
    elements = entry_elements(entry)
    widgets = [e.bbox for e in elements if e.type is ElementType.FORM_FIELD and e.bbox is not None]
    boxes = [b for b in boxes if not any(_overlaps(b.bbox, w) for w in widgets)]
    if not boxes:
        return 0
    consistent = (entry.get("markdown") or "").strip() == page_markdown(elements).strip()
    number = int(entry["page_number"])
    start = max((int(e.id.rsplit("-e", 1)[1]) for e in elements if e.id.rsplit("-e", 1)[-1].isdigit()), default=0)
    made = [Element(id=f"p{number}-e{n}", type=ElementType.CHECKBOX, page=number, bbox=box.bbox, text=box.label,
                    checked=box.checked, markdown=f"[{'x' if box.checked else ' '}] {box.label}".rstrip())
            for n, box in enumerate(sorted(boxes, key=lambda b: (b.bbox[1], b.bbox[0])), start + 1)]
    for holder in [e for e in elements if e.bbox is not None and e.type in (ElementType.PARAGRAPH, ElementType.LIST)]:
        assert holder.bbox is not None
        reach = (holder.bbox[0] - LABEL_GAP, holder.bbox[1], holder.bbox[2], holder.bbox[3])
        inside = [c for c in made if c.bbox is not None and _overlaps(c.bbox, reach)]
        # an "X" written in a box, or the box as OCR read it, is in the text
        words = [w for w in holder.text.split() if w not in TICK_CHARACTERS and w not in BOX_GLYPHS]
        if inside and words and words == " ".join(c.text for c in inside).split():
            at = elements.index(holder)
            elements[at:at + 1] = inside
            made = [c for c in made if c not in inside]
    for element in made:
        insert_in_order(elements, element)
    entry["elements"] = [e.model_dump(mode="json") for e in elements]
    if consistent:
        body = page_markdown(elements)
        entry["markdown"] = body + "\n" if body else ""
    return len(boxes)


def pdf_drawn_boxes(pdf_bytes: bytes, page_numbers: list[int]) -> tuple[dict[int, list[FoundBox]], list[int]]:
    """The drawn boxes of a PDF's digital pages (1-based numbers), and the numbers of its pages without a text
    layer (scans: for `scanned_boxes`)."""
    found: dict[int, list[FoundBox]] = {}
    scanned: list[int] = []
    with PDFIUM_LOCK:
        pdf = open_pdf(pdf_bytes)
        try:
            for number in page_numbers:
                if not 1 <= number <= len(pdf):
                    continue
                page = pdf[number - 1]
                textpage = page.get_textpage()
                try:
                    if pdfium_c.FPDFText_CountChars(textpage.raw) <= 0:
                        scanned.append(number)
                    else:
                        found[number] = page_drawn_boxes(page.raw, textpage.raw, *page.get_size(),
                                                         rotation=page.get_rotation())
                finally:
                    textpage.close()
                    page.close()
        finally:
            pdf.close()
    return found, scanned


def mark_boxes(entries: list[PageEntry], source: bytes | None,
               pixels: Callable[[PageEntry], Image.Image]) -> int:
    """Finds the boxes of the succeeded page entries (changed in place) and returns how many were added.
    `source`: the uploaded PDF (None for an image upload: every page is a scan); `pixels`: a page's pixels."""
    todo = [e for e in entries if e.get("status") == "succeeded" and min(entry_size(e)) > 0]
    numbers = [int(e["page_number"]) for e in todo]
    drawn, scanned = pdf_drawn_boxes(source, numbers) if source is not None else ({}, numbers)
    added = 0
    for entry in todo:
        number = int(entry["page_number"])
        boxes = drawn.get(number, [])
        if number in scanned:
            elements = entry_elements(entry)
            width, height = entry_size(entry)
            found = scanned_boxes(pixels(entry), width, height, sheet=source is None)
            per_point = max(width, height) / SHEET_POINTS if source is None else 1.0
            boxes = scan_labels(found, elements, per_point)
        added += add_boxes(entry, boxes) if boxes else 0
    return added


def document_boxes(document: Document, pages: list[Page], entries: list[PageEntry], settings: Settings,
                   store: ObjectStore) -> int:
    """The boxes of a PDF or image upload's pages put into its entries; how many (0 for office documents, and
    when the source cannot be read: the boxes are extra, the pages are parsed either way)."""
    if document.media_type != PDF and not document.media_type.startswith("image/"):
        return 0
    try:
        source = store.get(document.source_key) if document.media_type == PDF else None
        return mark_boxes(entries, source, stored_pixels(store, document, pages, settings))
    except Exception as exc:  # noqa: BLE001 - see above
        log.warning("marks.unreadable", document_id=document.id, error=describe(exc))
        return 0
