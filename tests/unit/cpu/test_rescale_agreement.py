"""OCR read twice: a page's lines read again on crops shrunk to a few pixels' height agree on a crisp scan, less on
a coarse one (issue 28, item 2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.confidence import OcrPenalties, ocr_signals
from services.worker.engines.cpu.ocr import char_similarity, read_image, rescale_agreement

_LINES = ["The quarterly report shows revenue", "growing in every region we serve,",
          "while costs stayed close to plan.", "Shipping times fell by two days."]


def _page() -> Image.Image:
    """Four lines of 11-pt text as a 200-dpi scan shows them."""
    image = Image.new("L", (1700, 700), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=31)
    for index, line in enumerate(_LINES):
        draw.text((150, 120 + 70 * index), line, fill=0, font=font)
    return image


def _coarse(image: Image.Image, dpi: int) -> Image.Image:
    """The page scanned at `dpi` and shown at 200 dpi again: the recognizer reads plausible words, sure of them."""
    small = image.resize((image.width * dpi // 200, image.height * dpi // 200), Image.Resampling.LANCZOS)
    return small.resize(image.size, Image.Resampling.BICUBIC)


def test_a_crisp_page_reads_the_same_shrunk_and_a_coarse_one_does_not() -> None:
    crisp = read_image(np.asarray(_page().convert("RGB")), try_turns=False, rescale_lines=tuning.OCR_RESCALE_SAMPLE)
    coarse = read_image(np.asarray(_coarse(_page(), 40).convert("RGB")), try_turns=False,
                        rescale_lines=tuning.OCR_RESCALE_SAMPLE)
    assert crisp.rescale_lines == len(_LINES) and coarse.rescale_lines > 0
    assert crisp.rescale_agreement >= 0.99
    assert coarse.rescale_agreement < crisp.rescale_agreement - 0.02


@dataclass
class _Read:
    txts: tuple[str, ...]


class _Recognizer:
    """Answers the second reading of a crop with the text given for the crop's grey level, and records the crops'
    sizes."""

    def __init__(self, answers: dict[int, str]) -> None:
        self.answers = answers
        self.sizes: list[tuple[int, ...]] = []

    def recognize_txt(self, crops: list[np.ndarray]) -> Any:
        self.sizes = [crop.shape for crop in crops]
        return _Read(tuple(self.answers[int(crop[0, 0, 0])] for crop in crops))


def _crop(grey: int, height: int = 40, width: int = 400) -> np.ndarray:
    return np.full((height, width, 3), grey, dtype=np.uint8)


def test_agreement_weighs_each_line_by_its_length_on_crops_shrunk_to_the_height() -> None:
    read = [(_crop(1), "abcdefghij"), (_crop(2), "klmnopqrstuvwxyzabcdefghijklmn")]  # 10 and 30 characters
    recognizer = _Recognizer({1: "abcdefghij", 2: "9" * 30})  # the first line agrees, the second not at all
    agreement, lines = rescale_agreement(recognizer, read, 16)
    assert lines == 2
    assert agreement == pytest.approx(10 / 40, abs=0.01)
    assert recognizer.sizes == [(16, 160, 3), (16, 160, 3)]


def test_a_crop_no_taller_than_the_height_is_not_read_again() -> None:
    read = [(_crop(1, height=14), "small crisp text"), (_crop(2), "a taller line of text")]
    recognizer = _Recognizer({2: "a taller line of text"})
    assert rescale_agreement(recognizer, read, 16) == (1.0, 2)
    assert recognizer.sizes == [(16, 160, 3)]


def test_the_sample_is_bounded_and_prefers_lines_near_the_target_length() -> None:
    target = "y" * tuning.OCR_RESCALE_TARGET_CHARS
    read = [(_crop(1), "z" * 200)] * 3 + [(_crop(2), target)] * (tuning.OCR_RESCALE_SAMPLE + 2) + [(_crop(3), "no")]
    recognizer = _Recognizer({1: "", 2: target, 3: ""})
    agreement, lines = rescale_agreement(recognizer, read)
    assert lines == tuning.OCR_RESCALE_SAMPLE
    assert agreement == 1.0  # only the target-length lines were read again, and they agree


def test_nothing_read_is_nothing_to_doubt() -> None:
    assert rescale_agreement(_Recognizer({}), []) == (1.0, 0)
    assert char_similarity("", "") == 1.0
    assert char_similarity("revenue", "sevenue") == pytest.approx(6 / 7)


def test_the_penalty_takes_off_per_unit_of_disagreement_and_spares_a_page_without_the_signal() -> None:
    signals = ocr_signals([0.99], ["a line read"], 1, 0.0, (0.8, 5))
    assert signals["ocr_rescale_agreement"] == 0.8 and signals["ocr_rescale_lines"] == 5.0
    penalties = OcrPenalties(0.0, 0.0, 0.5)
    assert penalties.penalty(signals) == pytest.approx(0.1)
    assert penalties.penalty({"text_layer_quality": 1.0}) == 0.0


def test_no_second_reading_unless_asked() -> None:
    """`engine.ocr_rescale_lines` is 0 by default: the page is read once and records no agreement."""
    page = read_image(np.asarray(_coarse(_page(), 40).convert("RGB")), try_turns=False)
    assert page.lines and page.rescale_lines == 0 and page.rescale_agreement == 1.0
