"""Checkboxes printed as glyphs (☐ ☑ ☒), found in the page's text: each option a `checkbox` element.

A form printed without fields marks its options with box characters: "☒ Yes ☐ No", "☑ I agree". At assembly,
a paragraph or list whose text starts with one of them is split at each box into `checkbox` elements (`checked`:
☑ or ☒ ticked, ☐ not), rendered `[x] Yes` / `[ ] No` in Markdown like a form's own checkboxes. An option keeps
the block's box only when the block is one option (a box for each of several options would be made up). Boxes
drawn as small squares, and boxes on a scan, are found by `marks.py`.
"""

from __future__ import annotations

import re

from services.core.elements import Element, ElementType, page_markdown
from services.core.pages import PageEntry, entry_elements

TICKED = "\u2611\u2612"  # ☑ ☒
EMPTY = "\u2610"  # ☐
_OPTION = re.compile(f"([{EMPTY}{TICKED}])\\s*([^{EMPTY}{TICKED}]*)")
_CANDIDATES = frozenset({ElementType.PARAGRAPH, ElementType.LIST})


def options_of(element: Element) -> list[Element] | None:
    """The element's options as checkbox elements, or None when its text does not open with a box."""
    text = " ".join(element.text.split())
    if element.type not in _CANDIDATES or not text or text[0] not in EMPTY + TICKED:
        return None
    found = [(mark in TICKED, label.strip()) for mark, label in _OPTION.findall(text)]
    boxed = element.bbox if len(found) == 1 else None
    return [Element(id=f"{element.id}" if n == 0 else f"{element.id}-c{n}", type=ElementType.CHECKBOX,
                    page=element.page, bbox=boxed, text=label, checked=checked,
                    markdown=f"[{'x' if checked else ' '}] {label}".rstrip())
            for n, (checked, label) in enumerate(found)]


def mark_checkboxes(entries: list[PageEntry]) -> int:
    """Splits the printed checkboxes of the page entries into `checkbox` elements (changed in place: `elements`,
    `markdown` when it is the tree rendered); returns how many were found."""
    found = 0
    for entry in entries:
        if entry.get("status") != "succeeded" or not entry.get("elements"):
            continue
        elements = entry_elements(entry)
        consistent = (entry.get("markdown") or "").strip() == page_markdown(elements).strip()
        updated: list[Element] = []
        for element in elements:
            options = options_of(element)
            updated.extend(options or [element])
            found += len(options or [])
        if len(updated) == len(elements) and all(a is b for a, b in zip(updated, elements, strict=True)):
            continue
        entry["elements"] = [e.model_dump(mode="json") for e in updated]
        if consistent:
            body = page_markdown(updated)
            entry["markdown"] = body + "\n" if body else ""
    return found
