"""A PDF's own form (AcroForm) read with pdfium's form API: every widget a `form_field` element with its name,
type, value, checked state and box, checked against pypdf's reading of the same fields (the PDF is its own
ground truth); Markdown `[x]`/`[ ]`, HTML disabled controls, LaTeX boxes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from pypdf import PdfReader

from services.cli.parse import parse_files
from services.core.elements import Element, ElementType
from services.core.settings import Settings
from services.results.forms import add_form_fields, read_form_fields
from services.results.render.derive import document_pages
from services.results.render.html import render_html
from services.results.render.latex import render_latex
from services.runner import parse_locally
from tests.pdfs import FORM_WIDGETS, figure_pdf, form_pdf

A4_HEIGHT = 842.0


@pytest.fixture(scope="module")
def parsed() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    data = form_pdf()
    result = parse_locally(data, Settings(), engine_name="cpu")
    return result.pages, add_form_fields(result.pages, read_form_fields(data, [1]))


def test_every_widget_is_a_field_with_the_values_pypdf_reads(
        parsed: tuple[list[dict[str, object]], list[dict[str, object]]]) -> None:
    _, fields = parsed
    truth = PdfReader(io.BytesIO(form_pdf())).get_fields() or {}
    assert sorted({f["name"] for f in fields}) == sorted(truth)  # type: ignore[type-var]
    by_name = {f["name"]: f for f in fields if f["type"] != "radio"}
    assert by_name["name"]["value"] == truth["name"]["/V"] == "Ada Lovelace" and by_name["name"]["label"] == "Full name"
    assert by_name["city"]["value"] == "" and by_name["city"]["checked"] is None
    assert by_name["agree"]["checked"] is True and truth["agree"]["/V"] == "/Yes"
    assert by_name["newsletter"]["checked"] is False and truth["newsletter"]["/V"] == "/Off"
    radios = [(f["value"], f["checked"]) for f in fields if f["type"] == "radio"]
    assert radios == [("monthly", False), ("yearly", True)] and truth["plan"]["/V"] == "/yearly"
    for field in fields:  # each box is the widget's rectangle turned to top-left points
        key = f"{field['name']}.{field['value']}" if field["type"] == "radio" else str(field["name"])
        x0, y0, x1, y1 = FORM_WIDGETS[key]
        assert field["bbox"] == pytest.approx([x0, A4_HEIGHT - y1, x1, A4_HEIGHT - y0], abs=0.05)


def test_fields_reach_markdown_html_and_latex(
        parsed: tuple[list[dict[str, object]], list[dict[str, object]]]) -> None:
    entries, fields = parsed
    markdown = str(entries[0]["markdown"])
    assert markdown.startswith("# Application form") or markdown.index("Application form") < markdown.index("[x]")
    for line in ("Full name: Ada Lovelace", "[x] agree", "[ ] newsletter", "[ ] plan: monthly", "[x] plan: yearly"):
        assert f"\n{line}" in markdown, (line, markdown)
    elements = [Element.model_validate(e) for e in entries[0]["elements"]]  # type: ignore[union-attr]
    assert [e.id for e in elements if e.type is ElementType.FORM_FIELD] == [f["element_id"] for f in fields]
    assert len({e.id for e in elements}) == len(elements)
    pages = document_pages(entries)  # type: ignore[arg-type]
    page = render_html(pages)
    assert '<input type="checkbox" disabled checked> agree</label>' in page
    assert '<input type="checkbox" disabled> newsletter</label>' in page
    assert '<input type="text" value="Ada Lovelace" disabled>' in page
    latex = render_latex(pages)
    assert "$\\boxtimes$ agree" in latex and "$\\square$ newsletter" in latex


def test_a_pdf_without_a_form_has_no_fields() -> None:
    assert read_form_fields(figure_pdf(), [1]) == {}


def test_the_eval_harness_scores_the_fields_against_pypdfs_reading() -> None:
    from pagemill_eval.figures import _forms
    scored = _forms(form_pdf(), 1)
    assert (scored["truth_fields"], scored["fields_found"]) == (5, 5)
    assert (scored["text_values_equal"], scored["text_fields"]) == (2, 2)
    assert (scored["checkbox_states_equal"], scored["checkboxes"]) == (2, 2)
    assert _forms(figure_pdf(), 1)["truth_fields"] == 0


def test_pagemill_parse_in_process_reads_the_form_too(tmp_path: Path) -> None:
    source = tmp_path / "form.pdf"
    source.write_bytes(form_pdf())
    assert parse_files([source], tmp_path / "out", server=None, api_key=None, mode=None, engine="cpu",
                       settings=Settings(), formats=["markdown", "json"])
    assert "[x] agree" in (tmp_path / "out" / "form.md").read_text()
    fields = json.loads((tmp_path / "out" / "form.json").read_text())["fields"]
    assert [f["name"] for f in fields] == ["name", "city", "agree", "newsletter", "plan", "plan"]
