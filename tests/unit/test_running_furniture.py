"""Running heads and feet found across a document's pages at assembly: retyped in the tree, gone from Markdown."""

from __future__ import annotations

from typing import Any

from services.core.elements import Element, ElementType, page_markdown
from services.results.furniture import mark_running_furniture

HEIGHT = 792.0


def element(kind: ElementType, text: str, y0: float, *, level: int | None = None) -> Element:
    markdown = f"{'#' * level} {text}" if level else text
    return Element(id="", type=kind, page=1, bbox=(72.0, y0, 300.0, y0 + 10), text=text, markdown=markdown,
                   level=level)


def page(number: int, elements: list[Element], *, markdown: str | None = None) -> dict[str, Any]:
    body = page_markdown(elements)
    return {"page": number, "page_number": number, "status": "succeeded", "height": HEIGHT, "width": 612.0,
            "markdown": markdown if markdown is not None else body + "\n",
            "elements": [e.model_dump(mode="json") for e in elements]}


def document(pages: int) -> list[dict[str, Any]]:
    entries = []
    for number in range(1, pages + 1):
        entries.append(page(number, [
            element(ElementType.HEADING, "Contains Nonbinding Recommendations", 36, level=3),
            element(ElementType.HEADING, f"Section {number}: Methods", 120, level=2),
            element(ElementType.PARAGRAPH, f"Body text of page {number} that says something new.", 150),
            element(ElementType.PARAGRAPH, "This sentence repeats on every page but in the body.", 400),
            element(ElementType.PARAGRAPH, f"Page {number} of {pages}", 760),
        ]))
    return entries


def test_a_line_repeated_at_the_top_and_page_numbers_at_the_foot_become_furniture() -> None:
    entries = document(4)
    assert mark_running_furniture(entries) == 8
    for entry in entries:
        types = [raw["type"] for raw in entry["elements"]]
        assert types == ["page_header", "heading", "paragraph", "paragraph", "page_footer"]
        assert "Contains Nonbinding" not in entry["markdown"] and "of 4" not in entry["markdown"]
        assert entry["markdown"].startswith("## Section ")  # the section heading, which does not repeat, stays
        assert "repeats on every page but in the body" in entry["markdown"]
        # Still in the tree, typed, with its box.
        header = Element.model_validate(entry["elements"][0])
        assert header.text == "Contains Nonbinding Recommendations" and header.bbox is not None
        assert header.level is None


def test_one_page_or_lines_that_do_not_repeat_change_nothing() -> None:
    single = document(1)
    assert mark_running_furniture(single) == 0
    assert "Contains Nonbinding" in single[0]["markdown"]
    two = [page(1, [element(ElementType.HEADING, "Annual Report", 36, level=1),
                    element(ElementType.PARAGRAPH, "First page text.", 100)]),
           page(2, [element(ElementType.HEADING, "Financial Statements", 36, level=1),
                    element(ElementType.PARAGRAPH, "Second page text.", 100)])]
    assert mark_running_furniture(two) == 0


def test_the_same_words_at_another_height_are_not_a_running_line() -> None:
    entries = [page(1, [element(ElementType.PARAGRAPH, "Draft", 30), element(ElementType.PARAGRAPH, "a", 300)]),
               page(2, [element(ElementType.PARAGRAPH, "Draft", 95), element(ElementType.PARAGRAPH, "b", 300)])]
    assert mark_running_furniture(entries) == 0


def test_a_page_whose_markdown_is_not_its_tree_loses_only_the_running_block() -> None:
    entries = document(3)
    entries[1]["markdown"] = "Contains Nonbinding Recommendations\n\nan engine's own Markdown\n\nPage 2 of 3\n"
    mark_running_furniture(entries)
    assert entries[1]["markdown"].strip() == "an engine's own Markdown"
