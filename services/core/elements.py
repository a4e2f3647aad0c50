"""The page's element tree: the one page model that Markdown, HTML, LaTeX and chunks are renderings of.

A page result holds `width` and `height` (PDF points, the page as displayed, after `/Rotate`) and an ordered
list of elements; the list order is the reading order. `bbox` is `[x0, y0, x1, y1]` in those points with the
origin at the top left, or None where nothing on the page backs the element (a model wrote text that matched
none of the page's words) — never a made-up box.

Page headers and footers stay in the tree, typed, but are left out of the Markdown (unless the upload asked
`furniture=keep`). A figure gets its image at assembly (`image`: its path under the document's results,
`figures/p3-e5.png`) and the id of its caption (`caption_id`), when it has one. A chart is a figure with `chart`
set; its data table, when one was read (`derived`), is its `html`, and its Markdown the image and that table.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

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
    FORM_FIELD = "form_field"
    CHECKBOX = "checkbox"


# Furniture: typed in the tree, left out of the page's Markdown.
FURNITURE = frozenset({ElementType.PAGE_HEADER, ElementType.PAGE_FOOTER})

BBox = tuple[float, float, float, float]


class TablePart(BaseModel):
    """One page's part of a table that runs across pages: where it was and which of the merged rows it holds."""

    model_config = ConfigDict(extra="forbid")

    page: int = Field(description="1-based page number in the uploaded file")
    bbox: BBox | None = Field(description="the part on its page, PDF points, top-left origin")
    rows: tuple[int, int] = Field(description="[first, end) of the merged table's rows (header rows count)")
    source_id: str = Field(description="the id the part had as a table of its own page")
    html: str = Field(description="the part as its page read it (its repeated header included): to undo the merge")


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
    items: list[str] | None = Field(default=None, description="lists: the items' Markdown, in order, without markers")
    ordered: bool | None = Field(default=None, description="lists: numbered (1. 2. …) rather than bulleted")
    alignment: float | None = Field(
        default=None, description="0..1: how well the element's text matched the page's words (vLLM answers)")
    image: str | None = Field(
        default=None, description="figures: the image's path beside the document's results (`figures/p3-e5.png`), "
                                  "served by `GET /v1/documents/{id}/figures/{name}`")
    caption_id: str | None = Field(default=None, description="figures and tables: the id of their caption element")
    field_name: str | None = Field(default=None, description="form fields: the AcroForm field's full name")
    field_type: str | None = Field(
        default=None, description="form fields: text, checkbox, radio, combobox, listbox, signature, button")
    value: str | None = Field(default=None, description="form fields: the value (a radio button: its option)")
    checked: bool | None = Field(default=None, description="checkboxes, radio buttons: ticked or not")
    parts: list[TablePart] | None = Field(
        default=None, description="a table merged across pages: each page's part, in order (one logical table)")
    chart: str | None = Field(
        default=None, description="figures that are charts: `bar`, `line` (read by the cpu engine); a model's: "
                                  "`bar`, `line`, `pie`, `scatter`, `area` from its alt text, else `chart`")
    derived: bool | None = Field(
        default=None, description="charts: `html` is their data table read from the drawing (bar heights, points "
                                  "against the value axis) or written by the model, not printed on the page")
    confidence: float | None = Field(
        default=None, description="0..1: how likely the block was read right, from what the engine knows of this "
                                  "block (OCR scores of its lines, text-layer quality, a table's grid, a model's "
                                  "token probabilities); null when the engine gives none")


DERIVED_NOTE = "*Chart data (derived: read from the drawing, not printed on the page):*"


def chart_markdown(element: Element, image_markdown: str = "") -> str:
    """A chart's Markdown: its image (once kept), then its derived data table under a note saying so."""
    blocks = [image_markdown] if image_markdown else []
    if element.html and element.derived:
        blocks += [DERIVED_NOTE, element.html]
    return "\n\n".join(blocks)


def element_id(page: int, n: int) -> str:
    return f"p{page}-e{n}"


def renumber(elements: list[Element], page: int) -> list[Element]:
    """The elements stamped with their page number and ids `p{page}-e{n}` in list order."""
    return [e.model_copy(update={"page": page, "id": element_id(page, n)}) for n, e in enumerate(elements, 1)]


def to_wire(element: Element) -> dict[str, Any]:
    """The element as the page result's `PageElement` message in JSON form (no box: no `bbox` field)."""
    wire = element.model_dump(mode="json", exclude_none=True)
    if element.bbox is None:
        wire.pop("bbox", None)
    return wire


def from_wire(raw: dict[str, Any]) -> Element:
    """An element read back from a page result (`PageElement` JSON: an empty `bbox` is no box, an empty
    `items` on anything but a list is no items)."""
    data = dict(raw)
    data["bbox"] = tuple(data["bbox"]) if data.get("bbox") else None
    if data.get("type") != ElementType.LIST and not data.get("items"):
        data.pop("items", None)
    return Element.model_validate(data)


def furniture_markdown(element: Element) -> str:
    """A kept page header or footer in Markdown: a comment naming its type, then its text (`furniture=keep`)."""
    return f"<!-- {element.type.value} -->\n{element.text.strip()}"


def page_markdown(elements: list[Element], *, keep_furniture: bool = False) -> str:
    """The page's Markdown: its elements in reading order, furniture left out (or, `keep_furniture`, marked by a
    comment), one blank line between blocks."""
    blocks = []
    for e in elements:
        if e.type in FURNITURE:
            if keep_furniture and e.text.strip():
                blocks.append(furniture_markdown(e))
        elif e.markdown.strip():
            blocks.append(e.markdown.strip())
    return "\n\n".join(blocks)
