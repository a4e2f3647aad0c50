"""Checkboxes without a form, on generated pages with known states: squares drawn on a digital page (ticked
with a drawn tick, crossed with an "X", empty) and the same page as a scan (pixels only). A grid of touching
cells and a square bullet are not boxes. The boxes reach Markdown, HTML, LaTeX, chunks and the JSON's `fields`;
key–value lines are listed there too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pagemill_eval.generated_forms import KEY_VALUES, OPTIONS, boxes_pdf, boxes_scan
from services.core.elements import Element, ElementType
from services.core.settings import Settings
from services.runner import parse_locally, render_local

TRUTH = [(label, state != "") for label, state, _, _ in OPTIONS]  # in the page's reading order


def rendered(data: bytes) -> tuple[list[Element], dict[str, bytes]]:
    result = parse_locally(data, Settings(), engine_name="cpu")
    bodies = render_local(result, Settings(), ["markdown", "json", "html", "latex", "chunks"], filename="form",
                          source=data)
    return [Element.model_validate(e) for e in result.pages[0]["elements"]], bodies


@pytest.fixture(scope="module")
def digital() -> tuple[list[Element], dict[str, bytes]]:
    return rendered(boxes_pdf())


@pytest.fixture(scope="module")
def scanned() -> tuple[list[Element], dict[str, bytes]]:
    return rendered(boxes_scan())


def test_drawn_squares_are_checkboxes_with_their_state_and_label(digital: tuple[list[Element], Any]) -> None:
    elements, _ = digital
    boxes = [e for e in elements if e.type is ElementType.CHECKBOX]
    assert [(e.text, e.checked) for e in boxes] == TRUTH  # no box from the grid of cells nor the bullet
    for box, (_, _, left, baseline) in zip(boxes, OPTIONS, strict=True):
        assert box.bbox is not None and abs(box.bbox[0] - left) <= 1.5
        assert abs(box.bbox[3] - (792 - baseline + 1)) <= 1.5
    # each option's own paragraph was its label: replaced, not repeated ("X" written in the box included)
    texts = [" ".join(e.text.split()) for e in elements if e.type is not ElementType.CHECKBOX]
    assert not any(label in text for label, _ in TRUTH for text in texts), texts


def test_the_boxes_reach_every_format(digital: tuple[list[Element], dict[str, bytes]]) -> None:
    _, bodies = digital
    markdown = bodies["markdown"].decode()
    for label, checked in TRUTH:
        assert f"\n[{'x' if checked else ' '}] {label}\n" in markdown, markdown
    assert "X Post it" not in markdown and markdown.count("Yes") == 1
    html = bodies["html"].decode()
    assert html.count('<input type="checkbox" disabled>') == 2
    assert html.count('<input type="checkbox" disabled checked>') == 2
    latex = bodies["latex"].decode()
    assert latex.count("\\boxtimes") == 2 and latex.count("\\square") == 2
    chunks = json.dumps(json.loads(bodies["chunks"]))
    assert "[x] Yes" in chunks and "[ ] Email me the invoice" in chunks


def test_fields_list_the_boxes_and_the_key_values(digital: tuple[list[Element], dict[str, bytes]]) -> None:
    _, bodies = digital
    fields = json.loads(bodies["json"])["fields"]
    pairs = [(f["name"], f["value"]) for f in fields if f["type"] == "key_value"]
    assert pairs == [(key.rstrip(":"), value) for key, value, _ in KEY_VALUES]
    assert {f["source"] for f in fields if f["type"] == "key_value"} == {"layout"}
    assert [(f["label"], f["checked"], f["source"]) for f in fields if f["type"] == "checkbox"] == \
        [(label, checked, "page") for label, checked in TRUTH]


def test_boxes_on_a_scan_have_the_drawn_states(scanned: tuple[list[Element], dict[str, bytes]]) -> None:
    elements, bodies = scanned
    boxes = sorted((e for e in elements if e.type is ElementType.CHECKBOX),
                   key=lambda e: (round(e.bbox[1] / 20), e.bbox[0]) if e.bbox else (0, 0.0))
    # the scan is 150 dpi: a box of 10 pt is ~21 px; states in the order of the page, the grid and bullet none
    assert [e.checked for e in boxes] == [checked for _, checked in TRUTH]
    assert boxes[1].text == "No"  # a one-line block beside its box is its label (OCR's "□" dropped)
    assert json.loads(bodies["json"])["fields"][-4:] and "[x]" in bodies["markdown"].decode()


def test_ordinary_text_and_rules_give_no_box() -> None:
    from services.core.pdf import render_pdf_page
    from services.results.marks import mark_boxes, scanned_boxes
    from tests.pdfs import make_pdf

    data = make_pdf(lines=[f"{n}. Options [ ] and boxes O o 0 D are letters here, 10:30." for n in range(30)],
                    rules=6)
    result = parse_locally(data, Settings(), engine_name="cpu")
    assert mark_boxes(result.pages, data, lambda entry: render_pdf_page(data, longest_side=1650)) == 0
    image = render_pdf_page(data, longest_side=1650)  # the same page as a 150 dpi scan
    assert scanned_boxes(image, 612, 792) == []
