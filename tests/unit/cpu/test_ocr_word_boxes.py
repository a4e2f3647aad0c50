"""OCR words sit where the recognizer read them: a label and its value at a tab stop, which the detector reads as
one box, keep the gap between them (issue 28: a reference card read by OCR lost its column gutters, because the
words were spread over the box by character count)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from services.worker.engines.cpu import elements, ocr, pagecolumns, tuning
from services.worker.engines.cpu.model import Block, Box, Line, Word

_LABEL, _VALUE = "Draw a line", "draw(path p, pen q)"


def _tabbed(gap: int) -> tuple[Image.Image, dict[str, tuple[int, int]]]:
    """One line: the label, `gap` pixels of paper, the value; and every word's inked extent."""
    image = Image.new("L", (900, 160), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=28)
    extents: dict[str, tuple[int, int]] = {}
    x = 40
    for piece in (_LABEL, _VALUE):
        cursor = x
        for word in piece.split():
            left, _, right, _ = draw.textbbox((cursor, 60), word, font=font)
            extents[word] = (left, right)
            cursor = int(draw.textbbox((cursor, 60), word + " ", font=font)[2])
        draw.text((x, 60), piece, fill=0, font=font)
        x = int(draw.textbbox((x, 60), piece, font=font)[2]) + gap
    return image, extents


def test_a_gap_inside_one_detected_box_stays_where_it_is() -> None:
    image, extents = _tabbed(gap=36)
    page = ocr.read_image(np.asarray(image.convert("RGB")), try_turns=False)
    assert len(page.lines) == 1, "the detector reads the label and its value as one box"
    words = {word.text: word.box for word in page.lines[0].words}
    assert set(words) == set(extents)
    for text, (left, right) in extents.items():
        centre = (words[text].x0 + words[text].x1) / 2
        assert left <= centre <= right, (text, words[text], (left, right))
    true_gap = extents["draw(path"][0] - extents["line"][1]
    assert words["draw(path"].x0 - words["line"].x1 >= 0.7 * true_gap
    # The same words spread by character count close the gap to about a space.
    box = page.lines[0].box
    shared = dict(zip(_LABEL.split() + _VALUE.split(),
                      ocr._share_spans(box, (_LABEL + " " + _VALUE).split()), strict=True))
    assert shared["draw(path"][0] - shared["line"][1] < 0.5 * true_gap


def test_without_the_recognizer_columns_words_take_their_share() -> None:
    quad = np.array([[0, 0], [120, 0], [120, 10], [0, 10]], dtype=np.float32)
    line = ocr._line(quad, "ab cd", 0.9, None)
    assert [(w.box.x0, w.box.x1) for w in line.words] == [(0.0, 48.0), (72.0, 120.0)]
    assert line.box == Box(0.0, 0.0, 120.0, 10.0)


class _Placed:
    """The two fields of RapidOCR's `WordInfo` `_line` reads."""

    def __init__(self, word_cols: list[list[int]], line_txt_len: float) -> None:
        self.word_cols, self.line_txt_len = word_cols, line_txt_len


def test_columns_that_do_not_match_the_text_fall_back_to_shares() -> None:
    quad = np.array([[0, 0], [120, 0], [120, 10], [0, 10]], dtype=np.float32)
    short = ocr._line(quad, "ab cd", 0.9, _Placed([[1, 3]], 12.0))  # one word's columns for two words
    assert [(w.box.x0, w.box.x1) for w in short.words] == [(0.0, 48.0), (72.0, 120.0)]
    placed = ocr._line(quad, "ab cd", 0.9, _Placed([[1, 3], [9, 11]], 12.0))
    assert [(w.box.x0, w.box.x1) for w in placed.words] == [(5.0, 45.0), (85.0, 120.0)]


def test_ink_boxes_hug_the_letters_where_the_detector_pads_them() -> None:
    """The detector pads its box by about a third of the line's height and the read columns miss a letter's edge by
    a pixel or two; each word's `ink` is its own letters, so the gap between two words and a word's height are the
    page's (issue 28: a reference card read by OCR kept no column gap wide enough, and looked a third taller)."""
    image, extents = _tabbed(gap=36)
    font = ImageFont.load_default(size=28)
    spans = [ImageDraw.Draw(image).textbbox((40, 60), piece, font=font) for piece in (_LABEL, _VALUE)]
    top, bottom = min(span[1] for span in spans), max(span[3] for span in spans)  # the line's letters, top to bottom
    page = ocr.read_image(np.asarray(image.convert("RGB")), try_turns=False)
    line = page.lines[0]
    assert line.box.height >= 1.3 * (bottom - top), "the detected box is padded"
    for word in line.words:
        assert word.ink is not None
        left, right = extents[word.text]
        assert abs(word.ink.x0 - left) <= 3 and abs(word.ink.x1 - right) <= 3, (word.text, word.ink, (left, right))
        assert abs(word.ink.height - (bottom - top)) <= 3, (word.ink, (top, bottom))
    inked = {word.text: word.ink for word in line.words if word.ink is not None}
    assert abs((inked["draw(path"].x0 - inked["line"].x1) - (extents["draw(path"][0] - extents["line"][1])) <= 3


def _paper(ink: list[tuple[int, int, int, int]], specks: tuple[tuple[int, int], ...] = ()) -> np.ndarray:
    """A white page 40 × 100 px with black rectangles (x0, y0, x1, y1, end-exclusive) and single black pixels."""
    page = np.full((40, 100), 255, dtype=np.uint8)
    for x0, y0, x1, y1 in ink:
        page[y0:y1, x0:x1] = 0
    for x, y in specks:
        page[y, x] = 0
    return ocr._smoothed(np.stack([page] * 3, axis=-1))


def test_a_line_band_leaves_out_a_neighbours_descender_and_a_speck() -> None:
    # a line's letters in rows 15-25, a descender of the line above in rows 0-3, a speck of noise in the padding
    paper = _paper([(10, 15, 31, 26), (50, 15, 81, 26), (20, 0, 26, 4)], specks=((40, 31),))
    band, spans = ocr._ink_spans(paper, Box(0, 0, 100, 36), [(8, 35), (45, 85)]) or ((0, 0), [])
    assert band == (14.0, 27.0)  # the 3 x 3 mean spreads each edge by a pixel
    assert spans == [(9.0, 32.0), (49.0, 82.0)]


def test_a_span_read_short_of_its_letters_takes_the_rest_and_a_thin_stroke_is_ink() -> None:
    paper = _paper([(10, 15, 31, 26), (60, 15, 61, 26)])  # a word, and a one-pixel stroke (an "l" of a coarse scan)
    found = ocr._ink_spans(paper, Box(0, 10, 100, 30), [(14, 27), (55, 70)])
    assert found is not None
    assert found[1] == [(9.0, 32.0), (59.0, 62.0)]
    assert ocr._ink_spans(_paper([]), Box(0, 10, 100, 30), [(14, 27)]) is None


def _measured(text: str, box: Box, ink_height: float) -> Line:
    words = [Word(token, box) for token in text.split()]
    for word in words:
        word.ink = Box(word.box.x0, box.cy - ink_height / 2, word.box.x1, box.cy + ink_height / 2)
    return Line(words, box)


def test_every_line_takes_the_share_of_the_page_lines_of_text_not_its_own_band() -> None:
    prose = _measured("The ink fills a share of the box", Box(0, 0, 300, 20), ink_height=12)
    figures = _measured("7.1 33.3", Box(0, 30, 80, 46), ink_height=6)  # figures fill less: no size of their own
    ocr._even_ink([prose, figures])
    assert [w.ink.height for w in prose.words if w.ink] == [12.0] * 8
    assert [w.ink.height for w in figures.words if w.ink] == pytest.approx([16 * 0.6] * 2)
    short = _measured("7.1 33.3", Box(0, 30, 80, 46), ink_height=6)
    ocr._even_ink([short])  # no line of text on the page: the box's height stands
    assert [w.ink.height for w in short.words if w.ink] == [16.0] * 2


def test_the_page_words_are_boxed_by_their_ink_where_ocr_measured_it() -> None:
    read = Word("read", Box(0, 0, 30, 20))
    read.ink = Box(2, 4, 28, 16)
    layer = Word("layer", Box(40, 0, 80, 20))
    line = Line([read, layer], Box(0, 0, 80, 20))
    words = elements.page_words([Block([line], line.box)], lambda box: (box.x0 * 2, box.y0 * 2, box.x1 * 2,
                                                                          box.y1 * 2))
    assert [(w.text, w.bbox) for w in words] == [("read", (4, 8, 56, 32)), ("layer", (80, 0, 160, 40))]


_ENTRIES = [("draw a line", "draw(path p, pen)"), ("fill a region", "fill(path g, pen)"),
            ("label a point", "label(s, pair z)"), ("draw an arrow", "draw(p, Arrow)"), ("set the pen", "pen p = red"),
            ("make a full circle", "circle(c, real r)")]


def _card(blanks: tuple[set[int], set[int]] = ({3, 8}, {1, 5, 9})) -> Image.Image:
    """A reference card scanned: two page columns of descriptions and their syntax at a tab stop, each column's
    sections (a blank line after the `blanks` rows) ending at its own heights; each page column about 16 times as
    wide as its letters are tall."""
    font = ImageFont.load_default(size=20)
    image = Image.new("L", (1000, 560), 255)
    draw = ImageDraw.Draw(image)
    tab = max(draw.textlength(description, font=font) for description, _ in _ENTRIES) + 24
    for column, after in enumerate(blanks):
        x, y = 30 + 480 * column, 30
        for row, (description, syntax) in enumerate(_ENTRIES * 2):
            draw.text((x, y), description, fill=0, font=font)
            draw.text((x + tab, y), syntax, fill=0, font=font)
            y += 27 * (2 if row in after else 1)
    return image


def test_a_scanned_card_read_as_one_table_breaks_apart_in_its_ink_not_in_its_padded_boxes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The section breaks need page columns at least `TABLE_FLOW_MIN_WIDTH` word heights wide: in the detector's
    padded heights this card's columns are too narrow to be page columns, in its ink they are what the text layer
    would make of them (issue 28: asymptote's reference card read by OCR kept a confidence of 0.99). Page columns
    tiled alike narrower (`TABLE_FLOW_MIN_ALIKE_WIDTH`, a later step) find them in the padded boxes too."""
    page = ocr.read_image(np.asarray(_card().convert("RGB")), try_turns=False)
    words = [word for line in page.lines for word in line.words]
    assert len(words) >= 140
    padded = [(w.box.x0, w.box.y0, w.box.x1, w.box.y1) for w in words]
    inked = [(w.ink.x0, w.ink.y0, w.ink.x1, w.ink.y1) for w in words if w.ink is not None]
    assert len(inked) == len(words)
    assert pagecolumns.table_flow_breaks(inked) >= tuning.TABLE_FLOW_MIN_BREAKS
    assert pagecolumns.table_flow_breaks(padded) >= tuning.TABLE_FLOW_MIN_BREAKS
    monkeypatch.setattr(tuning, "TABLE_FLOW_MIN_ALIKE_WIDTH", tuning.TABLE_FLOW_MIN_WIDTH)  # no narrower tiling
    assert pagecolumns.table_flow_breaks(inked) >= tuning.TABLE_FLOW_MIN_BREAKS
    assert pagecolumns.table_flow_breaks(padded) == 0
