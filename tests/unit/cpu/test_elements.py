"""The cpu engine's element tree: types, boxes and the Markdown the page is rendered from."""

from __future__ import annotations

from services.core.elements import ElementType, page_markdown
from services.worker.engines.cpu.elements import to_elements
from services.worker.engines.cpu.markdown import render
from services.worker.engines.cpu.model import Block, BlockKind, Box, Line, Word
from services.worker.engines.geometry import pixel_map


def block(text: str, y0: float, kind: BlockKind = BlockKind.PARAGRAPH, *, x0: float = 50, size: float = 10,
          level: int = 0, html: str = "") -> Block:
    words, cursor = [], x0
    for token in text.split():
        words.append(Word(token, Box(cursor, y0, cursor + 5 * len(token), y0 + size), size=size))
        cursor += 5 * len(token) + 3
    box = Box(x0, y0, cursor - 3, y0 + size)
    return Block([Line(words, box)], box, kind, level=level, html=html)


def test_blocks_become_typed_elements_whose_rendering_is_the_page_markdown() -> None:
    blocks = [
        block("A Big Title", 40, BlockKind.HEADING, size=20, level=1),
        block("Intro text of the page.", 80),
        block("• first point", 100, BlockKind.LIST_ITEM),
        block("• second point", 112, BlockKind.LIST_ITEM),
        block("Table 1: Results by year", 140),
        block("a b", 160, BlockKind.TABLE, html="<table><tr><td>a</td><td>b</td></tr></table>"),
        block("1 A footnote in small type.", 700, size=8),
        block("Page 3", 770, BlockKind.FURNITURE),
    ]
    elements = to_elements(blocks, page=1, height=792, body_size=10)
    assert [e.type for e in elements] == [ElementType.TITLE, ElementType.PARAGRAPH, ElementType.LIST,
                                          ElementType.CAPTION, ElementType.TABLE, ElementType.FOOTNOTE,
                                          ElementType.PAGE_FOOTER]
    assert page_markdown(elements) + "\n" == render(blocks)
    title, _, bullets, _, table, _, footer = elements
    assert title.level == 1 and title.markdown == "# A Big Title" and title.bbox == (50, 40, 101, 60)
    assert bullets.items == ["first point", "second point"] and bullets.ordered is False
    assert bullets.bbox == (50, 100, 116, 122)  # the union of its items
    assert table.html and table.markdown == table.html
    assert footer.text == "Page 3" and "Page 3" not in page_markdown(elements)
    assert [e.id for e in elements] == [f"p1-e{n}" for n in range(1, 8)]


def test_items_far_apart_are_two_lists() -> None:
    blocks = [block("1. one", 100, BlockKind.LIST_ITEM), block("2. two", 112, BlockKind.LIST_ITEM),
              block("1. again", 400, BlockKind.LIST_ITEM, x0=300)]
    elements = to_elements(blocks, page=2, height=792, body_size=10)
    assert [e.items for e in elements] == [["one", "two"], ["again"]] and elements[0].ordered is True
    assert page_markdown(elements) + "\n" == render(blocks)


def test_ocr_boxes_turn_back_to_the_page_as_displayed() -> None:
    # A 200 x 100 pt page rendered at 2 px per pt (400 x 200 px), read after turning it.
    box = Box(10, 20, 30, 60)
    assert pixel_map(400, 200, 0, 200, 100)(box) == (5, 10, 15, 30)
    # Turned 180: the box sits mirrored in the page.
    assert pixel_map(400, 200, 180, 200, 100)(box) == (185, 70, 195, 90)
    # Turned 90 clockwise: the turned image is 200 x 400 px; its top-left corner was the page's bottom-left.
    assert pixel_map(200, 400, 90, 200, 100)(box) == (10, 85, 30, 95)
    # Turned 270 clockwise (90 counter-clockwise): the turned image's top-left was the page's top-right.
    assert pixel_map(200, 400, 270, 200, 100)(box) == (170, 5, 190, 15)


def test_pictures_become_figures_in_their_column_without_markdown() -> None:
    blocks = [block("Left column text", 100), block("Right column top", 100, x0=320),
              block("Right column below the chart", 400, x0=320)]
    images = [Box(320, 150, 560, 300), Box(320, 300, 560, 380),  # one chart drawn as two tiles
              Box(50, 700, 60, 710)]  # a bullet icon: no figure
    elements = to_elements(blocks, page=1, height=792, body_size=10, images=images, width=612)
    assert [e.type for e in elements] == [ElementType.PARAGRAPH, ElementType.PARAGRAPH, ElementType.FIGURE,
                                          ElementType.PARAGRAPH]
    figure = elements[2]
    assert figure.bbox == (320, 150, 560, 380) and figure.markdown == ""
    assert page_markdown(elements) + "\n" == render(blocks) and elements[2].id == "p1-e3"


def test_running_heads_open_the_reading_order_and_feet_close_it() -> None:
    blocks = [block("Body text here.", 300), block("Journal of Things", 20, BlockKind.FURNITURE),
              block("12", 770, BlockKind.FURNITURE)]
    elements = to_elements(blocks, page=4, height=792, body_size=10)
    assert [e.type for e in elements] == [ElementType.PAGE_HEADER, ElementType.PARAGRAPH, ElementType.PAGE_FOOTER]
    assert [e.id for e in elements] == ["p4-e1", "p4-e2", "p4-e3"] and page_markdown(elements) == "Body text here."


def test_a_picture_under_the_pages_text_is_a_background_not_a_figure() -> None:
    """A shaded box behind an abstract, a banner behind a heading: drawn as images, read as text."""
    blocks = [block("Abstract text set on a grey box, line one", 100), block("and line two of it", 112),
              block("Body text under the chart", 400)]
    images = [Box(40, 95, 400, 130),  # the grey box: its lines cover most of it
              Box(50, 200, 560, 380)]  # a chart: no text of the page on it
    elements = to_elements(blocks, page=1, height=792, body_size=10, images=images, width=612)
    assert [e.bbox for e in elements if e.type is ElementType.FIGURE] == [(50, 200, 560, 380)]
