"""HTML from a document, made safe: an allow-list of tags and attributes, everything else escaped or dropped.

Engines write tables as HTML and models may write any HTML at all, so nothing of it reaches `document.html`
as it came. The parser rebuilds the markup from an allow-list: text is always escaped, tags outside the list
lose their markup (their text stays), the content of `script`, `style` and other active elements is dropped,
and the only attributes kept are integer `rowspan`/`colspan` and an `href` whose scheme is http(s) or mailto.
Tables come out as a `Table` (rows of cells with spans), which the HTML, LaTeX and chunk renderers share.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

INLINE_TAGS = frozenset({"b", "strong", "i", "em", "code", "sub", "sup", "br", "s", "del", "u", "mark", "small",
                         "a", "span"})
# Their content is never shown: scripts, styles, embedded documents and forms.
DROP_CONTENT = frozenset({"script", "style", "iframe", "object", "embed", "template", "noscript", "svg", "math",
                          "textarea", "select", "head", "title", "frame", "frameset", "applet"})
_VOID = frozenset({"br", "img", "hr", "input", "meta", "link", "col", "wbr", "source", "area", "base"})
_SAFE_URL = re.compile(r"^(https?:|mailto:|#)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")
MAX_SPAN = 1000

TextHook = Callable[[str], str]


def safe_href(url: str | None) -> str | None:
    """The URL when its scheme is http, https or mailto (or a fragment); None for javascript:, data: and the rest."""
    if not url:
        return None
    squeezed = _CONTROL.sub("", html.unescape(url))  # "java\tscript:" is still javascript:
    return url.strip() if _SAFE_URL.match(squeezed) else None


def _span(value: str | None) -> int:
    try:
        return max(1, min(MAX_SPAN, int((value or "1").strip())))
    except ValueError:
        return 1


@dataclass(slots=True)
class Cell:
    html: str = ""
    text: str = ""
    header: bool = False
    rowspan: int = 1
    colspan: int = 1


@dataclass(slots=True)
class Table:
    rows: list[list[Cell]] = field(default_factory=list)
    header_rows: int = 0
    caption: str = ""

    def to_html(self, rows: list[list[Cell]] | None = None) -> str:
        """The table as clean HTML (`rows`: a part of the body, printed after the header rows)."""
        def row_html(row: list[Cell]) -> str:
            out = []
            for cell in row:
                tag = "th" if cell.header else "td"
                spans = "".join(f' {name}="{value}"' for name, value in (("rowspan", cell.rowspan),
                                                                       ("colspan", cell.colspan)) if value > 1)
                out.append(f"<{tag}{spans}>{cell.html}</{tag}>")
            return "<tr>" + "".join(out) + "</tr>"

        head, body = self.rows[:self.header_rows], self.rows[self.header_rows:] if rows is None else rows
        caption = f"<caption>{self.caption}</caption>" if self.caption else ""
        thead = f"<thead>{''.join(row_html(r) for r in head)}</thead>" if head else ""
        return f"<table>{caption}{thead}<tbody>{''.join(row_html(r) for r in body)}</tbody></table>"

    @property
    def columns(self) -> int:
        return max((sum(c.colspan for c in row) for row in self.rows), default=0)


class _Sanitizer(HTMLParser):
    def __init__(self, on_text: TextHook | None) -> None:
        super().__init__(convert_charrefs=True)
        self.on_text = on_text or html.escape
        self.out: list[str] = []
        self.text: list[str] = []
        self.dropping = 0
        self.open_inline: list[str] = []
        # tables
        self.tables: list[Table] = []
        self.table_depth = 0
        self.in_thead = False
        self.cell: Cell | None = None
        self.in_caption = False

    # where text and inline markup go: the open cell, the caption, or the flowing output
    def _emit(self, markup: str, text: str = "") -> None:
        if self.table_depth and self.cell is not None:
            self.cell.html += markup
            self.cell.text += text
        elif self.table_depth and self.in_caption:
            self.tables[-1].caption += markup
        elif not self.table_depth:
            self.out.append(markup)
        self.text.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in DROP_CONTENT:
            if tag not in _VOID:
                self.dropping += 1
            return
        if self.dropping:
            return
        values = dict(attrs)
        if tag == "table":
            self.table_depth += 1
            if self.table_depth == 1:
                self.tables.append(Table())
            return
        if self.table_depth == 1:
            table = self.tables[-1]
            if tag == "thead":
                self.in_thead = True
            elif tag == "tr":
                self._close_cell()
                table.rows.append([])
            elif tag in ("td", "th"):
                self._close_cell()
                if not table.rows:
                    table.rows.append([])
                self.cell = Cell(header=tag == "th" or self.in_thead, rowspan=_span(values.get("rowspan")),
                                 colspan=_span(values.get("colspan")))
                table.rows[-1].append(self.cell)
            elif tag == "caption":
                self.in_caption = True
        if tag in ("p", "div", "li") and (self.cell is not None and self.cell.html):
            self._emit("<br>", " ")
        if tag not in INLINE_TAGS:
            return
        if tag == "br":
            self._emit("<br>", " ")
        elif tag == "a":
            href = safe_href(values.get("href"))
            self.open_inline.append("a" if href else "")
            if href:
                self._emit(f'<a href="{html.escape(href, quote=True)}" rel="noopener noreferrer nofollow">')
        elif tag == "span":
            self.open_inline.append("")
        else:
            self.open_inline.append(tag)
            self._emit(f"<{tag}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.handle_starttag(tag, attrs)
        elif tag not in _VOID:
            self.handle_starttag(tag, attrs)
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in DROP_CONTENT:
            self.dropping = max(0, self.dropping - 1)
            return
        if self.dropping:
            return
        if tag == "table":
            if self.table_depth == 1:
                self._close_cell()
                self._finish_table()
            self.table_depth = max(0, self.table_depth - 1)
            return
        if self.table_depth == 1:
            if tag == "thead":
                self.in_thead = False
            elif tag in ("td", "th", "tr"):
                self._close_cell()
            elif tag == "caption":
                self.in_caption = False
        if tag in INLINE_TAGS and tag != "br" and self.open_inline:
            opened = self.open_inline.pop()
            if opened:
                self._emit(f"</{opened}>")

    def handle_data(self, data: str) -> None:
        if not self.dropping and data:
            self._emit(self.on_text(data), data)

    def _close_cell(self) -> None:
        if self.cell is not None:
            while self.open_inline:  # an inline tag left open inside the cell is closed there
                opened = self.open_inline.pop()
                if opened:
                    self.cell.html += f"</{opened}>"
            self.cell.text = " ".join(self.cell.text.split())
        self.cell = None

    def _finish_table(self) -> None:
        table = self.tables[-1]
        table.rows = [row for row in table.rows if row]
        header = 0
        for row in table.rows:
            if row and all(cell.header for cell in row):
                header += 1
            else:
                break
        # A header cell spanning rows below pulls them into the header: head and body never share a cell.
        reach = header
        r = 0
        while r < min(reach, len(table.rows)):
            reach = max(reach, r + max((cell.rowspan for cell in table.rows[r]), default=1))
            r += 1
        table.header_rows = min(reach, len(table.rows))
        self.out.append(f"\x00table{len(self.tables) - 1}\x00")

    def close_all(self) -> None:
        self.close()
        self._close_cell()
        if self.table_depth:
            self._finish_table()
            self.table_depth = 0
        while self.open_inline:
            opened = self.open_inline.pop()
            if opened:
                self.out.append(f"</{opened}>")


def sanitize_inline(markup: str, on_text: TextHook | None = None) -> str:
    """Inline HTML, allow-listed (tables inside it are flattened out)."""
    parser = _Sanitizer(on_text)
    parser.feed(markup)
    parser.close_all()
    return re.sub(r"\x00table(\d+)\x00", lambda m: parser.tables[int(m.group(1))].to_html(), "".join(parser.out))


def parse_table(markup: str, on_text: TextHook | None = None) -> Table:
    """The first table in `markup` (an empty table when there is none); cell HTML is sanitized."""
    parser = _Sanitizer(on_text)
    parser.feed(markup)
    parser.close_all()
    return parser.tables[0] if parser.tables else Table()
