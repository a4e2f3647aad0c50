"""Elements through the page result's wire form (proto JSON) and back, and renumbered for another page."""

from __future__ import annotations

from services.core.contracts import PageResult, from_dict, to_dict
from services.core.elements import Element, ElementType, from_wire, renumber, to_wire

ELEMENTS = [
    Element(id="p1-e1", type=ElementType.HEADING, page=1, bbox=(72.0, 60.5, 300.0, 80.25), text="Intro",
            markdown="## Intro", level=2),
    Element(id="p1-e2", type=ElementType.LIST, page=1, bbox=None, text="a\nb", markdown="- a\n\n- b",
            items=["a", "b"], ordered=False, alignment=0.0),
    Element(id="p1-e3", type=ElementType.TABLE, page=1, bbox=(1.0, 2.0, 3.0, 4.0), text="x",
            markdown="<table><tr><td>x</td></tr></table>", html="<table><tr><td>x</td></tr></table>",
            alignment=0.93, confidence=0.61),
]


def test_elements_survive_the_page_result_message() -> None:
    message = from_dict(PageResult, {"document_id": "doc", "width": 612, "height": 792,
                                     "elements": [to_wire(e) for e in ELEMENTS]})
    stored = to_dict(message)
    assert stored["width"] == 612 and stored["height"] == 792
    assert [from_wire(raw) for raw in stored["elements"]] == ELEMENTS
    assert "bbox" not in to_wire(ELEMENTS[1]) and stored["elements"][1]["bbox"] == []  # no box: empty on the wire
    assert stored["elements"][2]["confidence"] == 0.61 and "confidence" not in stored["elements"][0]  # optional


def test_renumbered_for_the_page_it_now_sits_on() -> None:
    moved = renumber(ELEMENTS, 7)
    assert [e.id for e in moved] == ["p7-e1", "p7-e2", "p7-e3"] and {e.page for e in moved} == {7}
    assert moved[0].bbox == ELEMENTS[0].bbox and ELEMENTS[0].id == "p1-e1"
