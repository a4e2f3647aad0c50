"""The page's element tree: the one page model that Markdown, HTML, LaTeX and chunks are renderings of.

A page result holds `width` and `height` (PDF points, the page as displayed, after `/Rotate`) and an ordered
list of elements; the list order is the reading order. `bbox` is `[x0, y0, x1, y1]` in those points with the
origin at the top left, or None where nothing on the page backs the element (a model wrote text that matched
none of the page's words) — never a made-up box.

Page headers and footers stay in the tree, typed, but are left out of the Markdown.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class ElementType(StrEnum):
    TITLE = "title"
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    TABLE = "table"
    FORMULA = "formula"
    FIGURE = "figure"
    CAPTION = "caption"
    CODE = "code"
    PAGE_HEADER = "page_header"
    PAGE_FOOTER = "page_footer"
    FOOTNOTE = "footnote"


# Furniture: typed in the tree, left out of the page's Markdown.
FURNITURE = frozenset({ElementType.PAGE_HEADER, ElementType.PAGE_FOOTER})

BBox = tuple[float, float, float, float]


class Element(BaseModel):
    """One block of a page. `markdown` is its canonical rendering; `text` its plain words."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="unique within the document: `p{page}-e{n}`")
    type: ElementType
    page: int = Field(description="1-based page number in the uploaded file")
    bbox: BBox | None = Field(description="[x0, y0, x1, y1] in PDF points, top-left origin; null when unknown")
    text: str = ""
    markdown: str = ""
    html: str | None = Field(default=None, description="tables: the table as HTML")
    latex: str | None = Field(default=None, description="formulas: the LaTeX source, without delimiters")
    level: int | None = Field(default=None, description="headings: 1 (top) to 6")
    items: list[str] | None = Field(default=None, description="lists: the items' Markdown, in order")
    alignment: float | None = Field(
        default=None, description="0..1: how well the element's text matched the page's words (vLLM answers)")


def element_id(page: int, n: int) -> str:
    return f"p{page}-e{n}"


def page_markdown(elements: list[Element]) -> str:
    """The page's Markdown: its elements in reading order, furniture left out, one blank line between blocks."""
    return "\n\n".join(e.markdown.strip() for e in elements if e.type not in FURNITURE and e.markdown.strip())
