"""Key–value pairs read from a paragraph's text or a two-column table, prose and captions left alone; and the
extract task's prompt, which gives the model the document's fields as structured input."""

from __future__ import annotations

import json

from services.results.document_task import extract_prompt, fields_block
from services.results.key_values import layout_fields, line_pairs, table_pairs


def test_pairs_on_a_line_and_several_run_together() -> None:
    assert line_pairs("Invoice no.: 12345") == [("Invoice no.", "12345")]
    assert line_pairs("Invoice no.: 12345 Date: 2024-01-02 Customer: Ada Lovelace") == [
        ("Invoice no.", "12345"), ("Date", "2024-01-02"), ("Customer", "Ada Lovelace")]
    assert line_pairs("Time: 10:30 Place: Rome") == [("Time", "10:30"), ("Place", "Rome")]


def test_prose_captions_and_lone_labels_are_not_pairs() -> None:
    for text in ("Note: this is a sentence that goes on and on for many more words than a value has.",
                 "Figure 3: Results of the run", "Table 1: Pesticides", "the ratio 3:4 holds", "Total:",
                 "We found three things: speed, cost and size.", "Ada Lovelace Phone:", ""):
        assert line_pairs(text) == [], text


def test_a_two_column_table_is_a_box_of_pairs_and_a_wider_one_is_not() -> None:
    two = "<table><tr><td>Name:</td><td>Ada</td></tr><tr><td>City</td><td>London</td></tr></table>"
    assert table_pairs(two) == [("Name", "Ada"), ("City", "London")]
    three = "<table><tr><td>a</td><td>b</td><td>c</td></tr><tr><td>d</td><td>e</td><td>f</td></tr></table>"
    numbers = "<table><tr><td>2019</td><td>4.5</td></tr><tr><td>2020</td><td>5.1</td></tr></table>"
    spans = "<table><tr><td colspan=\"2\">Header</td></tr><tr><td>Name</td><td>Ada</td></tr></table>"
    assert table_pairs(three) == table_pairs(numbers) == table_pairs(spans) == []


def test_layout_fields_list_pairs_and_page_checkboxes_with_their_elements() -> None:
    entry = {"page_number": 1, "status": "succeeded", "elements": [
        {"id": "p1-e1", "type": "paragraph", "page": 1, "bbox": [72, 80, 200, 92], "text": "Date: 2024-01-02"},
        {"id": "p1-e2", "type": "paragraph", "page": 1, "bbox": None, "text": "Plain words, no pair here."},
        {"id": "p1-e3", "type": "checkbox", "page": 1, "bbox": None, "text": "Yes", "checked": True,
         "markdown": "[x] Yes"}]}
    fields = layout_fields([entry])
    assert [(f["element_id"], f["type"], f["name"], f["value"], f["checked"], f["source"]) for f in fields] == [
        ("p1-e1", "key_value", "Date", "2024-01-02", None, "layout"), ("p1-e3", "checkbox", "Yes", "Yes", True, "page")]


def test_extract_gives_the_model_the_fields_and_the_elements() -> None:
    entries = [{"page_number": 1, "status": "succeeded", "elements": [
        {"id": "p1-e1", "type": "paragraph", "markdown": "Invoice no.: 12345"},
        {"id": "p1-e2", "type": "form_field", "markdown": "Full name: Ada Lovelace"}]}]
    fields = [{"element_id": "p1-e2", "name": "name", "label": "Full name", "type": "text", "value": "Ada Lovelace",
               "checked": None, "source": "acroform"},
              {"element_id": "p1-e3", "name": "agree", "label": "agree", "type": "checkbox", "value": "Yes",
               "checked": True, "source": "acroform"}]
    prompt, ids = extract_prompt(entries, {"type": "object"}, fields, 10_000)
    assert ids == ["p1-e1", "p1-e2"]
    block = prompt[prompt.index("[{"):prompt.index("}]") + 2]
    assert json.loads(block) == [{"element_id": "p1-e2", "name": "Full name", "type": "text", "value": "Ada Lovelace"},
                                 {"element_id": "p1-e3", "name": "agree", "type": "checkbox", "value": "Yes",
                                  "checked": True}]
    assert prompt.index("Full name") < prompt.index("Document:\n[p1-e1] Invoice no.: 12345")
    plain, _ = extract_prompt(entries, {"type": "object"}, [], 10_000)
    assert "fields" not in plain.split("Document:")[0].lower().replace("json schema", "")
    assert fields_block(fields, 40) == ""  # no field fits: none sent rather than a cut one


def test_a_header_row_of_a_two_column_table_is_not_a_pair() -> None:
    table = ("<table><tr><th>Country</th><th>Signed (EURm)</th></tr><tr><td>Algeria</td><td>6.19</td></tr>"
             "<tr><td>Egypt</td><td>6.60</td></tr></table>")
    assert table_pairs(table) == [("Algeria", "6.19"), ("Egypt", "6.60")]
    unmarked = table.replace("th>", "td>")  # the header words over a column of numbers: still a header
    assert table_pairs(unmarked.replace("</table>", "<tr><td>Jordan</td><td>4.20</td></tr></table>")) == [
        ("Algeria", "6.19"), ("Egypt", "6.60"), ("Jordan", "4.20")]
