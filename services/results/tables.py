"""Tables that run across pages, merged into one logical table at assembly (`merge_tables`, on by default).

A page's last table (nothing but a caption, footnote or furniture after it) and the next page's first table
(before it at most one heading or caption that says it goes on — "continued", "cont." — or repeats the first
part's title: any other heading starts a new section's table) are one table when they have the same number
of columns and, when both are boxed, the same left and right edges (within `EDGE_SHARE` of the page width).
The continuation's repeated header rows (the same text as the first part's header rows, or its first row the
same as the first part's first row) are dropped; every other row is kept, in order. The first part becomes
the one element: its `html` the merged table, its `parts` each page's part (`page`, `bbox`, `rows` [first, end)
of the merged rows, the part's own `source_id` and `html` as read, so the merge can be undone), its Markdown
the merged table with a `<!-- table continues from page N -->` comment before each later part's first row.
The continuation leaves its page's tree and Markdown. A table that fills a page is followed page after page.
"""

from __future__ import annotations

import re

from services.core.elements import FURNITURE, Element, ElementType, TablePart, page_markdown
from services.core.pages import PageEntry, entry_elements
from services.results.render.sanitize import Cell, Table, parse_table

EDGE_SHARE = 0.05  # left and right edges of the two parts this close (share of the page width)
_AFTER_TABLE = frozenset({ElementType.CAPTION, ElementType.FOOTNOTE}) | FURNITURE
_BEFORE_TABLE = frozenset({ElementType.CAPTION, ElementType.HEADING}) | FURNITURE
_ROW = re.compile(r"<tr>")
_CONTINUED = re.compile(r"\bcontinu|\(cont\.?\)|\bcont'd|\bfortsetzung|\bsuite\b|\bcontinuación")


def _elements(entry: PageEntry) -> list[Element]:
    return entry_elements(entry)


def _last_table(elements: list[Element]) -> int | None:
    for index in range(len(elements) - 1, -1, -1):
        if elements[index].type is ElementType.TABLE:
            return index
        if elements[index].type not in _AFTER_TABLE:
            return None
    return None


def _first_table(elements: list[Element], titles: set[str]) -> int | None:
    """The next page's first table, when nothing but furniture stands before it, or one heading or caption
    that says the table goes on ("Table 4 (continued)") or repeats the first part's own title. Any other heading
    opens a new table (a new section's table with the same columns is not a continuation)."""
    leading = 0
    for index, element in enumerate(elements):
        if element.type is ElementType.TABLE:
            return index
        if element.type in FURNITURE:
            continue
        if element.type not in _BEFORE_TABLE or leading or not _goes_on(element.text, titles):
            return None
        leading += 1
    return None


def _goes_on(text: str, titles: set[str]) -> bool:
    words = " ".join(text.lower().split())
    return bool(_CONTINUED.search(words)) or words in titles


def _title_of(elements: list[Element], index: int) -> set[str]:
    """The heading or caption right before a table (furniture aside), as `_goes_on` compares it."""
    for element in reversed(elements[:index]):
        if element.type in FURNITURE:
            continue
        return {" ".join(element.text.lower().split())} if element.type in _BEFORE_TABLE else set()
    return set()


def _texts(row: list[Cell]) -> list[str]:
    return [" ".join(cell.text.split()).lower() for cell in row]


def _same_edges(first: Element, second: Element, width: float) -> bool:
    if first.bbox is None or second.bbox is None or width <= 0:
        return True
    return abs(first.bbox[0] - second.bbox[0]) <= EDGE_SHARE * width and \
        abs(first.bbox[2] - second.bbox[2]) <= EDGE_SHARE * width


def continuation_rows(first: Table, second: Table) -> list[list[Cell]]:
    """The second part's rows without the header it repeats."""
    if second.header_rows and [_texts(r) for r in second.rows[:second.header_rows]] == \
            [_texts(r) for r in first.rows[:second.header_rows]]:
        return second.rows[second.header_rows:]
    if second.rows and first.rows and _texts(second.rows[0]) == _texts(first.rows[0]) and any(_texts(first.rows[0])):
        return second.rows[1:]
    return second.rows


def marked(html: str, parts: list[TablePart]) -> str:
    """The merged table's HTML with a comment before each later part's first row (its rows are its `<tr>`s)."""
    pieces = _ROW.split(html)
    if len(pieces) - 1 != parts[-1].rows[1]:
        return html
    starts = {part.rows[0]: part.page for part in parts[1:]}
    out = [pieces[0]]
    for index, piece in enumerate(pieces[1:]):
        if index in starts:
            out.append(f"<!-- table continues from page {starts[index]} -->")
        out.append("<tr>" + piece)
    return "".join(out)


def merge_tables(entries: list[PageEntry]) -> int:
    """Merges the tables that run across the page entries (changed in place: `elements`, `markdown`); returns
    how many continuations were merged."""
    merged = 0
    open_table: tuple[int, int, Table] | None = None  # (entry index, element index, merged table so far)
    titles: set[str] = set()  # the open table's own heading or caption
    trees = {i: _elements(e) for i, e in enumerate(entries) if e.get("status") == "succeeded"}
    consistent = {i: (entries[i].get("markdown") or "").strip() == page_markdown(tree).strip()
                  for i, tree in trees.items()}
    changed: set[int] = set()
    for index in range(len(entries)):
        tree = trees.get(index)
        if tree is None:
            open_table = None
            continue
        if open_table is not None and int(entries[index]["page_number"]) == \
                int(entries[open_table[0]]["page_number"]) + _pages_since(entries, open_table[0], index):
            start_entry, start_element, table = open_table
            head = trees[start_entry][start_element]
            position = _first_table(tree, titles)
            if position is not None:
                candidate = tree[position]
                following = parse_table(candidate.html or candidate.markdown)
                previous_part = (head.parts or [])[-1] if head.parts else None
                edge_ref = head if previous_part is None else head.model_copy(update={"bbox": previous_part.bbox})
                if following.rows and following.columns == table.columns and table.columns >= 2 and \
                        _same_edges(edge_ref, candidate, float(entries[index].get("width") or 0)):
                    rows = continuation_rows(table, following)
                    parts = list(head.parts or [TablePart(
                        page=head.page, bbox=head.bbox, rows=(0, len(table.rows)), source_id=head.id,
                        html=head.html or head.markdown)])
                    parts.append(TablePart(page=candidate.page, bbox=candidate.bbox,
                                           rows=(len(table.rows), len(table.rows) + len(rows)),
                                           source_id=candidate.id, html=candidate.html or candidate.markdown))
                    table = Table(rows=[*table.rows, *rows], header_rows=table.header_rows)
                    html = table.to_html()
                    trees[start_entry][start_element] = head.model_copy(update={
                        "html": html, "markdown": marked(html, parts), "parts": parts,
                        "text": (head.text + "\n" + candidate.text).strip()})
                    del tree[position]
                    changed.update({start_entry, index})
                    merged += 1
                    # the continuation was all this page held after its heading: the table may go on
                    open_table = (start_entry, start_element, table) if _last_table(tree) is None and \
                        all(e.type in _AFTER_TABLE | _BEFORE_TABLE for e in tree[position:]) else None
                    if open_table is not None:
                        continue
        last = _last_table(tree)
        open_table = (index, last, parse_table(tree[last].html or tree[last].markdown)) if last is not None else None
        titles = _title_of(tree, last) if last is not None else set()
    for index in changed:
        entries[index]["elements"] = [e.model_dump(mode="json") for e in trees[index]]
        if consistent[index]:
            body = page_markdown(trees[index])
            entries[index]["markdown"] = body + "\n" if body else ""
    return merged


def _pages_since(entries: list[PageEntry], start: int, index: int) -> int:
    """How many pages after the open table's page this entry should be for the table to go on here."""
    return index - start
