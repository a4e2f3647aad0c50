"""Document Markdown: the pages in order, a comment marking where each begins, and failed pages said aloud."""

from __future__ import annotations

from typing import Any

from services.core.pages import PageEntry, PageErrorEntry


def page_marker(page: PageEntry) -> str:
    return f"<!-- page {page['page_number']} -->"


def render_markdown(pages: list[PageEntry]) -> str:
    parts: list[str] = []
    for page in pages:
        if page["status"] == "succeeded":
            body = (page.get("markdown") or "").strip()
            parts.append(f"{page_marker(page)}\n\n{body}\n" if body else f"{page_marker(page)}\n")
        else:
            error: PageErrorEntry = page.get("error") or {"code": "unknown", "message": ""}
            parts.append(f"<!-- page {page['page_number']}: {page['status']}"
                         f" ({error.get('code', 'unknown')}: {error.get('message', '')}) -->\n")
    return "\n".join(parts)


def render_sheets(sheets: list[dict[str, Any]]) -> str:
    """A spreadsheet's Markdown: each sheet's cells exactly as stored, one section per sheet.

    Rendered pages cut a wide sheet into tiny print across pages; the workbook itself is exact. The rendered
    pages stay in the JSON result, page by page, with their layout."""
    parts = []
    for sheet in sheets:
        note = " (truncated at the cell limit)" if sheet.get("truncated") else ""
        parts.append(f"<!-- sheet {sheet['name']}{note} -->\n\n## {sheet['name']}\n\n{sheet['html']}\n")
    return "\n".join(parts)


def render_slides(slides: list[dict[str, Any]], pages: list[PageEntry]) -> str:
    """A presentation's Markdown: each slide's title, text and tables as the slide stores them, one section each.

    A rendered slide is set in a stand-in font when the deck's own is missing, which can wrap words apart; the
    slide itself is exact. Only the slides whose pages were parsed are written (the page selection holds), and a
    slide with no text of its own (a picture of a page) keeps what its rendered page read. The rendered pages
    stay in the JSON result with their layout, boxes and images."""
    by_number = {page["page_number"]: page for page in pages}
    parts = []
    for slide in slides:
        page = by_number.get(slide["page"])
        if page is None:
            continue
        body = slide["markdown"].strip()
        if not body and page["status"] == "succeeded":
            body = (page.get("markdown") or "").strip()
        parts.append(f"<!-- slide {slide['number']} -->\n\n{body}\n" if body else f"<!-- slide {slide['number']} -->\n")
    return "\n".join(parts)


def render_charts(charts: list[dict[str, Any]]) -> str:
    """Charts read from the document's chart parts, after its pages: their pictures hold no text to read."""
    return "\n".join(f"<!-- chart {n} -->\n\n{chart['markdown']}\n" for n, chart in enumerate(charts, 1))
