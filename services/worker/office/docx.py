"""Word documents (DOCX) read from their OOXML body into the element tree, not from a rendering of it.

    word/document.xml ─▶ paragraphs: style → heading level (`heading N`, `Title`, an outline level),
                         numbering → list items with their level and bullet/number; runs' text with
                         tracked insertions kept and deletions dropped (the current text); inline OMML as
                         `$…$`, a display equation as a formula; images as figures with their alt text;
                         footnote references as `[^n]`; hyperlinks to web or mail addresses as links
                       ─▶ tables: cells with `gridSpan` as colspan and `vMerge` as rowspan
    word/footnotes.xml, endnotes.xml ─▶ footnotes at the end

The archive passes the guard's checks (bombs, entities) before this runs; ElementTree resolves no external
entities. Page headers and footers are page furniture and are not read. A file that is not a readable DOCX
raises `CorruptDocument`, and the worker then converts it with LibreOffice instead.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from xml.etree import ElementTree

from services.core.elements import Element
from services.core.errors import CorruptDocument
from services.worker.office.numbering import Numbering
from services.worker.office.omml import M, omml_latex
from services.worker.office.tree import MAX_SPAN, Cell, TreeBuilder, clean, link

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_V = "{urn:schemas-microsoft-com:vml}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
MAX_PART_BYTES = 64 << 20
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
# What a paragraph's text never includes: deleted and moved-away runs (tracked changes), field codes, properties.
_SKIPPED = frozenset({f"{W}del", f"{W}moveFrom", f"{W}delText", f"{W}instrText", f"{W}pPr", f"{W}rPr",
                      f"{W}fldData", f"{W}delInstrText"})


@dataclass(frozen=True, slots=True)
class _Style:
    name: str = ""
    outline: int | None = None  # 0-based outline level
    num_id: str | None = None
    level: int | None = None
    based_on: str | None = None


@dataclass(slots=True)
class _Paragraph:
    """What a paragraph's walk found beside its text."""

    pieces: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    formulas: list[str] = field(default_factory=list)


def _val(node: ElementTree.Element | None, default: str | None = None) -> str | None:
    return node.get(f"{W}val", default) if node is not None else default


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


class _Reader:
    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self.styles = self._styles()
        self.numbering = Numbering.parse(self.part("word/numbering.xml"))
        self.tree = TreeBuilder()
        self.targets = self._link_targets()
        self.footnotes: list[str] = []  # ids referenced, in order
        self.list_id: str | None = None
        # Word's Title style sits above its `heading 1`: a document with a title has its sections one level down
        self.shift = int(any(s.name.lower() == "title" for s in self.styles.values())
                         and archive_uses(archive, "Title"))

    def part(self, name: str) -> ElementTree.Element | None:
        try:
            with self.archive.open(name) as member:
                raw = member.read(MAX_PART_BYTES + 1)
        except KeyError:
            return None
        if len(raw) > MAX_PART_BYTES:
            raise CorruptDocument(f"the DOCX part {name} is larger than {MAX_PART_BYTES >> 20} MiB")
        return ElementTree.fromstring(raw)

    def _link_targets(self) -> dict[str, str]:
        """The body's external relationships (hyperlink targets) by id."""
        root = self.part("word/_rels/document.xml.rels")
        return {rel.get("Id", ""): rel.get("Target", "") for rel in (root.iter(f"{_REL}Relationship")
                                                                    if root is not None else ())
                if rel.get("TargetMode") == "External"}

    def _styles(self) -> dict[str, _Style]:
        root = self.part("word/styles.xml")
        found: dict[str, _Style] = {}
        for style in root.iterfind(f"{W}style") if root is not None else ():
            props = style.find(f"{W}pPr")
            num = props.find(f"{W}numPr") if props is not None else None
            outline = _val(props.find(f"{W}outlineLvl") if props is not None else None)
            found[style.get(f"{W}styleId", "")] = _Style(
                name=_val(style.find(f"{W}name"), "") or "", outline=_int(outline, 9) if outline else None,
                num_id=_val(num.find(f"{W}numId")) if num is not None else None,
                level=_int(_val(num.find(f"{W}ilvl")), 0) if num is not None and num.find(f"{W}ilvl") is not None
                else None,
                based_on=_val(style.find(f"{W}basedOn")))
        return found

    def _style_chain(self, style_id: str | None) -> list[_Style]:
        chain: list[_Style] = []
        while style_id and style_id in self.styles and len(chain) < 20:
            chain.append(self.styles[style_id])
            style_id = chain[-1].based_on
        return chain

    def heading_level(self, props: ElementTree.Element | None, chain: list[_Style]) -> int | None:
        own = _val(props.find(f"{W}outlineLvl")) if props is not None else None
        if own is not None and _int(own, 9) < 9:
            return _int(own, 9) + 1
        if chain:
            name = chain[0].name.strip()
            if name.lower() == "title":
                return 1
            match = _HEADING_NAME.match(name)
            if match:
                return int(match.group(1))
        for style in chain:
            if style.outline is not None and style.outline < 9:
                return style.outline + 1
        return None

    def list_place(self, props: ElementTree.Element | None, chain: list[_Style]) -> tuple[str, int] | None:
        num = props.find(f"{W}numPr") if props is not None else None
        num_id = _val(num.find(f"{W}numId")) if num is not None else None
        level = _val(num.find(f"{W}ilvl")) if num is not None else None
        for style in chain:
            num_id = num_id if num_id is not None else style.num_id
            level = level if level is not None else (str(style.level) if style.level is not None else None)
        if num_id is None or num_id == "0":
            return None
        return num_id, _int(level, 0)

    # -- the body -------------------------------------------------------------------------------------------

    def blocks(self, container: ElementTree.Element) -> None:
        for child in container:
            if child.tag == f"{W}p":
                self.paragraph(child)
            elif child.tag == f"{W}tbl":
                self.tree.table(self.table(child))
                self.list_id = None
            elif child.tag in (f"{W}sdt", f"{W}sdtContent", f"{W}customXml", f"{W}ins", f"{W}moveTo"):
                self.blocks(child)

    def paragraph(self, node: ElementTree.Element) -> None:
        props = node.find(f"{W}pPr")
        chain = self._style_chain(_val(props.find(f"{W}pStyle")) if props is not None else None)
        found = _Paragraph()
        self.walk(node, found)
        text = clean("".join(found.pieces))
        level = self.heading_level(props, chain)
        place = self.list_place(props, chain) if text else None
        # Word counts every numbered paragraph, headings too: its label is what the reader sees ("2.3 Results")
        label = self.numbering.next_label(*place) if place is not None else ""
        if level is not None:
            heading = f"{label} {text}" if label else text
            self.tree.heading(heading, level if chain and chain[0].name.lower() == "title" else level + self.shift)
        elif chain and chain[0].name.lower() == "caption":
            self.tree.caption(text)
        elif place is not None:
            num_id, depth = place
            if num_id != self.list_id and depth == 0:
                self.tree.end_list()  # another list starts
            self.list_id = num_id
            if self.numbering.multi_level(num_id, depth):  # "1.2." is more than nesting says: written out
                self.tree.list_item(f"{label} {text}", depth, ordered=False)
            else:
                numbered = self.numbering.numbered(num_id, depth)
                self.tree.list_item(text, depth, ordered=numbered,
                                    number=self.numbering.counter(num_id, depth) if numbered else None)
        elif text:
            self.list_id = None
            self.tree.paragraph(text)
        for latex in found.formulas:
            self.tree.formula(latex)
        for alt in found.figures:
            self.tree.figure(alt)

    def walk(self, node: ElementTree.Element, found: _Paragraph) -> None:
        for child in node:
            tag = child.tag
            if tag in _SKIPPED:
                continue
            if tag == f"{W}t":
                found.pieces.append(child.text or "")
            elif tag in (f"{W}tab", f"{W}br", f"{W}cr"):
                found.pieces.append(" ")
            elif tag == f"{W}noBreakHyphen":
                found.pieces.append("-")
            elif tag == f"{M}oMathPara":
                found.formulas.append(omml_latex(child))
            elif tag == f"{M}oMath":
                found.pieces.append(f" ${omml_latex(child)}$ ")
            elif tag in (f"{W}footnoteReference", f"{W}endnoteReference"):
                kind = "footnote" if tag == f"{W}footnoteReference" else "endnote"
                label = f"{kind[0]}{child.get(f'{W}id', '')}"
                self.footnotes.append(label)
                found.pieces.append(f"[^{label}]")
            elif tag == f"{W}r" and (script := _script(child)):
                run = _Paragraph(figures=found.figures, formulas=found.formulas)
                self.walk(child, run)
                found.pieces.append(f"<{script}>{''.join(run.pieces)}</{script}>")
            elif tag == f"{W}hyperlink":
                words = _Paragraph(figures=found.figures, formulas=found.formulas)
                self.walk(child, words)
                found.pieces.append(link("".join(words.pieces), self.targets.get(child.get(f"{_R}id", ""))))
            elif tag == f"{_MC}AlternateContent":
                choice = child.find(f"{_MC}Choice")  # the choices say the same thing: read one
                self.walk(choice if choice is not None else child, found)
            elif tag in (f"{W}drawing", f"{W}pict"):
                doc = child.find(f".//{_WP}docPr")
                shape = child.find(f".//{_V}imagedata")
                if doc is not None or shape is not None:
                    alt = (doc.get("descr") or doc.get("title") or "") if doc is not None else \
                        (shape.get("{urn:schemas-microsoft-com:office:office}title") or "" if shape is not None
                         else "")
                    if child.find(f".//{W}txbxContent") is None:
                        found.figures.append(alt)
                self.walk(child, found)  # a text box's paragraphs are the document's text too
            elif tag == f"{W}p":
                found.pieces.append(" ")
                self.walk(child, found)
                found.pieces.append(" ")
            else:
                self.walk(child, found)

    def table(self, node: ElementTree.Element) -> list[list[Cell]]:
        rows: list[list[Cell]] = []
        above: dict[int, Cell] = {}  # column → the cell a vertical merge continues
        for row in node.iterfind(f"{W}tr"):
            props = row.find(f"{W}trPr")
            header = props is not None and props.find(f"{W}tblHeader") is not None \
                and _val(props.find(f"{W}tblHeader"), "1") not in ("0", "false")
            column = _int(_val(props.find(f"{W}gridBefore")) if props is not None else None, 0)
            after = _int(_val(props.find(f"{W}gridAfter")) if props is not None else None, 0)
            # the grid columns a row skips before and after its cells are empty cells in HTML's grid
            cells: list[Cell] = [Cell("") for _ in range(min(column, MAX_SPAN))]
            for cell in row.iterfind(f"{W}tc"):
                cell_props = cell.find(f"{W}tcPr")
                span = max(1, _int(_val(cell_props.find(f"{W}gridSpan")) if cell_props is not None else None, 1))
                merge = cell_props.find(f"{W}vMerge") if cell_props is not None else None
                if merge is not None and _val(merge, "continue") != "restart" and column in above:
                    above[column].rowspan += 1
                    column += span
                    continue
                found = _Paragraph()
                self.walk(cell, found)
                text = clean(" ".join(["".join(found.pieces), *(f"${f}$" for f in found.formulas)]))
                entry = Cell(text, colspan=span, header=header)
                cells.append(entry)
                for covered in range(column, column + span):
                    above.pop(covered, None)
                above[column] = entry
                column += span
            rows.append(cells + [Cell("") for _ in range(min(after, MAX_SPAN))])
        return rows

    def notes(self) -> None:
        """The footnotes and endnotes the body referenced, in the order it referenced them."""
        texts: dict[str, str] = {}
        for part, kind in (("word/footnotes.xml", "footnote"), ("word/endnotes.xml", "endnote")):
            root = self.part(part)
            for note in root.iterfind(f"{W}{kind}") if root is not None else ():
                if note.get(f"{W}type") in ("separator", "continuationSeparator", "continuationNotice"):
                    continue
                found = _Paragraph()
                self.walk(note, found)
                texts[f"{kind[0]}{note.get(f'{W}id', '')}"] = "".join(found.pieces)
        for label in dict.fromkeys(self.footnotes):
            if label in texts:
                self.tree.footnote(label, texts[label])


def _script(run: ElementTree.Element) -> str | None:
    """"sub" or "sup" for a run set in sub- or superscript (a note's reference mark is written as `[^n]`)."""
    align = _val(run.find(f"{W}rPr/{W}vertAlign"))
    if align not in ("subscript", "superscript") or run.find(f"{W}footnoteReference") is not None \
            or run.find(f"{W}endnoteReference") is not None:
        return None
    return "sub" if align == "subscript" else "sup"


def archive_uses(archive: zipfile.ZipFile, style_id: str) -> bool:
    """Whether the body names the paragraph style (read as bytes: a cheap look before the parse)."""
    try:
        with archive.open("word/document.xml") as member:
            return f'w:pStyle w:val="{style_id}"'.encode() in member.read(MAX_PART_BYTES)
    except KeyError:
        return False


def read_docx(data: bytes) -> list[Element]:
    """The document's element tree. Raises `CorruptDocument` when the file is not a readable DOCX."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            reader = _Reader(archive)
            document = reader.part("word/document.xml")
            body = document.find(f"{W}body") if document is not None else None
            if body is None:
                raise CorruptDocument("the DOCX has no document body")
            reader.blocks(body)
            reader.notes()
            return reader.tree.finish()
    except (zipfile.BadZipFile, OSError, ValueError, ElementTree.ParseError, RecursionError) as exc:
        raise CorruptDocument(f"the DOCX cannot be read ({exc})") from exc
