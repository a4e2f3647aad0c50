"""Blocks to the page's element tree: each laid-out block typed (title, heading, list, table, formula, caption,
footnote, code, page header/footer), boxed in page points, with the Markdown the page is rendered from."""

from __future__ import annotations

import re

from services.core.elements import FURNITURE, Element, ElementType, chart_markdown, element_id
from services.worker.engines.base import PageWord
from services.worker.engines.cpu.blockconf import local_health
from services.worker.engines.cpu.charts import Chart
from services.worker.engines.cpu.markdown import block_markdown, join_lines
from services.worker.engines.cpu.model import Block, BlockKind, Box
from services.worker.engines.geometry import BoxMap, identity

_CAPTION = re.compile(r"^(table|tab\.|figure|fig\.|chart|exhibit|scheme|plate|listing|algorithm)\s*[\dIVX]+[:.\s]",
                      re.IGNORECASE)
_FOOTNOTE_MARK = re.compile(r"^(?:\d{1,2}|[*†‡§¶])(?:\s|[A-Z])")
_DISPLAY_MATH = re.compile(r"^\$(?P<latex>[^$]+)\$[.,;:]?$")
_LIST_MARKER = re.compile(r"^(?:\d+\.|-)\s")

def block_text(block: Block) -> str:
    return join_lines([line.text for line in block.lines])


def to_elements(blocks: list[Block], *, page: int, height: float, body_size: float,
                to_page: BoxMap = identity, images: list[Box] | None = None, width: float = 0.0,
                charts: list[Chart] | None = None) -> list[Element]:
    """The elements of a page from its blocks in reading order (`lay_out` puts furniture last; here running
    heads come first and running feet last), with
    figures where the page draws pictures (`images`, text-layer pages; no Markdown of their own) and where it
    draws `charts` (their text kept, their derived data table as `html` and Markdown).

    Adjacent list items of one column become one list element; rendering the elements with `page_markdown`
    gives the same Markdown the blocks render to."""
    elements: list[Element] = []
    pending: list[Block] = []  # list items waiting to be closed into one list

    def add(kind: ElementType, box: Box, text: str, markdown: str, *read_from: Block, **extra: object) -> None:
        # `confidence` holds the blocks' local health until `blockconf.rate` weighs it against the route's.
        elements.append(Element(id=element_id(page, len(elements) + 1), type=kind, page=page, bbox=to_page(box),
                                text=text, markdown=markdown, confidence=local_health(read_from),
                                **extra))  # type: ignore[arg-type]

    def close_list() -> None:
        if not pending:
            return
        rendered = [text for text in (block_markdown(b).strip() for b in pending) if text]
        if not rendered:
            pending.clear()
            return
        box = pending[0].box
        for item in pending[1:]:
            box = box.union(item.box)
        items = [_LIST_MARKER.sub("", text, count=1) for text in rendered]
        add(ElementType.LIST, box, "\n".join(block_text(b) for b in pending), "\n\n".join(rendered), *pending,
            items=items, ordered=rendered[0][:1].isdigit())
        pending.clear()

    for block in blocks:
        if block.kind == BlockKind.LIST_ITEM:
            if pending and not _same_list(pending[-1], block):
                close_list()
            pending.append(block)
            continue
        close_list()
        markdown = block_markdown(block)
        text = block_text(block)
        if block.kind == BlockKind.FURNITURE:
            kind = ElementType.PAGE_HEADER if block.box.cy < height / 2 else ElementType.PAGE_FOOTER
            add(kind, block.box, text, text, block)
        elif block.kind == BlockKind.TABLE:
            add(ElementType.TABLE, block.box, "\n".join(line.text for line in block.lines), markdown, block,
                html=block.html)
        elif block.kind == BlockKind.CODE:
            add(ElementType.CODE, block.box, "\n".join(line.text for line in block.lines), markdown, block)
        elif block.kind == BlockKind.HEADING:
            level = max(1, min(6, block.level))
            title = page == 1 and level == 1 and not any(e.type == ElementType.TITLE for e in elements)
            add(ElementType.TITLE if title else ElementType.HEADING, block.box, text, markdown, block, level=level)
        else:
            add(_paragraph_type(block, text, markdown, height, body_size), block.box, text, markdown, block,
                **_formula_fields(markdown))
    close_list()
    lines = [line.box for block in blocks for line in block.lines]
    for chart in charts or []:
        drawing = Element(id="", type=ElementType.FIGURE, page=page, bbox=to_page(chart.box), text=chart.text,
                          chart=chart.kind, html=chart.html or None, derived=True if chart.html else None)
        _insert_in_reading_order(elements, drawing.model_copy(update={"markdown": chart_markdown(drawing)}))
    drawn = [chart.box for chart in charts or []]
    for figure in _figures(images or [], width, height, lines):
        if any(figure.x_overlap(box) > 0 and figure.y_overlap(box) > 0 for box in drawn):
            continue
        _insert_in_reading_order(elements, Element(id="", type=ElementType.FIGURE, page=page, bbox=to_page(figure)))
    # Running heads open the page's reading order and running feet close it.
    ordered = ([e for e in elements if e.type == ElementType.PAGE_HEADER]
               + [e for e in elements if e.type not in FURNITURE]
               + [e for e in elements if e.type == ElementType.PAGE_FOOTER])
    return [e.model_copy(update={"id": element_id(page, n)}) for n, e in enumerate(ordered, 1)]


# A picture this much of whose area is under the page's own text lines is a background (a shaded box, a banner
# behind a heading), not a figure: a figure's labels, when they are text, cover far less of it.
BACKGROUND_TEXT_SHARE = 0.1


def _figures(images: list[Box], width: float, height: float, lines: list[Box] | None = None) -> list[Box]:
    """Pictures big enough to be figures (not rules, bullets or logos, not a whole-page scan, not a background
    under text), tiles merged."""
    page_area = max(1.0, width * height)
    merged: list[Box] = []
    for box in sorted(images, key=lambda b: (b.y0, b.x0)):
        for index, other in enumerate(merged):
            if box.x_overlap(other) > 0 and box.y_overlap(other) > 0 or (
                    box.x_overlap(other) > 0 and -1 <= box.y0 - other.y1 <= 1):
                merged[index] = other.union(box)
                break
        else:
            merged.append(Box(box.x0, box.y0, box.x1, box.y1))
    return [b for b in merged if min(b.width, b.height) >= 24 and 0.01 * page_area <= b.width * b.height
            <= 0.8 * page_area and not _under_text(b, lines or [])]


def _under_text(picture: Box, lines: list[Box]) -> bool:
    inside = sum(line.width * line.height for line in lines if picture.contains_point(line.cx, line.cy))
    return inside >= BACKGROUND_TEXT_SHARE * max(1.0, picture.width * picture.height)


def _insert_in_reading_order(elements: list[Element], figure: Element) -> None:
    """Before the first element of the figure's column that starts below the figure's top; else after the page's
    content (furniture stays last)."""
    assert figure.bbox is not None
    x0, y0, x1, _ = figure.bbox
    position = next((i for i, e in enumerate(elements) if e.type in FURNITURE), len(elements))
    for index, element in enumerate(elements[:position]):
        if element.bbox is None:
            continue
        ex0, ey0, ex1, _ = element.bbox
        if ey0 >= y0 and min(x1, ex1) > max(x0, ex0):
            position = index
            break
    elements.insert(position, figure)


def _same_list(previous: Block, block: Block) -> bool:
    """The next item of the same list: right under the previous one, in the same column."""
    height = max(1.0, previous.lines[-1].box.height)
    return 0 <= block.box.y0 - previous.box.y1 < 2.5 * height and abs(block.box.x0 - previous.box.x0) < 3 * height


def _paragraph_type(block: Block, text: str, markdown: str, height: float, body_size: float) -> ElementType:
    if _DISPLAY_MATH.match(markdown.strip()):
        return ElementType.FORMULA
    if _CAPTION.match(text):
        return ElementType.CAPTION
    if block.box.y0 > 0.7 * height and block.size < 0.9 * body_size and _FOOTNOTE_MARK.match(text):
        return ElementType.FOOTNOTE
    return ElementType.PARAGRAPH


def _formula_fields(markdown: str) -> dict[str, object]:
    match = _DISPLAY_MATH.match(markdown.strip())
    return {"latex": match.group("latex").strip()} if match else {}


def page_words(blocks: list[Block], to_page: BoxMap = identity) -> list[PageWord]:
    """Every word of the page in the blocks' reading order (lines top to bottom within a block), boxed by its ink
    where OCR measured it (the detector's boxes are padded: gaps between words and their heights come out wrong)."""
    return [PageWord(word.text, to_page(word.ink or word.box)) for block in blocks for line in block.lines
            for word in line.words]
