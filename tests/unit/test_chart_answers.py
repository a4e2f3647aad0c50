"""Models that write a chart as its data table: the table is kept under the chart figure (`derived`), read from
recorded-format answers through the vLLM engine's HTTP answer contract and the pipeline's element tree."""

from __future__ import annotations

from services.core.contracts import PageElement, from_dict
from services.core.elements import ElementType, page_markdown, to_wire
from services.core.settings import Settings
from services.results.render.sanitize import parse_table
from services.worker.engines.base import PageInput
from services.worker.engines.vllm.answer_blocks import split_answer
from services.worker.engines.vllm.engine import VllmEngine
from services.worker.pipeline.inputs import CpuHypothesis, render_png
from services.worker.pipeline.page import with_elements
from tests.chart_pdfs import bar_chart_pdf

# olmOCR-2's answer format: YAML front matter, then Markdown; the figure named after its place in the image.
OLMOCR_ANSWER = """---
primary_language: en
is_rotation_valid: True
rotation_correction: 0
is_table: False
is_diagram: True
---
# Quarterly results

Revenue grew in every quarter of the year while costs stayed flat, as the chart below shows for each of the
company's three divisions and in total.

![Bar chart of revenue by quarter for North and South](page_190_300_700_420.png)

<table><tr><th></th><th>North</th><th>South</th></tr><tr><td>Q1</td><td>12.5</td><td>8</td></tr><tr><td>Q2</td><td>18</td><td>9.5</td></tr></table>

Figure 1: Revenue by quarter and division (million EUR)"""


def _answer(content: str) -> dict[str, object]:
    return {"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": {},
            "model": "allenai/olmOCR-2-7B-1025"}


def test_an_olmocr_chart_table_is_kept_under_its_figure() -> None:
    settings = Settings(engine={"kind": "vllm", "preset": "olmocr"})
    engine = VllmEngine(settings)
    page = PageInput("doc", 0, "application/pdf", bar_chart_pdf(["Q1", "Q2"], {"North": [12.5, 18], "South": [8, 9.5]},
                                                                 top=40, step=10))
    page = PageInput("doc", 0, "application/pdf", page.data, image=render_png(page, 1288, settings))
    output = engine._output(_answer(OLMOCR_ANSWER), page, 5)
    engine.close()
    tree = with_elements(output, CpuHypothesis(page, Settings()), page).elements
    assert not [e for e in tree if e.type is ElementType.TABLE]
    chart = next(e for e in tree if e.type is ElementType.FIGURE)
    assert chart.chart == "bar" and chart.derived is True and chart.bbox is not None  # placed by its file name
    rows = [[cell.text for cell in row] for row in parse_table(chart.html or "").rows]
    assert rows == [["", "North", "South"], ["Q1", "12.5", "8"], ["Q2", "18", "9.5"]]
    assert from_dict(PageElement, to_wire(chart)).derived  # the page result's wire message carries it
    # Nothing the model wrote is lost: the page's Markdown still holds the figure line and the table.
    assert "page_190_300_700_420.png" in output.markdown and "<td>12.5</td>" in page_markdown(tree)


def test_only_chart_tables_are_folded() -> None:
    answer = ("![Photo of the board](a.png)\n\n<table><tr><td>real</td></tr></table>\n\n"
              "<table data-chart><tr><th>x</th><th>y</th></tr><tr><td>1</td><td>2</td></tr></table>\n\n"
              "![Line graph of prices](b.png)\n\n| Year | Price |\n|---|---|\n| 2020 | 3 |")
    photo, table, marked, line = split_answer(answer)
    assert photo.type is ElementType.FIGURE and photo.html is None and photo.chart is None
    assert table.type is ElementType.TABLE  # a table under a picture that is no chart stays a table
    assert marked.type is ElementType.FIGURE and marked.chart == "chart" and marked.derived is True
    assert line.chart == "line" and "<td>2020</td>" in (line.html or "")
    assert [e.id for e in (photo, table, marked, line)] == ["p1-e1", "p1-e2", "p1-e3", "p1-e4"]
    assert page_markdown([photo, table, marked, line]) == answer
