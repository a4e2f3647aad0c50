"""dots.ocr's layout answer: its own boxes become the elements' boxes, scaled from the model's frame to points."""

from __future__ import annotations

import json

from services.core.elements import ElementType
from services.core.settings import Settings
from services.worker.engines.base import PageInput
from services.worker.engines.vllm.engine import VllmEngine
from services.worker.engines.vllm.layout_answer import model_frame
from services.worker.engines.vllm.presets import get_preset
from services.worker.pipeline.inputs import render_png
from tests.pdfs import text_page

CELLS = [
    {"bbox": [0, 0, 1008, 60], "category": "Page-header", "text": "Annual report 2024"},
    {"bbox": [100, 100, 900, 160], "category": "Title", "text": "Results"},
    {"bbox": [100, 200, 900, 400], "category": "Table", "text": "<table><tr><td>a</td></tr></table>"},
    {"bbox": [100, 420, 900, 460], "category": "Formula", "text": "E = mc^2"},
    {"bbox": [100, 500, 500, 900], "category": "Picture"},
]


def test_the_processor_frame_rounds_to_multiples_of_28() -> None:
    assert model_frame(995, 1288) == (1008, 1288)
    assert model_frame(10, 10) == (56, 56)  # below the minimum pixel count it grows


def test_layout_cells_become_elements_with_the_models_boxes_in_points() -> None:
    engine = VllmEngine(Settings(engine={"kind": "vllm", "preset": "dots_ocr_layout"}))
    settings = Settings()
    page = PageInput("doc", 0, "application/pdf", text_page())
    page = PageInput("doc", 0, "application/pdf", page.data, image=render_png(page, 1288, settings))
    answer = {"choices": [{"message": {"content": json.dumps(CELLS)}, "finish_reason": "stop"}], "usage": {}}
    output = engine._output(answer, page, 5)
    engine.close()
    assert (output.width_px, output.height_px) == (996, 1288) and (output.width, output.height) == (612, 792)
    header, title, table, formula, figure = output.elements
    assert header.type == ElementType.PAGE_HEADER and "Annual report" not in output.markdown
    assert title.type == ElementType.TITLE and title.markdown == "# Results" and title.alignment is None
    # x scales by 612 / 1008, y by 792 / 1288.
    assert title.bbox == (round(100 * 612 / 1008, 2), round(100 * 792 / 1288, 2), round(900 * 612 / 1008, 2),
                          round(160 * 792 / 1288, 2))
    assert table.html == "<table><tr><td>a</td></tr></table>" and formula.latex == "E = mc^2"
    assert figure.type == ElementType.FIGURE and figure.markdown == "" and figure.bbox is not None
    assert output.markdown == "# Results\n\n<table><tr><td>a</td></tr></table>\n\n$$\nE = mc^2\n$$\n"


def test_an_answer_that_is_not_layout_json_is_read_as_markdown() -> None:
    parsed = get_preset("dots_ocr_layout").parse("# Just text\n\nNo JSON here.")
    assert parsed.layout is None and parsed.markdown == "# Just text\n\nNo JSON here.\n"
