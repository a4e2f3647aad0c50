"""Answers that carry their own boxes: dots.ocr's layout prompt (`prompt_layout_all_en`) answers a JSON list of
`{"bbox": [x1, y1, x2, y2], "category": ..., "text": ...}` in reading order, boxed in pixels of the image as
the model saw it (resized by its processor to multiples of 28). Those boxes are used as they are — turned
back and scaled to page points — instead of aligning the text to the page's words."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from services.core.elements import Element, ElementType, element_id
from services.core.pdf import PDF, PDFIUM_LOCK, load_image, open_pdf
from services.worker.engines.geometry import Box, pixel_map
from services.worker.engines.vllm.answer_blocks import pipe_table_html, plain_text

CATEGORIES: dict[str, ElementType] = {
    "Caption": ElementType.CAPTION, "Footnote": ElementType.FOOTNOTE, "Formula": ElementType.FORMULA,
    "List-item": ElementType.LIST, "Page-footer": ElementType.PAGE_FOOTER, "Page-header": ElementType.PAGE_HEADER,
    "Picture": ElementType.FIGURE, "Section-header": ElementType.HEADING, "Table": ElementType.TABLE,
    "Text": ElementType.PARAGRAPH, "Title": ElementType.TITLE,
}
# Qwen2-VL's image processor (dots.ocr's): sides rounded to multiples of 28, pixels kept within these bounds.
_FACTOR, _MIN_PIXELS, _MAX_PIXELS = 28, 3136, 11289600
_FENCE = re.compile(r"^```[a-zA-Z]*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)
_HEADING_MARK = re.compile(r"^#{1,6}\s")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s")


def read_layout(text: str) -> list[dict[str, Any]] | None:
    """The answer's layout cells, or None when it is not the layout JSON (the model answered something else)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        cells = json.loads(body)
    except ValueError:
        return None
    if isinstance(cells, dict):
        cells = cells.get("layout") or cells.get("cells") or [cells]
    if not isinstance(cells, list):
        return None
    good = [c for c in cells if isinstance(c, dict) and c.get("category") in CATEGORIES and _box(c) is not None]
    return good if good or not cells else None


def _box(cell: dict[str, Any]) -> tuple[float, float, float, float] | None:
    raw = cell.get("bbox")
    if not (isinstance(raw, list) and len(raw) == 4 and all(isinstance(v, int | float) for v in raw)):
        return None
    x1, y1, x2, y2 = (float(v) for v in raw)
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)) if x1 != x2 and y1 != y2 else None


def cell_markdown(cell: dict[str, Any]) -> str:
    """A layout cell's Markdown: headings and list items marked, formulas in `$$`, tables as their HTML."""
    category = cell["category"]
    text = str(cell.get("text") or "").strip()
    if category == "Picture" or not text:
        return ""
    if category in ("Title", "Section-header") and not _HEADING_MARK.match(text):
        return ("# " if category == "Title" else "## ") + text
    if category == "Formula" and not text.startswith(("$$", "\\[")):
        return f"$$\n{text.strip('$').strip()}\n$$"
    if category == "List-item" and not _LIST_MARK.match(text):
        return f"- {text}"
    return text


def layout_markdown(cells: list[dict[str, Any]]) -> str:
    """The page's Markdown from its layout: every cell but the running header and footer, in order."""
    parts = [cell_markdown(c) for c in cells if c["category"] not in ("Page-header", "Page-footer")]
    return "\n\n".join(p for p in parts if p)


def model_frame(width: int, height: int) -> tuple[int, int]:
    """The size the model's processor resized a `width` x `height` image to (Qwen2-VL `smart_resize`)."""
    h_bar = max(_FACTOR, round(height / _FACTOR) * _FACTOR)
    w_bar = max(_FACTOR, round(width / _FACTOR) * _FACTOR)
    if h_bar * w_bar > _MAX_PIXELS:
        beta = math.sqrt(height * width / _MAX_PIXELS)
        h_bar = math.floor(height / beta / _FACTOR) * _FACTOR
        w_bar = math.floor(width / beta / _FACTOR) * _FACTOR
    elif h_bar * w_bar < _MIN_PIXELS:
        beta = math.sqrt(_MIN_PIXELS / (height * width))
        h_bar = math.ceil(height * beta / _FACTOR) * _FACTOR
        w_bar = math.ceil(width * beta / _FACTOR) * _FACTOR
    return w_bar, h_bar


def layout_elements(cells: list[dict[str, Any]], *, image_size: tuple[int, int], rotation: int,
                    page_size: tuple[float, float], page: int) -> list[Element]:
    """The layout cells as elements, boxed in page points (the image was rendered turned by `rotation`)."""
    width, height = model_frame(*image_size)
    to_page = pixel_map(width, height, rotation, *page_size)
    elements: list[Element] = []
    for cell in cells:
        kind = CATEGORIES[cell["category"]]
        box = _box(cell)
        markdown = cell_markdown(cell)
        raw = str(cell.get("text") or "").strip()
        extra: dict[str, Any] = {}
        if kind == ElementType.TABLE:
            extra["html"] = raw if raw.lstrip().startswith("<") else pipe_table_html(raw)
        elif kind == ElementType.FORMULA:
            extra["latex"] = raw.strip("$").strip()
        elif kind in (ElementType.TITLE, ElementType.HEADING):
            extra["level"] = 1 if kind == ElementType.TITLE else 2
        elif kind == ElementType.LIST:
            extra.update(items=[_LIST_MARK.sub("", raw, count=1)], ordered=bool(re.match(r"\s*\d", raw)))
        elements.append(Element(
            id=element_id(page, len(elements) + 1), type=kind, page=page,
            bbox=to_page(Box(*box)) if box is not None else None,
            text=plain_text(_HEADING_MARK.sub("", raw)) if kind != ElementType.FORMULA else extra["latex"],
            markdown=markdown, **extra))
    return elements


def page_size(data: bytes, media_type: str) -> tuple[float, float]:
    """The page as displayed in points (after /Rotate); an image's pixels count as points."""
    if media_type == PDF:
        with PDFIUM_LOCK:
            pdf = open_pdf(data)
            try:
                page = pdf[0]
                width, height = page.get_size()
                page.close()
            finally:
                pdf.close()
        return float(width), float(height)
    image = load_image(data)
    return float(image.width), float(image.height)
