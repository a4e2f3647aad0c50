"""OCR words sit where the recognizer read them: a label and its value at a tab stop, which the detector reads as
one box, keep the gap between them (issue 28: a reference card read by OCR lost its column gutters, because the
words were spread over the box by character count)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from services.worker.engines.cpu import ocr
from services.worker.engines.cpu.model import Box

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
