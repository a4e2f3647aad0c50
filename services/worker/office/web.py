"""HTML read from its DOM into the element tree: headings, paragraphs, nested lists, tables with their spans,
figures with their alt text and captions, preformatted code.

lxml's HTML parser (libxml2, the one browsers' quirks are modelled on) builds the tree; nothing of it is
fetched or run: scripts, styles, templates, frames, embedded objects and form fields are dropped with what
they hold, and only text reaches the elements — escaped wherever it goes into HTML (services/worker/office/
tree.py) — so the outputs carry none of the page's markup or attributes. A link keeps its target only when
that is an absolute http(s) or mailto address, as a Markdown link (the outputs' sanitizer checks it again).
A table inside a table cell is that cell's text. The document's `<title>` opens it as a heading unless the
body already starts with it. The guard has refused nesting deeper than 256 elements before this runs.
"""

from __future__ import annotations

import re

from lxml import etree, html

from services.core.elements import Element
from services.core.errors import CorruptDocument
from services.worker.office.tree import Cell, TreeBuilder, clean, link

# Dropped with everything inside them: they are code, chrome or controls, not the document's text.
DROPPED = frozenset({"script", "style", "noscript", "template", "head", "iframe", "frame", "frameset", "object",
                     "embed", "applet", "svg", "canvas", "input", "select", "textarea", "audio", "video", "map",
                     "link", "meta", "base", "title"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LISTS = frozenset({"ul", "ol", "menu"})
# Elements that end the paragraph before them: what is inside is read as blocks of its own.
BLOCKS = frozenset({*_HEADINGS, *_LISTS, "p", "div", "section", "article", "main", "header", "footer", "nav",
                    "aside", "blockquote", "table", "pre", "figure", "figcaption", "hr", "dl", "dt", "dd", "li",
                    "address", "details", "summary", "fieldset", "form", "center", "body", "html", "caption",
                    "hgroup", "search", "picture"})
# Inside a cell or an item, where words of neighbouring blocks must not run together.
_SPACED = BLOCKS | {"br", "td", "th", "tr", "option", "img"}
MAX_SPAN = 1000


def _tag(node: etree._Element) -> str:
    return node.tag.lower() if isinstance(node.tag, str) else ""


def text_of(node: etree._Element, *, skip: frozenset[str] = frozenset()) -> str:
    """The node's words as a reader sees them: dropped elements left out, blocks apart, spaces collapsed."""
    pieces: list[str] = []

    def walk(element: etree._Element) -> None:
        tag = _tag(element)
        if tag and tag not in DROPPED and tag not in skip:
            spaced = tag in _SPACED
            if spaced:
                pieces.append(" ")
            if tag == "img":
                pieces.append(element.get("alt") or "")
            elif tag == "li" and element is not node:  # an item inside a cell: its marker keeps the items apart
                parent = element.getparent()
                ordered = parent is not None and _tag(parent) == "ol"
                number = sum(1 for s in element.itersiblings(preceding=True) if _tag(s) == "li") + 1
                pieces.append(f"{number}. " if ordered else "- ")
            script = tag in ("sub", "sup") and element is not node
            pieces.append(f"<{tag}>" if script else "")
            start = len(pieces)
            pieces.append(element.text or "")
            for child in element:
                walk(child)
            if tag == "a" and element is not node and element.get("href"):  # a link where the target is safe
                pieces[start:] = [link("".join(pieces[start:]), element.get("href"))]
            pieces.append(f"</{tag}>" if script else "")
            if spaced:
                pieces.append(" ")
        if element is not node:
            pieces.append(element.tail or "")

    walk(node)
    return clean("".join(pieces))


class _Reader:
    def __init__(self) -> None:
        self.tree = TreeBuilder()

    def blocks(self, node: etree._Element) -> None:
        """The node's children in order: runs of inline content become paragraphs, block elements blocks."""
        inline: list[str] = [node.text or ""]

        def flush() -> None:
            self.tree.paragraph("".join(inline))
            inline.clear()

        for child in node:
            tag = _tag(child)
            if tag in DROPPED:
                pass
            elif tag in BLOCKS or (tag and _holds_blocks(child)):
                flush()
                self.block(child, tag)
            elif tag == "br":
                inline.append(" ")
            elif tag == "img" and not "".join(inline).strip() and not (child.tail or "").strip():
                flush()
                self.tree.figure(child.get("alt") or "")  # an image on its own: a figure
            elif tag == "img":
                inline.append(f" {child.get('alt') or ''} ")  # an image among words: its alt text is one of them
            elif tag == "a":
                inline.append(link(text_of(child), child.get("href")))
            elif tag:
                inline.append(text_of(child) if tag not in ("sub", "sup") else f"<{tag}>{text_of(child)}</{tag}>")
                inline.append(" " if tag in _SPACED else "")
            inline.append(child.tail or "")
        flush()

    def block(self, node: etree._Element, tag: str) -> None:
        if tag in _HEADINGS:
            self.tree.heading(text_of(node), _HEADINGS[tag])
        elif tag in _LISTS:
            self.list(node, 0)
            self.tree.end_list()
        elif tag == "li":
            self.list_item(node, 0, ordered=False)
        elif tag == "table":
            self.table(node)
        elif tag == "pre":
            self.tree.code("".join(node.itertext()))
        elif tag in ("figcaption", "caption"):
            self.tree.caption(text_of(node))
        elif tag == "hr":
            self.tree.end_list()
        else:
            self.blocks(node)

    def list(self, node: etree._Element, level: int) -> None:
        ordered = _tag(node) == "ol"
        for child in node:
            tag = _tag(child)
            if tag == "li":
                self.list_item(child, level, ordered=ordered)
            elif tag in _LISTS:
                self.list(child, level + 1)
            elif tag and tag not in DROPPED:
                self.list(child, level)  # a wrapper (a <div> around items): its items are this list's

    def list_item(self, node: etree._Element, level: int, *, ordered: bool) -> None:
        self.tree.list_item(text_of(node, skip=_LISTS), level, ordered=ordered)
        for nested in node.iter(*_LISTS):
            if nested is not node and _nearest_item(nested) is node:
                self.list(nested, level + 1)

    def table(self, node: etree._Element) -> None:
        caption = next((c for c in node if _tag(c) == "caption"), None)
        if caption is not None:
            self.tree.caption(text_of(caption))
        rows: list[list[Cell]] = []
        for row in _rows(node):
            cells = [Cell(text_of(cell), colspan=_span(cell.get("colspan")), rowspan=_span(cell.get("rowspan")),
                          header=_tag(cell) == "th") for cell in row if _tag(cell) in ("td", "th")]
            rows.append(cells)
        self.tree.table(rows)


def _rows(table: etree._Element) -> list[etree._Element]:
    """The table's own rows (those of tables inside its cells are their cells' text)."""
    rows = []
    for child in table:
        tag = _tag(child)
        if tag == "tr":
            rows.append(child)
        elif tag in ("thead", "tbody", "tfoot"):
            rows.extend(c for c in child if _tag(c) == "tr")
    return rows


def _holds_blocks(node: etree._Element) -> bool:
    """An inline element wrapping blocks (`<a><div>…</div></a>`, `<span><p>…`) is read as a block."""
    return any(_tag(d) in BLOCKS for d in node.iterdescendants())


def _nearest_item(node: etree._Element) -> etree._Element | None:
    parent = node.getparent()
    while parent is not None and _tag(parent) != "li":
        parent = parent.getparent()
    return parent


def _span(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), MAX_SPAN))
    except ValueError:
        return 1


_DECLARED = re.compile(rb"""charset\s*=|<\?xml[^>]*encoding\s*=""", re.IGNORECASE)


def _undeclared_utf8(data: bytes) -> str | None:
    """"utf-8" for a page that names no encoding (in its first 1,024 bytes, where browsers look) and is valid
    UTF-8: libxml2 would read it as Latin-1. None leaves the choice to the page (BOM, `<meta charset>`)."""
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) or _DECLARED.search(data[:1024]):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"


def read_html(data: bytes, *, title_heading: bool = True) -> list[Element]:
    """The page's element tree. Raises `CorruptDocument` when nothing can be parsed out of the bytes."""
    try:
        document = html.document_fromstring(data, parser=html.HTMLParser(
            no_network=True, huge_tree=False, encoding=_undeclared_utf8(data)))
    except (etree.ParserError, ValueError) as exc:
        raise CorruptDocument(f"the HTML cannot be read ({exc})") from exc
    reader = _Reader()
    body = document.find("body")
    title = clean(document.findtext(".//title") or "") if title_heading else ""
    if title and (body is None or title not in text_of(body)[:4096]):
        reader.tree.heading(title, 1)
    try:
        reader.blocks(body if body is not None else document)
    except RecursionError as exc:
        raise CorruptDocument("the HTML is nested too deeply to read") from exc
    return reader.tree.finish()
