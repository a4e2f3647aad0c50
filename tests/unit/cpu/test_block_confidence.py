"""Each element of a cpu-engine page carries its own confidence, and the weak block is the one marked (issue 28)."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from services.core.elements import Element, ElementType
from services.core.settings import Settings
from services.worker.engines.base import PageInput
from services.worker.engines.cpu.blockconf import local_health, rate, weighted_mean
from services.worker.engines.cpu.engine import CpuEngine
from services.worker.engines.cpu.model import Block, Box, Line, Word

_CLEAN = ["The quarterly report shows revenue", "growing in every region we serve,",
          "while costs stayed close to plan."]
_SMUDGED = ["Shipping times fell by two days", "and returns were lower than last year", "in all of our stores."]


def _scan_with_a_smudged_block() -> bytes:
    """A scan whose first paragraph is sharp and whose second is blurred (still legible to OCR, less surely)."""
    image = Image.new("RGB", (1000, 900), "white")
    font = ImageFont.load_default(size=36)
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(_CLEAN):
        draw.text((60, 60 + 60 * index), line, fill="black", font=font)
    smudged = Image.new("RGB", (1000, 300), "white")
    draw = ImageDraw.Draw(smudged)
    for index, line in enumerate(_SMUDGED):
        draw.text((60, 20 + 60 * index), line, fill="black", font=font)
    image.paste(smudged.filter(ImageFilter.GaussianBlur(4)), (0, 500))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_the_blurred_paragraph_of_a_scan_is_the_less_sure_one() -> None:
    output = CpuEngine(Settings()).parse(PageInput("doc", 0, "image/png", _scan_with_a_smudged_block()))
    clean = [e for e in output.elements if "quarterly" in e.text]
    smudged = [e for e in output.elements if "Shipping" in e.text or "stores" in e.text or "year" in e.text]
    assert len(clean) == 1 and smudged
    assert all(e.confidence is not None and e.confidence < (clean[0].confidence or 0) for e in smudged)
    # The blocks' character-weighted mean is the page's route confidence: the doubt is placed, not added.
    assert weighted_mean(output.elements) == pytest.approx(output.confidence, abs=0.002)


def _line(text: str, score: float = 1.0) -> Line:
    return Line([Word(w, Box(0, 0, 10, 10)) for w in text.split()], Box(0, 0, 100, 10), score=score)


def test_local_health_weighs_ocr_scores_by_characters_and_text_layer_garbage() -> None:
    assert local_health([Block([_line("a clean line of words")], Box(0, 0, 100, 10))]) == 1.0
    mixed = local_health([Block([_line("long line read surely here", 1.0), _line("x", 0.5)], Box(0, 0, 100, 20))])
    assert 0.95 < mixed < 1.0  # one short unsure line barely moves a long sure block
    unmapped = local_health([Block([_line("\ufffd\ufffd \ufffd\ufffd words")], Box(0, 0, 100, 10))])
    jumbled = local_health([Block([_line("aB3cD eF9gH iJ2kL")], Box(0, 0, 100, 10))])
    assert unmapped < 0.6 and jumbled <= 0.5


def _element(kind: ElementType, text: str, local: float | None, **extra: object) -> Element:
    return Element(id="p1-e1", type=kind, page=1, bbox=(0.0, 0.0, 10.0, 10.0), text=text, confidence=local,
                   **extra)  # type: ignore[arg-type]


def test_rate_places_the_route_confidence_on_its_blocks() -> None:
    packed = "<table><tr><td>1 2</td><td>3 4</td></tr><tr><td>5 6</td><td>7 8</td></tr></table>"
    elements = [_element(ElementType.PARAGRAPH, "a" * 300, 1.0), _element(ElementType.PARAGRAPH, "b" * 100, 0.6),
                _element(ElementType.TABLE, "1 2 3 4", 1.0, html=packed), _element(ElementType.FIGURE, "", None)]
    rated = rate(elements, 0.8)
    sure, unsure, table, figure = (e.confidence for e in rated)
    assert sure is not None and unsure is not None and table is not None
    assert unsure < 0.8 < sure <= 1.0
    assert table == pytest.approx(sure * 0.5, abs=0.001)  # every cell holds two figures: its grid halves it
    assert figure == 0.8  # nothing of its own to weigh: the route's confidence
    assert rate(elements, None) == elements  # an engine without a page confidence leaves its blocks alone
