"""The page entry that assembly, `pagemill parse` and the renderers pass along is the page the API answers."""

from __future__ import annotations

from services.core.elements import Element, ElementType
from services.core.pages import PageEntry, PageRead, entry_elements, entry_size


def test_the_entry_has_every_field_of_the_page_schema_in_its_order() -> None:
    """`page_entry` casts PageRead's JSON to a PageEntry: the keys must be the same, in the JSON's order."""
    assert list(PageEntry.__annotations__) == list(PageRead.model_fields)


def test_an_entry_reads_back_its_elements_and_its_size() -> None:
    heading = Element(id="p2-e1", type=ElementType.HEADING, page=2, bbox=(72.0, 80.0, 300.0, 96.0),
                      text="Terms", markdown="# Terms", level=1)
    entry = PageEntry(page=1, page_number=2, status="succeeded", width=612.0, height=None,
                      elements=[heading.model_dump(mode="json")])
    assert entry_elements(entry) == [heading]
    assert entry_size(entry) == (612.0, 0.0)
    assert entry_elements(PageEntry(page=1, page_number=1, status="failed")) == []
