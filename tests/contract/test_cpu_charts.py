"""Vector charts through the cpu engine and every renderer: bar and line charts drawn with PDF path operators,
with known values, come out as chart figures (never an empty lattice table) whose derived data table gives the
values back within a tenth of a tick step; an ordinary ruled table stays a table."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from services.core.contracts import PageElement, from_dict
from services.core.elements import DERIVED_NOTE, Element, ElementType, from_wire, page_markdown, to_wire
from services.core.pdf import PDF
from services.core.settings import Settings
from services.results.figures import crop_figures, page_image
from services.results.render.chunks import render_chunks
from services.results.render.derive import RenderPage
from services.results.render.html import render_html
from services.results.render.latex import render_latex
from services.results.render.sanitize import parse_table
from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.cpu.engine import CpuEngine
from tests.chart_pdfs import bar_chart_pdf, line_chart_pdf, ruled_table_pdf

QUARTERS = ["Q1", "Q2", "Q3", "Q4"]
BARS = {"North": [12.5, 18.0, 22.4, 30.0], "South": [8.0, 9.5, 14.0, 11.2], "West": [3.3, 27.1, 19.0, 35.6]}
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]
LINES = {"Sales": [1.2, 2.5, 2.1, 3.8, 3.3, 3.95], "Costs": [0.8, 1.1, 1.6, 1.4, 2.0, 0.15]}


@pytest.fixture(scope="module")
def engine() -> CpuEngine:
    return CpuEngine(Settings())


def _parse(engine: CpuEngine, data: bytes) -> PageOutput:
    return engine.parse(PageInput("d", 0, PDF, data))


def _data(element: Element) -> dict[str, dict[str, float]]:
    """The derived table as {series: {category: value}}."""
    table = parse_table(element.html or "")
    header = [cell.text for cell in table.rows[0]]
    values: dict[str, dict[str, float]] = {name: {} for name in header[1:]}
    for row in table.rows[1:]:
        for name, cell in zip(header[1:], row[1:], strict=True):
            values[name][row[0].text] = float(cell.text)
    return values


def _chart(output: PageOutput) -> Element:
    charts = [e for e in output.elements if e.chart]
    assert len(charts) == 1, [(e.type, e.text[:40]) for e in output.elements]
    assert not [e for e in output.elements if e.type is ElementType.TABLE]  # no empty lattice table
    return charts[0]


def test_a_grouped_bar_chart_is_a_figure_with_its_values_read_back(engine: CpuEngine) -> None:
    output = _parse(engine, bar_chart_pdf(QUARTERS, BARS, top=40, step=10))
    chart = _chart(output)
    assert chart.type is ElementType.FIGURE and chart.chart == "bar" and chart.derived is True
    data = _data(chart)
    assert set(data) == set(BARS)
    for series, values in BARS.items():
        assert list(data[series]) == QUARTERS
        for quarter, value in zip(QUARTERS, values, strict=True):
            assert data[series][quarter] == pytest.approx(value, abs=1.0)  # a tenth of the 10-unit tick step
    # The chart's own text (ticks, category labels, legend) is kept as its text, not loose paragraphs.
    for word in ["North", "South", "West", "Q1", "Q4", "40", "0"]:
        assert word in chart.text.split("\n")
    loose = [e.text for e in output.elements if e.type is ElementType.PARAGRAPH]
    assert not any(text.strip() in {"Q1", "North", "20"} for text in loose)
    assert "Revenue grew" in output.markdown and DERIVED_NOTE in output.markdown
    assert output.warnings == []


def test_a_line_chart_gives_each_series_point_by_point(engine: CpuEngine) -> None:
    chart = _chart(_parse(engine, line_chart_pdf(MONTHS, LINES, top=4, step=1)))
    assert chart.chart == "line"
    data = _data(chart)
    for series, values in LINES.items():
        assert list(data[series]) == MONTHS
        for month, value in zip(MONTHS, values, strict=True):
            assert data[series][month] == pytest.approx(value, abs=0.1)


def test_a_ruled_table_with_a_shaded_header_stays_a_table(engine: CpuEngine) -> None:
    rows = [["Item", "Qty", "Price"], ["Apples", "3", "1.20"], ["Pears", "5", "2.10"], ["Plums", "2", "0.90"]]
    output = _parse(engine, ruled_table_pdf(rows))
    assert not [e for e in output.elements if e.chart]
    tables = [e for e in output.elements if e.type is ElementType.TABLE]
    assert len(tables) == 1
    assert [[cell.text for cell in row] for row in parse_table(tables[0].html or "").rows] == rows


def test_the_chart_reaches_every_format(engine: CpuEngine) -> None:
    data = bar_chart_pdf(QUARTERS, BARS, top=40, step=10)
    output = _parse(engine, data)
    # Through the page result's wire message and back, as the worker stores it and assembly reads it.
    elements = [from_wire(to_wire(e)) for e in output.elements]
    assert all(from_dict(PageElement, to_wire(e)) for e in elements)
    chart = next(e for e in elements if e.chart)
    assert chart.derived is True and chart.html == _chart(output).html
    entry = {"status": "succeeded", "page": 1, "page_number": 1, "width": output.width, "height": output.height,
             "markdown": page_markdown(elements), "elements": [e.model_dump(mode="json") for e in elements]}
    kept = crop_figures([entry], lambda e: page_image(data, e["width"], e["height"], Settings()))
    assert len(kept.assets) == 1
    image_path = kept.assets[0]["path"]
    assert Image.open(io.BytesIO(kept.images[image_path])).width > 100
    assert kept.assets[0]["caption"].startswith("Figure 1")
    # Markdown: the image, the note, the derived table.
    markdown = entry["markdown"]
    assert f"]({image_path})" in markdown and DERIVED_NOTE in markdown
    assert markdown.index(image_path) < markdown.index(DERIVED_NOTE) < markdown.index("<table")
    page = RenderPage(number=1, status="succeeded",
                      elements=[Element.model_validate(e) for e in entry["elements"]])
    html = render_html([page], figures=kept.images)
    assert 'class="derived"' in html and "<th>North</th>" in html and "data:image/png;base64" in html
    tex = render_latex([page])
    assert "\\includegraphics" in tex and "\\begin{longtable}" in tex and "\\textbf{North}" in tex
    chunks = render_chunks([page])["chunks"]
    chart_chunks = [c for c in chunks if chart.id in c["element_ids"]]
    assert chart_chunks and "North" in chart_chunks[0]["text"] and image_path in chart_chunks[0]["text"]
