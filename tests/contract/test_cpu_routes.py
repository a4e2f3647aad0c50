"""The cpu engine's routes on real pages: a doubtful text layer OCR cannot confirm, a turned scan, a blank page
against an inked page without text, and the warning the page result carries."""

from __future__ import annotations

import ctypes
import io
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest
from PIL import Image

from services.core.pdf import PDF, PNG
from services.core.settings import Settings
from services.worker.engines.base import PageInput
from services.worker.engines.cpu.confidence import agreement
from services.worker.engines.cpu.engine import CpuEngine
from services.worker.engines.cpu.routes import TEXT_DROPPED

# Half the words are jumbles of case and digits (a broken font map), so the layer fails its word-shape check.
PARTIAL_LINES = [f"Chapter {n} xQ3rTz kW9pLm harvest qZ7vBn valley jR4sWq" for n in range(1, 13)]


def invisible_text_pdf(lines: list[str]) -> bytes:
    """A page whose text layer is drawn invisible (render mode 3): pixels show nothing for OCR to read."""
    document = pdfium.PdfDocument.new()
    page = document.new_page(612, 792)
    font = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    for number, line in enumerate(lines):
        text_object = pdfium_c.FPDFPageObj_CreateTextObj(document.raw, font, ctypes.c_float(11))
        encoded = ctypes.create_string_buffer((line + "\0").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(text_object, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFTextObj_SetTextRenderMode(text_object, pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE)
        pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, 72, 720 - number * 14)
        pdfium_c.FPDFPage_InsertObject(page.raw, text_object)
    page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def engine() -> CpuEngine:
    return CpuEngine(Settings())


def test_a_partial_text_layer_ocr_cannot_read_is_kept_with_a_low_confidence(engine: CpuEngine) -> None:
    out = engine.parse(PageInput("d", 0, PDF, invisible_text_pdf(PARTIAL_LINES)))
    assert out.details.get("route") == "text_layer_over_ocr", out.details
    assert out.signals["text_layer_word_shape"] < 0.6  # the layer alone would have been rejected
    assert "Chapter 7" in out.markdown and "harvest" in out.markdown
    assert out.confidence is not None and out.confidence <= 0.45
    assert TEXT_DROPPED not in out.warnings  # the text is there: nothing was lost


def test_a_turned_scan_reads_as_the_upright_one(engine: CpuEngine, corpus: Path) -> None:
    source = Image.open(corpus / "dev/tesseract_phototest/phototest.png").convert("RGB")
    upright = engine.parse(PageInput("d", 0, PNG, png(source)))
    for turn in (90, 180):
        turned = engine.parse(PageInput("d", 0, PNG, png(source.rotate(-turn, expand=True))))
        assert agreement(upright.markdown, turned.markdown) > 0.9, (turn, turned.markdown[:300])
        assert turned.rotation == (-turn) % 360  # clockwise degrees turned to read it: back upright
        assert turned.warnings == []


def test_a_blank_page_is_told_apart_from_an_inked_page_without_text(engine: CpuEngine) -> None:
    blank = engine.parse(PageInput("d", 0, PNG, png(Image.new("RGB", (850, 1100), "white"))))
    assert blank.markdown == "" and blank.signals["blank"] == 1.0 and blank.confidence == 0.9
    # Smooth shading (a photo without words): ink, but nothing any route reads as text.
    x = np.linspace(0, 255, 850, dtype=np.float32)
    shading = np.tile(x, (1100, 1)).astype(np.uint8)
    inked = engine.parse(PageInput("d", 0, PNG, png(Image.fromarray(np.stack([shading] * 3, axis=-1)))))
    assert inked.markdown == "" and inked.signals["blank"] == 0.0
    assert inked.confidence is not None and inked.confidence <= 0.5


def test_a_wrong_first_guess_of_the_turn_is_overruled_by_reading_all_four(
        engine: CpuEngine, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The line classifier is made to call an upright page upside down: the upside-down reading is doubtful,
    so every turn is read and the upright one, read surest, wins."""
    from services.worker.engines.cpu import ocr

    source = (corpus / "dev/tesseract_phototest/phototest.png").read_bytes()
    upright = engine.parse(PageInput("d", 0, PNG, source))
    monkeypatch.setattr(ocr, "upside_down_vote", lambda labels: True)
    misled = engine.parse(PageInput("d", 0, PNG, source))
    assert misled.signals["ocr_turns_tried"] == 4
    assert misled.rotation == 0 and agreement(upright.markdown, misled.markdown) > 0.95
