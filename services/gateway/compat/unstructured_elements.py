"""pagemill's element tree as Unstructured's element list (the answer of `POST /general/v0/general`).

    pagemill type        Unstructured type       notes
    title, heading   ->  Title                   metadata.category_depth = level - 1 (a title: 0)
    paragraph        ->  NarrativeText
    list             ->  ListItem                one element per item
    table            ->  Table                   metadata.text_as_html
    formula          ->  Formula                 text: the LaTeX source
    figure           ->  Image
    caption          ->  FigureCaption
    code             ->  CodeSnippet
    page_header      ->  Header
    page_footer      ->  Footer
    footnote         ->  Footnote
    form_field       ->  FormKeysValues          metadata.key_value_pairs: [{key: {text}, value: {text}}]

Every element's `metadata.parent_id` is the nearest heading above it (Unstructured's section tree). Coordinates,
when asked for, are pagemill's boxes in "PixelSpace" (top-left origin) at 72 dpi: one pixel is one PDF point, so
`layout_width` and `layout_height` are the page's size in points.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from typing import Any

TYPES = {"title": "Title", "heading": "Title", "paragraph": "NarrativeText", "list": "ListItem", "table": "Table",
         "formula": "Formula", "figure": "Image", "caption": "FigureCaption", "code": "CodeSnippet",
         "page_header": "Header", "page_footer": "Footer", "footnote": "Footnote",
         "form_field": "FormKeysValues"}
FURNITURE = frozenset({"page_header", "page_footer"})
MARKDOWN_MARKS = re.compile(r"(\*\*|__|`|\\(?=[\\`*_{}\[\]()#+\-.!|]))")


@dataclass(frozen=True, slots=True)
class Options:
    filename: str
    filetype: str
    coordinates: bool = False
    include_page_breaks: bool = False
    unique_element_ids: bool = False
    starting_page_number: int = 1
    languages: tuple[str, ...] = ()


def _plain(markdown: str) -> str:
    """A list item's Markdown as plain text (emphasis and escapes dropped)."""
    return MARKDOWN_MARKS.sub("", markdown).strip()


def _pieces(element: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The element's text (one per list item), each with the metadata only this element type has."""
    kind = element["type"]
    if kind == "list":
        items = element.get("items") or [line for line in (element.get("text") or "").splitlines() if line.strip()]
        return [(_plain(item), {}) for item in items]
    if kind == "table":
        return [(element.get("text") or "", {"text_as_html": element["html"]} if element.get("html") else {})]
    if kind == "formula":
        return [(element.get("latex") or element.get("text") or "", {})]
    if kind == "form_field":
        pair = {"key": {"text": element.get("field_name") or ""}, "value": {"text": element.get("value") or ""}}
        return [(element.get("text") or "", {"key_value_pairs": [pair]})]
    if kind in ("title", "heading"):
        depth = 0 if kind == "title" else max((element.get("level") or 1) - 1, 0)
        return [(element.get("text") or "", {"category_depth": depth})]
    return [(element.get("text") or "", {})]


def _coordinates(bbox: list[float], width: float, height: float) -> dict[str, Any]:
    x0, y0, x1, y1 = bbox
    return {"points": [[x0, y0], [x0, y1], [x1, y1], [x1, y0]], "system": "PixelSpace",
            "layout_width": width, "layout_height": height}


class _Ids:
    """Unstructured's ids: a SHA-256 of the file name, text, page and position (stable across runs), or UUIDs."""

    def __init__(self, options: Options) -> None:
        self.options, self.sequence = options, 0

    def next(self, text: str, page_number: int) -> str:
        self.sequence += 1
        if self.options.unique_element_ids:
            return str(uuid.uuid4())
        data = f"{self.options.filename}{text}{page_number}{self.sequence}"
        return hashlib.sha256(data.encode()).hexdigest()[:32]


def to_elements(result: dict[str, Any], options: Options) -> list[dict[str, Any]]:
    """The succeeded pages of a JSON result (`GET /v1/documents/{id}/result?format=json`) as Unstructured
    elements; a page that failed contributes none (the caller decides whether that is an error)."""
    ids = _Ids(options)
    out: list[dict[str, Any]] = []
    pages = [page for page in result.get("pages", []) if page.get("status") == "succeeded"]
    headings: list[tuple[int, str]] = []  # (depth, element_id), the open sections
    for n, page in enumerate(pages):
        page_number = options.starting_page_number + page["page_number"] - 1
        base = {"filename": options.filename, "filetype": options.filetype, "page_number": page_number}
        if options.languages:
            base["languages"] = list(options.languages)
        for element in page.get("elements", []):
            for text, extra in _pieces(element):
                if not text.strip() and element["type"] != "figure":
                    continue
                element_id = ids.next(text, page_number)
                metadata = {**base, **extra}
                if element["type"] not in FURNITURE:
                    depth = extra.get("category_depth")
                    while headings and depth is not None and headings[-1][0] >= depth:
                        headings.pop()
                    if headings:
                        metadata["parent_id"] = headings[-1][1]
                    if depth is not None:
                        headings.append((depth, element_id))
                if options.coordinates and element.get("bbox") and page.get("width") and page.get("height"):
                    metadata["coordinates"] = _coordinates(element["bbox"], page["width"], page["height"])
                out.append({"type": TYPES.get(element["type"], "UncategorizedText"), "element_id": element_id,
                            "text": text, "metadata": metadata})
        if options.include_page_breaks and n < len(pages) - 1:
            out.append({"type": "PageBreak", "element_id": ids.next("", page_number), "text": "",
                        "metadata": dict(base)})
    return out
