"""pagemill's element tree mapped onto Unstructured's element schema (services/gateway/compat)."""

from __future__ import annotations

from typing import Any

from services.gateway.compat.unstructured_elements import Options, to_elements


def page(number: int, elements: list[dict[str, Any]], status: str = "succeeded") -> dict[str, Any]:
    return {"page_number": number, "status": status, "width": 600.0, "height": 800.0, "elements": elements}


RESULT = {"pages": [
    page(1, [
        {"id": "p1-e1", "type": "page_header", "page": 1, "bbox": [10, 5, 200, 20], "text": "Running head"},
        {"id": "p1-e2", "type": "title", "page": 1, "bbox": [50, 40, 550, 80], "text": "The Title"},
        {"id": "p1-e3", "type": "heading", "page": 1, "bbox": None, "text": "Methods", "level": 2},
        {"id": "p1-e4", "type": "paragraph", "page": 1, "bbox": [50, 100, 550, 200], "text": "Some words."},
        {"id": "p1-e5", "type": "list", "page": 1, "bbox": [50, 210, 550, 260], "text": "one two",
         "items": ["**one**", "two \\* three"]},
    ]),
    page(2, [], status="failed"),
    page(3, [
        {"id": "p3-e1", "type": "heading", "page": 3, "bbox": [50, 40, 550, 60], "text": "Results", "level": 2},
        {"id": "p3-e2", "type": "table", "page": 3, "bbox": [50, 70, 550, 300], "text": "a b",
         "html": "<table><tr><td>a</td><td>b</td></tr></table>"},
        {"id": "p3-e3", "type": "formula", "page": 3, "bbox": [50, 310, 550, 340], "text": "E = mc2",
         "latex": "E = mc^2"},
        {"id": "p3-e4", "type": "form_field", "page": 3, "bbox": [50, 350, 300, 370], "text": "Name: Ada",
         "field_name": "name", "value": "Ada"},
    ]),
]}


def test_types_text_and_metadata() -> None:
    elements = to_elements(RESULT, Options(filename="a.pdf", filetype="application/pdf", starting_page_number=5))
    assert [e["type"] for e in elements] == ["Header", "Title", "Title", "NarrativeText", "ListItem", "ListItem",
                                             "Title", "Table", "Formula", "FormKeysValues"]
    assert [e["text"] for e in elements][4:6] == ["one", "two * three"]
    assert [e["metadata"]["page_number"] for e in elements] == [5, 5, 5, 5, 5, 5, 7, 7, 7, 7]
    assert elements[7]["metadata"]["text_as_html"].startswith("<table>")
    assert elements[8]["text"] == "E = mc^2"
    assert elements[9]["metadata"]["key_value_pairs"] == [{"key": {"text": "name"}, "value": {"text": "Ada"}}]
    assert [e["metadata"].get("category_depth") for e in elements[1:3]] == [0, 1]
    assert all("coordinates" not in e["metadata"] for e in elements)
    assert len({e["element_id"] for e in elements}) == len(elements)


def test_sections_are_parents() -> None:
    elements = to_elements(RESULT, Options(filename="a.pdf", filetype="application/pdf"))
    ids = {e["text"]: e["element_id"] for e in elements}
    parent = {e["text"]: e["metadata"].get("parent_id") for e in elements}
    assert parent["Running head"] is None and parent["The Title"] is None
    assert parent["Methods"] == ids["The Title"] and parent["Some words."] == ids["Methods"]
    assert parent["Results"] == ids["The Title"]  # a heading of the same depth closes the one before
    assert parent["a b"] == ids["Results"]


def test_coordinates_page_breaks_and_ids() -> None:
    options = Options(filename="a.pdf", filetype="application/pdf", coordinates=True, include_page_breaks=True)
    elements = to_elements(RESULT, options)
    assert [e["type"] for e in elements].count("PageBreak") == 1
    paragraph = next(e for e in elements if e["type"] == "NarrativeText")
    assert paragraph["metadata"]["coordinates"] == {
        "points": [[50, 100], [50, 200], [550, 200], [550, 100]], "system": "PixelSpace",
        "layout_width": 600.0, "layout_height": 800.0}
    assert "coordinates" not in next(e for e in elements if e["text"] == "Methods")["metadata"]  # no box
    assert to_elements(RESULT, options) == elements  # the ids are stable
    unique = to_elements(RESULT, Options(filename="a.pdf", filetype="application/pdf", unique_element_ids=True))
    assert len(unique[0]["element_id"]) == 36 and unique[0]["element_id"] != elements[0]["element_id"]
