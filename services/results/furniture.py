"""Running heads and feet found across a document's pages: the same short line at the same height on many pages.

Pages are parsed as separate jobs, so an engine sees one page and can only judge furniture by position, size
and wording (the cpu engine does, in `layout.mark_furniture`). What repeats is only visible here, where the
finished pages meet: a line that sits in the top or bottom band of at least `MIN_PAGES` pages and of a
`MIN_SHARE` of them, at the same height, with the same words (in a line of few words the numbers may change,
so "Page 3 of 11" and "A-7" match "Page 4 of 11" and "A-8"), is a running head or foot. It is retyped
`page_header` / `page_footer` in the page's element tree (so it stays in the JSON, with its box) and leaves the
page's Markdown, and with it HTML, LaTeX and chunks, which render the tree without furniture.

Only elements with a box take part: without one there is no height to compare.
"""

from __future__ import annotations

import re
from collections import defaultdict

from services.core.elements import FURNITURE, Element, ElementType, page_markdown
from services.core.pages import PageEntry, entry_elements

# Share of the page height: running heads end above TOP_BAND, running feet start below BOTTOM_BAND.
TOP_BAND = 0.15
BOTTOM_BAND = 0.85
# A repeated line sits this close to the same height on each page (share of the page height).
SAME_HEIGHT = 0.02
# The least number of pages, and the least share of the document's pages with boxes, a running line is on.
MIN_PAGES = 2
MIN_SHARE = 0.3
# Longer texts are content (a repeated table title, a notice), not a running line.
MAX_CHARS = 120
# Words (besides numbers) a line may have for its numbers to be free to change from page to page.
NUMBERED_MAX_WORDS = 3
# Per page, the elements this close to the edge in reading down (or up) may be running lines.
EDGE_ELEMENTS = 3
_TEXT_TYPES = frozenset({ElementType.TITLE, ElementType.HEADING, ElementType.PARAGRAPH, ElementType.CAPTION,
                         ElementType.FOOTNOTE})
_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"^[ivxlcdm]+$")
_SPACE = re.compile(r"\s+")


def _key(text: str) -> str:
    """The line's words, case and spacing aside; in a line of few words (a page number, "Page 3 of 11", "A-7")
    every number, arabic or a lone roman numeral, is the same. A longer line must repeat exactly: "Section 2:
    Results of Quarter 2" under "Section 1: ..." is a heading that happens to sit at the same height."""
    words = _SPACE.sub(" ", text.lower()).strip().split(" ")
    if sum(1 for word in words if any(c.isalpha() for c in word) and not _ROMAN.match(word)) > NUMBERED_MAX_WORDS:
        return " ".join(words)
    return _DIGITS.sub("#", " ".join("#" if _ROMAN.match(word) else word for word in words))


def _candidates(elements: list[Element], height: float) -> list[tuple[Element, str]]:
    """(element, band) for the text elements nearest the top and bottom edges, inside the bands."""
    boxed = [e for e in elements if e.bbox is not None and e.type not in FURNITURE]
    by_top = sorted(boxed, key=lambda e: e.bbox[1] if e.bbox else 0.0)
    found: list[tuple[Element, str]] = []
    for element in by_top[:EDGE_ELEMENTS]:
        if element.bbox and element.bbox[3] <= TOP_BAND * height:
            found.append((element, "top"))
    for element in by_top[::-1][:EDGE_ELEMENTS]:
        if element.bbox and element.bbox[1] >= BOTTOM_BAND * height and all(element is not e for e, _ in found):
            found.append((element, "bottom"))
    return [(e, band) for e, band in found if e.type in _TEXT_TYPES and 0 < len(e.text.strip()) <= MAX_CHARS]


def _rendered_from_tree(entry: PageEntry, elements: list[Element]) -> bool:
    """The page's Markdown is exactly its tree rendered (the cpu engine's pages), so it can be rendered again."""
    return (entry.get("markdown") or "").strip() == page_markdown(elements).strip()


def mark_running_furniture(entries: list[PageEntry]) -> int:
    """Retypes the running heads and feet of a document's page entries (`PageEntry`s, changed in
    place: `elements` and `markdown`). Returns how many elements became furniture."""
    pages: list[tuple[PageEntry, list[Element], float]] = []
    for entry in entries:
        height = float(entry.get("height") or 0.0)
        if entry.get("status") != "succeeded" or height <= 0 or not entry.get("elements"):
            continue
        elements = entry_elements(entry)
        if any(e.bbox is not None for e in elements):
            pages.append((entry, elements, height))
    if len(pages) < MIN_PAGES:
        return 0
    seen: dict[tuple[str, str], list[tuple[int, Element, float]]] = defaultdict(list)
    for page_index, (_, elements, height) in enumerate(pages):
        for element, band in _candidates(elements, height):
            assert element.bbox is not None
            centre = (element.bbox[1] + element.bbox[3]) / 2 / height
            seen[(band, _key(element.text))].append((page_index, element, centre))
    needed = max(MIN_PAGES, MIN_SHARE * len(pages))
    running: dict[int, set[str]] = defaultdict(set)
    for (band, _), hits in seen.items():
        for _, element, centre in hits:
            # The pages where the same words sit at (nearly) this height.
            pages_here = {index for index, _, other in hits if abs(other - centre) <= SAME_HEIGHT}
            if len(pages_here) >= needed:
                running[id(element)].add(band)
    changed = 0
    for entry, elements, _ in pages:
        if not any(id(e) in running for e in elements):
            continue
        consistent = _rendered_from_tree(entry, elements)
        markdown = entry.get("markdown") or ""
        updated: list[Element] = []
        for element in elements:
            if id(element) in running:
                kind = ElementType.PAGE_HEADER if "top" in running[id(element)] else ElementType.PAGE_FOOTER
                if not consistent:
                    markdown = _drop_block(markdown, element)
                element = element.model_copy(update={"type": kind, "level": None})
                changed += 1
            updated.append(element)
        entry["elements"] = [e.model_dump(mode="json") for e in updated]
        if consistent:
            body = page_markdown(updated)
            entry["markdown"] = body + "\n" if body else ""
        else:
            entry["markdown"] = markdown
    return changed


def _drop_block(markdown: str, element: Element) -> str:
    """The Markdown without its first block (a blank-line separated paragraph) that is the element's Markdown or,
    heading marks aside, its text."""
    wanted = {element.markdown.strip(), element.text.strip()} - {""}
    parts = markdown.split("\n\n")
    for index, part in enumerate(parts):
        if part.strip() in wanted or part.strip().lstrip("#").strip() in wanted:
            return "\n\n".join(parts[:index] + parts[index + 1:])
    return markdown


def keep_furniture(entries: list[PageEntry]) -> int:
    """`furniture=keep`: each page's Markdown rendered again from its tree with its headers and footers, each
    after a `<!-- page_header -->` / `<!-- page_footer -->` comment. Only pages whose Markdown is their tree
    rendered (every engine's that gives a tree); returns how many pages changed."""
    changed = 0
    for entry in entries:
        if entry.get("status") != "succeeded" or not entry.get("elements"):
            continue
        elements = entry_elements(entry)
        if not any(e.type in FURNITURE for e in elements) or not _rendered_from_tree(entry, elements):
            continue
        body = page_markdown(elements, keep_furniture=True)
        entry["markdown"] = body + "\n" if body else ""
        changed += 1
    return changed
