"""The OCR route measures how tilted a scan's lines are, and a tilted page loses confidence (issue 28)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from services.worker.engines.cpu.confidence import OCR_PENALTIES, ocr_confidence, ocr_signals
from services.worker.engines.cpu.ocr import quad_tilt, read_image

_LINES = ["The quarterly report shows revenue", "growing in every region we serve,",
          "while costs stayed close to plan.", "Shipping times fell by two days."]


def _page(tilt: float) -> np.ndarray:
    image = Image.new("RGB", (1000, 420), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=40)
    for index, line in enumerate(_LINES):
        draw.text((60, 50 + 85 * index), line, fill="black", font=font)
    return np.asarray(image.rotate(tilt, expand=True, fillcolor="white", resample=Image.Resampling.BICUBIC))


def test_a_box_tilt_is_its_top_edge_angle_whatever_its_direction() -> None:
    level = np.array([[0, 10], [100, 10], [100, 30], [0, 30]], dtype=np.float32)
    tilted = np.array([[0, 0], [100, 100 * np.tan(np.radians(5))], [98, 30], [-2, 20]], dtype=np.float32)
    assert quad_tilt(level) == 0.0
    assert quad_tilt(tilted) == pytest.approx(5.0, abs=0.01)
    assert quad_tilt(tilted * np.array([1, -1], dtype=np.float32)) == pytest.approx(5.0, abs=0.01)


@pytest.mark.parametrize("tilt", [4.0, -6.0])
def test_a_tilted_scan_reads_as_tilted_and_loses_confidence(tilt: float) -> None:
    level, tilted = read_image(_page(0.0)), read_image(_page(tilt))
    assert level.skew < 1.0
    assert tilted.skew == pytest.approx(abs(tilt), abs=1.0)
    level_signals = ocr_signals(level.scores, [line.text for line in level.lines], level.boxes_found, level.skew)
    tilted_signals = ocr_signals(tilted.scores, [line.text for line in tilted.lines], tilted.boxes_found,
                                 tilted.skew)
    assert tilted_signals["ocr_skew_deg"] == round(tilted.skew, 2)
    assert ocr_confidence(tilted_signals) < ocr_confidence(level_signals) - 0.2


def test_the_penalty_grows_with_the_tilt_and_the_doubtful_share_and_spares_a_text_layer_page() -> None:
    assert OCR_PENALTIES.penalty({}) == 0.0  # a text-layer page carries neither signal
    level = OCR_PENALTIES.penalty({"ocr_skew_deg": 0.1, "ocr_low_score_share": 0.0})
    assert level < 0.05
    assert OCR_PENALTIES.penalty({"ocr_skew_deg": 4.0}) > OCR_PENALTIES.penalty({"ocr_skew_deg": 2.0}) > level
    assert OCR_PENALTIES.penalty({"ocr_low_score_share": 0.9}) > OCR_PENALTIES.penalty({"ocr_low_score_share": 0.1})
