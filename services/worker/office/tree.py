"""The element tree of a document read from its own structure (DOCX, HTML, EPUB, e-mail), block by block.

The native readers say what each block is — a heading of level 2, the third item of a nested numbered list, a
table cell spanning two columns — and `TreeBuilder` makes the page model's elements of it (services/core/
elements.py), with the same Markdown the engines write: `#` headings, `-`/`1.` lists indented four spaces a
level, tables as HTML with their spans, figures as `![alt]()`, display formulas as `$$…$$`. Text is plain and
escaped where it goes into HTML, so nothing of the source's markup reaches an output. A document read this way
has no pages: every element is on page 1 with no box (see docs/office.md).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from services.core.elements import Element, ElementType, renumber

MAX_HEADING = 6
MAX_SPAN = 1000  # a colspan/rowspan past this is a hostile file's, not a table's


@dataclass(slots=True)
class Cell:
    text: str
    colspan: int = 1
    rowspan: int = 1
    header: bool = False


@dataclass(slots=True)
class _Item:
    text: str
    level: int
    ordered: bool
    number: int | None = None  # the document's own number for an ordered item, when it states one


# Sub- and superscripts are the one markup a text keeps (H<sub>2</sub>O, 10<sup>6</sup>): flattened they would
# read as other words ("H2O" may pass, "106" does not). Markdown and table HTML carry the tags; `text` does not.
_SCRIPTS = re.compile(r"</?su[bp]>")
_ESCAPED_SCRIPTS = re.compile(r"&lt;(/?su[bp])&gt;")


# Links the document states keep their target when it is an absolute web or mail address (`link`): nothing
# relative (there is no page to resolve it against), no other scheme.
_LINK = re.compile(r"\[([^\[\]]*)\]\((?:https?|mailto):[^()\s]*\)")
_SAFE_TARGET = re.compile(r"^(?:https?://|mailto:)[^\s<>\"'`]+$", re.IGNORECASE)


def link(text: str, target: str | None) -> str:
    """`[text](target)` for a safe target, else the text alone (brackets and parentheses in either quoted away)."""
    target = (target or "").strip().replace(" ", "%20")
    if not text.strip() or not _SAFE_TARGET.match(target):
        return text
    label = " ".join(text.replace("[", "(").replace("]", ")").split())
    lead, trail = text[:len(text) - len(text.lstrip())], text[len(text.rstrip()):]
    return f"{lead}[{label}]({target.replace('(', '%28').replace(')', '%29')}){trail}"


def unlinked(text: str) -> str:
    """The text with its links reduced to their words (table cells, whose HTML holds text only)."""
    return _LINK.sub(r"\1", text)


def plain(text: str) -> str:
    """The text without its links' targets and its sub- and superscript tags."""
    return _SCRIPTS.sub("", unlinked(text))


def clean(text: str) -> str:
    """Runs of whitespace (tabs, line breaks, non-breaking spaces) as one space, the ends trimmed."""
    return " ".join(text.split())


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def table_html(rows: list[list[Cell]]) -> str:
    """The table as HTML: header cells as `th`, spans kept (clamped), every text escaped."""
    body = []
    for row in rows:
        cells = []
        for cell in row:
            tag = "th" if cell.header else "td"
            spans = "".join(f' {name}="{min(value, MAX_SPAN)}"' for name, value in
                            (("colspan", cell.colspan), ("rowspan", cell.rowspan)) if value > 1)
            text = _ESCAPED_SCRIPTS.sub(r"<\1>", html.escape(unlinked(cell.text)))
            cells.append(f"<{tag}{spans}>{text}</{tag}>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return "<table>" + "".join(body) + "</table>"


@dataclass(slots=True)
class TreeBuilder:
    """Blocks in reading order in, elements out; consecutive list items make one list element."""

    elements: list[Element] = field(default_factory=list)
    _items: list[_Item] = field(default_factory=list)

    def _add(self, kind: ElementType, text: str, markdown: str, **extra: object) -> None:
        self.end_list()
        self.elements.append(Element.model_validate({
            "id": "", "type": kind, "page": 1, "bbox": None, "text": plain(text), "markdown": markdown, **extra}))

    def heading(self, text: str, level: int) -> None:
        text = clean(text)
        if not text:
            return
        level = max(1, min(MAX_HEADING, level))
        first = not any(e.type in (ElementType.TITLE, ElementType.HEADING) for e in self.elements)
        kind = ElementType.TITLE if level == 1 and first else ElementType.HEADING
        self._add(kind, text, f"{'#' * level} {text}", level=level)

    def paragraph(self, text: str) -> None:
        text = clean(text)
        if text:
            self._add(ElementType.PARAGRAPH, text, text)

    def code(self, text: str) -> None:
        text = text.strip("\n")
        if text.strip():
            fence = "`" * max(3, _longest_backticks(text) + 1)
            self._add(ElementType.CODE, text, f"{fence}\n{text}\n{fence}")

    def footnote(self, label: str, text: str) -> None:
        text = clean(text)
        if text:
            self._add(ElementType.FOOTNOTE, text, f"[^{label}]: {text}")

    def formula(self, latex: str) -> None:
        latex = latex.strip()
        if latex:
            self._add(ElementType.FORMULA, latex, f"$${latex}$$", latex=latex)

    def figure(self, alt: str) -> None:
        alt = clean(alt).replace("[", "(").replace("]", ")")
        self._add(ElementType.FIGURE, alt, f"![{alt}]()")

    def caption(self, text: str) -> None:
        text = clean(text)
        if text:
            self._add(ElementType.CAPTION, text, text)

    def table(self, rows: list[list[Cell]]) -> None:
        rows = [row for row in rows if row]
        if not rows:
            return
        markup = table_html(rows)
        text = "\n".join(" ".join(plain(cell.text) for cell in row if cell.text) for row in rows)
        self._add(ElementType.TABLE, text, markup, html=markup)

    def list_item(self, text: str, level: int, *, ordered: bool, number: int | None = None) -> None:
        text = clean(text)
        if text:
            self._items.append(_Item(text, max(0, min(level, 8)), ordered, number))

    def end_list(self) -> None:
        """Closes the open list (the next item starts a new one)."""
        if not self._items:
            return
        items, self._items = self._items, []
        lines: list[str] = []
        counters: dict[int, int] = {}  # the number each level's last ordered item got
        open_levels: list[int] = []  # the document's levels of the items this one may sit under
        for item in items:
            # depth is how many open items it sits under, never a gap: Markdown reads a list opening indented
            # as code, and a level the document skipped as a code block too
            while open_levels and open_levels[-1] >= item.level:
                open_levels.pop()
            open_levels.append(item.level)
            item.level = len(open_levels) - 1
            counters = {lvl: n for lvl, n in counters.items() if lvl <= item.level}
            counters[item.level] = item.number if item.number is not None else counters.get(item.level, 0) + 1
            mark = f"{counters[item.level]}." if item.ordered else "-"
            lines.append(f"{'    ' * item.level}{mark} {item.text}")
        self.elements.append(Element(
            id="", type=ElementType.LIST, page=1, bbox=None, text="\n".join(plain(i.text) for i in items),
            markdown="\n".join(lines), items=[i.text for i in items], ordered=items[0].ordered))

    def finish(self) -> list[Element]:
        self.end_list()
        return renumber(self.elements, 1)
