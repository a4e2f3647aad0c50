"""Presentations read natively: every slide's title, paragraphs, list items and tables, as the slide stores them.

A rendered slide is set in whatever font stands in for the deck's own, which can wrap a word in two inside a
narrow text box; the slide part holds the text exactly. Slides are read in the presentation's order
(`ppt/presentation.xml`'s slide list, through its relationships), shapes in reading order: rows of shapes whose
tops lie within a twentieth of the slide's height of each other, each row left to right. Speaker notes are not
read. The archive passes the guard's checks (bombs, entities) before any part is parsed, and ElementTree
resolves no external entities.
"""

from __future__ import annotations

import html
import io
import posixpath
import zipfile
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from services.core.formats import PPTX
from services.worker.office.guard import GuardLimits, check_document

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
MAX_PART_BYTES = 16 << 20  # one slide, layout or the presentation part
_TITLES = frozenset({"title", "ctrTitle"})
_BODIES = frozenset({"body", "obj"})  # placeholders whose paragraphs are bullets unless they say otherwise
_DEFAULT_HEIGHT = 6_858_000  # EMU, a 16:9 slide


@dataclass(frozen=True, slots=True)
class Block:
    """One paragraph, list item or table of a slide."""

    kind: str  # "paragraph", "list_item" or "table"
    shape: int  # which shape of the slide, in reading order, it belongs to: a list ends with its shape
    text: str = ""
    level: int = 0
    ordered: bool = False
    cells: list[list[str]] = field(default_factory=list)
    html: str = ""

    def as_json(self) -> dict[str, Any]:
        if self.kind == "table":
            return {"kind": self.kind, "cells": self.cells, "html": self.html}
        if self.kind == "list_item":
            return {"kind": self.kind, "text": self.text, "level": self.level, "ordered": self.ordered}
        return {"kind": self.kind, "text": self.text}


@dataclass(frozen=True, slots=True)
class Slide:
    number: int  # the slide's place in the presentation, from 1
    page: int  # its page in the converted PDF, from 1 (hidden slides are on none)
    title: str
    blocks: list[Block]

    @property
    def markdown(self) -> str:
        parts = [f"## {self.title}"] if self.title else []
        items: list[str] = []
        counters: dict[int, int] = {}
        shape = -1
        for block in self.blocks:
            if items and (block.kind != "list_item" or block.shape != shape):
                parts.append("\n".join(items))
                items, counters = [], {}
            shape = block.shape
            if block.kind == "list_item":
                counters = {lvl: n for lvl, n in counters.items() if lvl <= block.level}
                counters[block.level] = counters.get(block.level, 0) + 1
                mark = f"{counters[block.level]}." if block.ordered else "-"
                items.append(f"{'   ' * block.level}{mark} {block.text}")
                continue
            parts.append(block.html if block.kind == "table" else block.text)
        if items:
            parts.append("\n".join(items))
        return "\n\n".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {"number": self.number, "page": self.page, "title": self.title,
                "blocks": [b.as_json() for b in self.blocks], "markdown": self.markdown}


def read_pptx(data: bytes, *, limits: GuardLimits | None = None) -> list[Slide]:
    """Every visible slide of a .pptx, in the presentation's order; none when the slide list cannot be read (the
    rendered pages then speak for the deck). Raises `UnsafeDocument`/`CorruptDocument` for what the guard refuses."""
    check_document(data, PPTX, limits)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        return []
    with archive:
        presentation = _part(archive, "ppt/presentation.xml")
        if presentation is None:
            return []
        size = presentation.find(f"{_P}sldSz")
        height = _number(size.get("cy") if size is not None else None, _DEFAULT_HEIGHT)
        targets = _relationships(archive, "ppt/presentation.xml")
        slides: list[Slide] = []
        for number, entry in enumerate(presentation.iterfind(f"{_P}sldIdLst/{_P}sldId"), 1):
            path = targets.get(entry.get(f"{_R}id", ""))
            root = _part(archive, path) if path else None
            if root is not None and root.get("show") == "0":  # a hidden slide is not on the rendered pages either
                continue
            if root is None:  # unreadable here: an empty slide, whose rendered page then speaks for it
                slides.append(Slide(number=number, page=len(slides) + 1, title="", blocks=[]))
                continue
            slides.append(_slide(archive, path or "", root, number, len(slides) + 1, height))
    return slides


def _part(archive: zipfile.ZipFile, name: str) -> ElementTree.Element | None:
    """A part parsed, or None when it is missing, unreadable or larger than MAX_PART_BYTES inflated."""
    try:
        with archive.open(name) as member:
            raw = member.read(MAX_PART_BYTES + 1)
        if len(raw) > MAX_PART_BYTES:
            return None
        return ElementTree.fromstring(raw)
    except (KeyError, zipfile.BadZipFile, OSError, ValueError, ElementTree.ParseError):
        return None


def _relationships(archive: zipfile.ZipFile, source: str) -> dict[str, str]:
    """A part's relationship ids and the archive paths they point to."""
    folder, name = posixpath.split(source)
    rels = _part(archive, posixpath.join(folder, "_rels", f"{name}.rels"))
    if rels is None:
        return {}
    return {rel.get("Id", ""): posixpath.normpath(posixpath.join(folder, rel.get("Target", "")))
            for rel in rels.iter(f"{_REL}Relationship") if rel.get("TargetMode") != "External"}


def _placeholder(shape: ElementTree.Element) -> tuple[str, str] | None:
    """A placeholder's (type, idx); a placeholder with no type is a body (an "obj"), None for other shapes."""
    ph = shape.find(f"./*/{_P}nvPr/{_P}ph")
    return None if ph is None else (ph.get("type", "obj"), ph.get("idx", ""))


def _offset(shape: ElementTree.Element) -> tuple[int, int] | None:
    off = shape.find(f"./{_P}spPr/{_A}xfrm/{_A}off")
    if off is None:
        off = shape.find(f"./{_P}xfrm/{_A}off")  # a graphic frame
    if off is None:
        off = shape.find(f"./{_P}grpSpPr/{_A}xfrm/{_A}off")
    return None if off is None else (_number(off.get("y"), 0), _number(off.get("x"), 0))


def _layout_offsets(archive: zipfile.ZipFile, slide_path: str) -> dict[tuple[str, str], tuple[int, int]]:
    """Where the slide's layout puts each placeholder, by type and by idx: a slide's placeholder inherits it."""
    layout = next((path for path in _relationships(archive, slide_path).values() if "slideLayout" in path), None)
    root = _part(archive, layout) if layout else None
    found: dict[tuple[str, str], tuple[int, int]] = {}
    for shape in root.iter(f"{_P}sp") if root is not None else ():
        ph, offset = _placeholder(shape), _offset(shape)
        if ph is not None and offset is not None:
            found.setdefault(("type", ph[0]), offset)
            if ph[1]:
                found.setdefault(("idx", ph[1]), offset)
    return found


def _slide(archive: zipfile.ZipFile, path: str, root: ElementTree.Element, number: int, page: int,
           height: int) -> Slide:
    tree = root.find(f"{_P}cSld/{_P}spTree")
    layout = _layout_offsets(archive, path)
    title = ""
    blocks: list[Block] = []
    for index, shape in enumerate(_reading_order(list(tree) if tree is not None else [], layout, height)):
        ph = _placeholder(shape)
        if ph is not None and ph[0] in _TITLES and not title:
            title = " ".join(_paragraph_text(p) for p in shape.iter(f"{_A}p")).strip()
            continue
        blocks.extend(_blocks(shape, ph, index))
    return Slide(number=number, page=page, title=title, blocks=[b for b in blocks if b.text or b.cells])


def _reading_order(shapes: list[ElementTree.Element], layout: dict[tuple[str, str], tuple[int, int]],
                   height: int) -> list[ElementTree.Element]:
    """Shapes (group members in place of their group) in rows by their tops, each row left to right."""
    placed = []
    for shape in shapes:
        if shape.tag not in (f"{_P}sp", f"{_P}graphicFrame", f"{_P}grpSp"):
            continue
        offset = _offset(shape)
        ph = _placeholder(shape)
        if offset is None and ph is not None:
            offset = layout.get(("idx", ph[1])) or layout.get(("type", ph[0]))
        placed.append((offset or (0, 0), shape))
    placed.sort(key=lambda item: item[0])
    rows: list[list[tuple[tuple[int, int], ElementTree.Element]]] = []
    for item in placed:
        if rows and item[0][0] - rows[-1][0][0][0] <= height // 20:
            rows[-1].append(item)
        else:
            rows.append([item])
    ordered = []
    for row in rows:
        for _, shape in sorted(row, key=lambda item: item[0][1]):
            if shape.tag == f"{_P}grpSp":
                ordered.extend(_reading_order(list(shape), layout, height))
            else:
                ordered.append(shape)
    return ordered


def _blocks(shape: ElementTree.Element, ph: tuple[str, str] | None, index: int) -> list[Block]:
    table = shape.find(f".//{_A}tbl")
    if shape.tag == f"{_P}graphicFrame":
        return [_table(table, index)] if table is not None else []
    body = shape.find(f"{_P}txBody")
    if body is None:
        return []
    bullets_by_default = ph is not None and ph[0] in _BODIES
    return [_paragraph(p, bullets_by_default, index) for p in body.iterfind(f"{_A}p")]


def _paragraph_text(paragraph: ElementTree.Element) -> str:
    """The paragraph's runs and fields joined as they stand; a line break inside it becomes a space."""
    pieces = []
    for child in paragraph:
        if child.tag in (f"{_A}r", f"{_A}fld"):
            pieces.append(child.findtext(f"{_A}t") or "")
        elif child.tag == f"{_A}br":
            pieces.append(" ")
    return " ".join("".join(pieces).split())


def _paragraph(paragraph: ElementTree.Element, bullets_by_default: bool, shape: int) -> Block:
    text = _paragraph_text(paragraph)
    props = paragraph.find(f"{_A}pPr")
    if props is None or props.find(f"{_A}buNone") is None:
        numbered = props is not None and props.find(f"{_A}buAutoNum") is not None
        marked = props is not None and (props.find(f"{_A}buChar") is not None
                                        or props.find(f"{_A}buBlip") is not None)
        if numbered or marked or bullets_by_default:
            level = _number(props.get("lvl") if props is not None else None, 0)
            return Block(kind="list_item", shape=shape, text=text, level=max(0, min(level, 8)), ordered=numbered)
    return Block(kind="paragraph", shape=shape, text=text)


def _table(table: ElementTree.Element, shape: int) -> Block:
    """The table's grid of cell texts (a merged cell's text once, at its first cell) and its HTML with spans."""
    cells: list[list[str]] = []
    rows_html = []
    for row in table.iterfind(f"{_A}tr"):
        texts, tds = [], []
        for cell in row.iterfind(f"{_A}tc"):
            text = " ".join(_paragraph_text(p) for p in cell.iter(f"{_A}p")).strip()
            if cell.get("hMerge") == "1" or cell.get("vMerge") == "1":
                texts.append("")
                continue
            texts.append(text)
            spans = "".join(f' {name}="{_span(cell, attr)}"' for attr, name in (("gridSpan", "colspan"),
                                                                                ("rowSpan", "rowspan"))
                            if _span(cell, attr) > 1)
            tds.append(f"<td{spans}>{html.escape(text)}</td>")
        cells.append(texts)
        rows_html.append("<tr>" + "".join(tds) + "</tr>")
    return Block(kind="table", shape=shape, cells=cells, html=f"<table>{''.join(rows_html)}</table>")


def _span(cell: ElementTree.Element, attribute: str) -> int:
    return max(1, min(_number(cell.get(attribute), 1), 1000))


def _number(value: str | None, default: int) -> int:
    """An integer attribute, or `default` when it is missing or not a number (a hostile file's garbage)."""
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
