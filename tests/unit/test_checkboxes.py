"""Printed checkboxes (☐ ☑ ☒ in the page's text) become `checkbox` elements, `[x]`/`[ ]` in Markdown, disabled
checkboxes in HTML; text that merely contains a box later on is left alone."""

from __future__ import annotations

from services.core.elements import Element, ElementType, page_markdown
from services.results.checkboxes import mark_checkboxes
from services.results.render.derive import document_pages
from services.results.render.html import render_html


def paragraph(n: int, text: str) -> Element:
    return Element(id=f"p1-e{n}", type=ElementType.PARAGRAPH, page=1, bbox=(72, 100 + 20 * n, 300, 112 + 20 * n),
                   text=text, markdown=text)


def test_boxes_in_the_text_become_checkboxes_with_their_state() -> None:
    elements = [paragraph(1, "Do you smoke?"), paragraph(2, "\u2612 Yes \u2610 No"), paragraph(3, "\u2611 I agree"),
                paragraph(4, "Tick \u2610 where it applies.")]
    entry = {"page": 1, "page_number": 1, "status": "succeeded", "markdown": page_markdown(elements) + "\n",
             "elements": [e.model_dump(mode="json") for e in elements]}
    assert mark_checkboxes([entry]) == 3
    boxes = [Element.model_validate(e) for e in entry["elements"] if e["type"] == "checkbox"]
    assert [(b.text, b.checked) for b in boxes] == [("Yes", True), ("No", False), ("I agree", True)]
    assert boxes[0].bbox is None and boxes[2].bbox == (72, 160, 300, 172)  # one option: the block's box is its own
    assert len({e["id"] for e in entry["elements"]}) == len(entry["elements"])
    assert entry["markdown"] == "Do you smoke?\n\n[x] Yes\n\n[ ] No\n\n[x] I agree\n\nTick \u2610 where it applies.\n"
    html = render_html(document_pages([entry]))
    assert '<input type="checkbox" disabled checked> Yes</label>' in html
    assert '<input type="checkbox" disabled> No</label>' in html
