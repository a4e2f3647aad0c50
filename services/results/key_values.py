"""Key–value pairs printed on a page, and the document's `fields` that come from its layout rather than its form.

A label and its value on one line ("Invoice no.: 12345", "Date: 2024-01-02") or in a two-column table (a label
cell, a value cell on each row) are listed in the JSON's `fields` with `type` `key_value`, `source` `layout`,
`name` the label (without its colon), `value` the value and `element_id` the paragraph or table they are in; the
element itself is not changed. A paragraph counts only when the whole of it is such pairs: it opens with a key,
each key is at most `MAX_KEY_WORDS` words starting with a capital letter and ends with a colon, and each value
is at most `MAX_VALUE_WORDS` words and not a sentence (three words or more ending with . ! ? ;: prose after
a colon, not a value). Checkboxes found on the
page (glyphs, drawn squares, boxes on a scan) are listed there too (`type` `checkbox`, `source` `page`).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from services.core.elements import Element, ElementType
from services.core.pages import PageEntry

MAX_KEY_WORDS = 4
MAX_VALUE_WORDS = 8
MAX_PARAGRAPH_CHARS = 400
MAX_TABLE_ROWS = 40
_COLON = re.compile(r"(?<=\S):(?=\s|$)")
_NUMBERED = re.compile(r"^(figure|fig\.|table|tab\.|chart|section|chapter|step|example|equation|part)\s+\S*\d",
                       re.IGNORECASE)  # "Figure 3: …" is a caption, not a key


def _key_before(words: list[str]) -> int | None:
    """How many of the last words make the key: the shortest run opening with a capital letter."""
    for length in range(1, min(MAX_KEY_WORDS, len(words)) + 1):
        first = words[-length]
        if first[:1].isupper():
            return length
    return None


def line_pairs(text: str) -> list[tuple[str, str]]:
    """The (key, value) pairs a paragraph is made of, or [] when it is not only pairs."""
    text = " ".join(text.split())
    if not text or len(text) > MAX_PARAGRAPH_CHARS or ":" not in text:
        return []
    pieces = _COLON.split(text)
    if len(pieces) < 2:
        return []
    head = pieces[0].split()
    if not head or _key_before(head) != len(head):
        return []
    pairs: list[tuple[str, str]] = []
    key = " ".join(head)
    if _NUMBERED.match(key):
        return []
    for n, piece in enumerate(pieces[1:], 1):
        words = piece.split()
        if n < len(pieces) - 1:  # the next key is the end of this piece
            length = _key_before(words)
            if length is None or length == len(words):
                return []
            value, next_key = words[:-length], " ".join(words[-length:])
        else:
            value, next_key = words, ""
        if not value or len(value) > MAX_VALUE_WORDS or (len(value) >= 3 and value[-1][-1] in ".!?;"):
            return []  # none, or a sentence: prose after a colon
        pairs.append((key, " ".join(value)))
        key = next_key
    return pairs


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.headers: list[bool] = []  # by row: all its cells are <th> (a header row: not a pair)
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
            self.headers.append(True)
        elif tag in ("td", "th"):
            if tag == "td" and self.headers:
                self.headers[-1] = False
            self._cell = []
            if any(name in ("colspan", "rowspan") and value not in (None, "1") for name, value in attrs):
                self.rows[-1].append("")  # a spanning cell: not a plain two-column box
                self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _numeric(value: str) -> bool:
    return bool(re.fullmatch(r"[-+(]?[$€£]?\s?[\d.,' ]*\d[\d.,' ]*\s?%?\)?", value.strip()))


def table_pairs(html: str) -> list[tuple[str, str]]:
    """A two-column table's rows as (label, value) pairs, or [] when it is not one (more columns, spans, long
    or numeric labels); a header row (all `<th>`, or words over a column of
    numbers) is left out."""
    parser = _Rows()
    parser.feed(html)
    rows = [row for row, header in zip(parser.rows, parser.headers, strict=False) if row and not header]
    if not 2 <= len(rows) <= MAX_TABLE_ROWS or any(len(row) != 2 for row in rows):
        return []
    if len(rows) > 2 and not _numeric(rows[0][1]) and sum(_numeric(v) for _, v in rows[1:]) >= 0.6 * (len(rows) - 1):
        rows = rows[1:]  # a first row of words over a column of numbers is the header the engine did not mark
    pairs = [(label.rstrip(":").strip(), value) for label, value in rows]
    if any(not label or len(label.split()) > MAX_KEY_WORDS or not any(c.isalpha() for c in label)
           for label, _ in pairs):
        return []
    return [(label, value) for label, value in pairs if value]


def layout_fields(entries: list[PageEntry]) -> list[dict[str, Any]]:
    """The `fields` entries of the pages' key–value pairs and their checkboxes, in reading order."""
    listed: list[dict[str, Any]] = []
    for entry in entries:
        if entry.get("status") != "succeeded":
            continue
        for raw in entry.get("elements") or []:
            element = raw if isinstance(raw, Element) else Element.model_validate(raw)
            box = list(element.bbox) if element.bbox else None
            if element.type is ElementType.CHECKBOX:
                listed.append({"element_id": element.id, "page": element.page, "name": element.text,
                               "type": "checkbox", "value": element.text, "checked": element.checked,
                               "label": element.text, "bbox": box, "source": "page"})
                continue
            if element.type is ElementType.PARAGRAPH:
                pairs = line_pairs(element.text)
            elif element.type is ElementType.TABLE and element.html and not element.parts:
                pairs = table_pairs(element.html)
            else:
                continue
            listed.extend({"element_id": element.id, "page": element.page, "name": key, "type": "key_value",
                           "value": value, "checked": None, "label": key, "bbox": box, "source": "layout"}
                          for key, value in pairs)
    return listed
