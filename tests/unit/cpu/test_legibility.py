"""Low-resolution and blurred scans show in their pixels (issue 28)."""

from __future__ import annotations

from io import BytesIO

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from services.core.settings import Settings
from services.worker.engines.base import PageInput
from services.worker.engines.cpu.confidence import ocr_confidence, ocr_signals
from services.worker.engines.cpu.engine import CpuEngine
from services.worker.engines.cpu.legibility import edge_width, line_height
from services.worker.engines.cpu.ocr import read_image

_LINES = ["The quarterly report shows revenue", "growing in every region we serve,",
          "while costs stayed close to plan.", "Shipping times fell by two days."]
_DPI = 200  # the page below is drawn as a 200-dpi scan of a letter-width page (11-pt text)


def _page() -> Image.Image:
    image = Image.new("L", (1700, 700), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=31)
    for index, line in enumerate(_LINES):
        draw.text((150, 120 + 70 * index), line, fill=0, font=font)
    return image


def _at_dpi(image: Image.Image, dpi: int) -> Image.Image:
    return image.resize((image.width * dpi // _DPI, image.height * dpi // _DPI), Image.Resampling.LANCZOS)


def _pdf(image: Image.Image, dpi: int) -> bytes:
    buffer = BytesIO()
    image.save(buffer, format="PDF", resolution=dpi)
    return buffer.getvalue()


def test_a_page_scanned_at_50_dpi_has_lines_under_half_as_tall_in_pixels() -> None:
    crisp = read_image(np.asarray(_page().convert("RGB")))
    coarse = read_image(np.asarray(_at_dpi(_page(), 50).convert("RGB")))
    assert crisp.lines and coarse.lines
    # Detected boxes carry a margin around the ink, so a quarter of the resolution is not a quarter of the box.
    assert line_height(coarse.lines) < 0.5 * line_height(crisp.lines)


def test_a_blurred_rendering_has_wider_edges_than_a_crisp_one() -> None:
    crisp = edge_width(np.asarray(_page()))
    blurred = edge_width(np.asarray(_page().filter(ImageFilter.GaussianBlur(2.0))))
    assert 0 < crisp < 2.0
    assert blurred > 2.5 * crisp


def test_a_page_without_contrast_has_no_edge_to_measure() -> None:
    assert edge_width(np.full((200, 300), 240, dtype=np.uint8)) == 0.0


def test_a_low_resolution_scan_in_a_pdf_reads_with_fewer_steps_per_line() -> None:
    engine = CpuEngine(Settings())
    crisp = engine.parse(PageInput("d", 0, "application/pdf", _pdf(_page(), _DPI)))
    coarse = engine.parse(PageInput("d", 0, "application/pdf", _pdf(_at_dpi(_page(), 50), 50)))
    # Rendered at the engine's resolution, both have lines about as tall, but one pixel of the coarse scan spans
    # four or more rendered ones (the page is rendered at ~260 dpi), however sharp the renderer draws them.
    assert coarse.signals["ocr_line_height_px"] == pytest.approx(crisp.signals["ocr_line_height_px"], rel=0.25)
    assert coarse.signals["scan_upsampled"] == pytest.approx(5.2, abs=0.3)
    assert crisp.signals["scan_upsampled"] == pytest.approx(1.3, abs=0.1)
    assert coarse.signals["ocr_line_steps"] < 0.5 * crisp.signals["ocr_line_steps"]


def test_the_share_of_doubtful_lines_is_weighted_by_characters() -> None:
    signals = ocr_signals([0.99, 0.6], ["a long line read well", "bad"], boxes_found=2)
    assert signals["ocr_low_score_share"] == pytest.approx(3 / 24, abs=1e-3)


def test_a_30_dpi_scan_reads_on_doubtful_lines_and_its_confidence_pays_for_them() -> None:
    crisp = read_image(np.asarray(_page().convert("RGB")))
    coarse = read_image(np.asarray(_at_dpi(_page(), 30).convert("RGB")))
    crisp_signals = ocr_signals(crisp.scores, [line.text for line in crisp.lines], crisp.boxes_found, crisp.skew)
    coarse_signals = ocr_signals(coarse.scores, [line.text for line in coarse.lines], coarse.boxes_found, coarse.skew)
    assert crisp_signals["ocr_low_score_share"] < 0.1
    assert coarse_signals["ocr_low_score_share"] > 0.5
    # The mean score alone says "mostly read"; the doubtful share takes its fitted penalty off that.
    assert ocr_confidence(dict(coarse_signals)) < coarse_signals["ocr_mean_score"] - 0.15
    assert ocr_confidence(dict(crisp_signals)) > 0.95
