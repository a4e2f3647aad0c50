"""Rows of text segments (text-layer runs or OCR boxes) to a table grid.

Columns come from the white gaps that (nearly) every row leaves; a cell wrapped over several lines is joined
again; a header centred over several columns spans them; the stub head, section rows and grouped row labels get
their spans. The same code serves text layers and OCR boxes, so it only looks at geometry and text shape.
"""

from __future__ import annotations

import html
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.bidi import reading_order
from services.worker.engines.cpu.cells import Cell, Grid
from services.worker.engines.cpu.headers import (
    by_row,
    join_wrapped_heads,
    raise_under_groups,
    stub_head,
    widen_group_headers,
)
from services.worker.engines.cpu.model import Box, Line, Word, union_all

_NUMERIC = re.compile(r"^[\s$€£¥%()+\-–—−.,:/*\d<>≤≥±x×~]+$")
_MAGNITUDE = re.compile(r"(?<=\d)(?:[kKMB]|bn|mn)(?=[\s)*]|$)")
# A word gap this many line heights wide may be a column boundary the text layer did not split at.
_WIDE_GAP = 0.8
_YEAR = re.compile(r"(19|20)\d\d")
_ENUMERATOR = re.compile(r"^(?:\(?\d{1,3}[.)]?|[•◦▪●○■□►‣⁃∙·\-–—*]|\(?[a-z][.)])\s")
_OPEN_ENDING = re.compile(r"(?:[-‐,/(&+]|\b(?:and|or|of|the|to|in|for|with|on|by|at|a|an|et|de|du|des|und|der)"
                          r")$", re.IGNORECASE)


def grid_html(grid: Grid) -> str:
    """The grid as one <table>; positions covered by no cell become empty cells so every row is full."""
    covered: set[tuple[int, int]] = set()
    by_origin: dict[tuple[int, int], Cell] = {}
    for cell in grid.cells:
        by_origin[(cell.row, cell.col)] = cell
        for r in range(cell.row, cell.row + cell.rowspan):
            for c in range(cell.col, cell.col + cell.colspan):
                covered.add((r, c))
    rows_html: list[str] = []
    for r in range(grid.rows):
        cells_html: list[str] = []
        for c in range(grid.cols):
            origin = by_origin.get((r, c))
            if origin is None:
                if (r, c) not in covered:
                    cells_html.append("<td></td>")
                continue
            attrs = (f' rowspan="{origin.rowspan}"' if origin.rowspan > 1 else "") + (
                f' colspan="{origin.colspan}"' if origin.colspan > 1 else "")
            cells_html.append(f"<td{attrs}>{html.escape(origin.text, quote=False)}</td>")
        rows_html.append("<tr>" + "".join(cells_html) + "</tr>")
    head = rows_html[: grid.header_rows]
    body = rows_html[grid.header_rows:]
    parts = ["<table>"]
    if head:
        parts.append("<thead>" + "".join(head) + "</thead>")
    parts.append("<tbody>" + "".join(body) + "</tbody>")
    parts.append("</table>")
    return "".join(parts)


def is_numeric(text: str) -> bool:
    """A figure: digits with signs, currency, separators and brackets, perhaps with a magnitude ("$1.1M", "3bn")."""
    text = _MAGNITUDE.sub("", text)
    return bool(text) and bool(_NUMERIC.match(text)) and any(ch.isdigit() for ch in text)


def _is_figure(text: str) -> bool:
    return is_numeric(text) or bool(re.fullmatch(r"[*†‡§#\-–—.]+|n/?a|NS|ns", text))


@dataclass(slots=True)
class TextRow:
    """Lines sharing a baseline band, left to right."""

    lines: list[Line]
    box: Box

    @property
    def count(self) -> int:
        return len(self.lines)


def text_rows(lines: list[Line]) -> list[TextRow]:
    rows: list[TextRow] = []
    for line in sorted(lines, key=lambda item: item.box.cy):
        for row in reversed(rows[-tuning.ROW_LOOKBACK:]):
            if line.box.y_overlap(row.box) >= tuning.ROW_MIN_Y_OVERLAP * min(line.box.height, row.box.height):
                row.lines.append(line)
                row.box = row.box.union(line.box)
                break
        else:
            rows.append(TextRow([line], line.box))
    for row in rows:
        row.lines.sort(key=lambda item: item.box.x0)
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Columns


def column_bands(rows: list[TextRow]) -> list[tuple[float, float]]:
    """x-bands holding text in more body rows than a stray long label could explain.

    A gap counts as a column boundary when at most `allowed` body rows put text across it; text lying only in such
    gaps (a column only headers or a few rows fill) makes a band of its own.
    """
    left = min(row.box.x0 for row in rows)
    right = max(row.box.x1 for row in rows)
    table_width = max(1.0, right - left)
    # Rows with figures are the body: headers, which often straddle gaps, get placed on the body's columns.
    basis = [row for row in rows if any(is_numeric(line.text) for line in row.lines)]
    if len(basis) < tuning.GRID_MIN_NUMERIC_ROWS:
        basis = rows
    # e.g. the "Average" or "Total" rows under a table, whose labels run wide
    allowed = len(basis) // tuning.GRID_WIDE_ROW_SHARE
    events: list[tuple[float, int]] = []
    for row in basis:
        if row.count == 1 and row.box.width > 0.5 * table_width:
            continue  # a title, section or note row across the table says nothing about columns
        pieces = [piece for line in row.lines for piece in _cut(line, _column_gap)]
        for start, stop in _merged([(piece.box.x0, piece.box.x1) for piece in pieces]):
            events += [(start, 1), (stop, -1)]
    events.sort(key=lambda event: (event[0], -event[1]))
    strong: list[tuple[float, float]] = []
    depth = 0
    opened = 0.0
    for x, step in events:
        before = depth
        depth += step
        if before <= allowed < depth:
            opened = x
        elif depth <= allowed < before:
            strong.append((opened, x))
    bands = _merged(strong, tolerance=0.5)
    # Text in no band at all that lines up over several rows (a column only headers or a few rows fill) adds a
    # band of its own; a lone stray segment goes to the nearest column instead.
    loose: list[tuple[float, float, int]] = []
    for index, row in enumerate(rows):
        for line in row.lines:
            if any(ch.isalnum() for ch in line.text) and not any(
                    min(b, line.box.x1) - max(a, line.box.x0) > 0 for a, b in bands):
                loose.append((line.box.x0, line.box.x1, index))
    extra: list[tuple[float, float, set[int]]] = []
    for start, stop, index in sorted(loose):
        if extra and start <= extra[-1][1] + 1.0:
            extra[-1] = (extra[-1][0], max(extra[-1][1], stop), extra[-1][2] | {index})
        else:
            extra.append((start, stop, {index}))
    return sorted(bands + [(start, stop) for start, stop, members in extra if len(members) >= 2 or not bands])


def _merged(spans: list[tuple[float, float]], tolerance: float = 1.0) -> list[tuple[float, float]]:
    bands: list[tuple[float, float]] = []
    for start, stop in sorted(spans):
        if bands and start <= bands[-1][1] + tolerance:
            bands[-1] = (bands[-1][0], max(bands[-1][1], stop))
        else:
            bands.append((start, stop))
    return bands


def span_of(columns: list[tuple[float, float]], x0: float, x1: float) -> tuple[int, int]:
    """The first and last column a segment covers; a segment in a gap goes to the nearest column."""
    hit = [i for i, (a, b) in enumerate(columns)
           if min(b, x1) - max(a, x0) > tuning.SPAN_MIN_OVERLAP * min(b - a, x1 - x0)]
    if hit:
        return hit[0], hit[-1]
    centre = (x0 + x1) / 2
    nearest = min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - centre))
    return nearest, nearest


def _column_gap(left: Word, right: Word, height: float) -> bool:
    """A word gap that may separate two columns: a wide one, or a clear space between two figures (the text layer
    joins close columns of figures into one run; a thousands space is narrower)."""
    gap = right.box.x0 - left.box.x1
    return gap > _WIDE_GAP * height or (gap > tuning.FIGURE_GAP * height and is_numeric(left.text)
                                        and is_numeric(right.text))


def _cut(line: Line, at_gap: Callable[[Word, Word, float], bool]) -> list[Line]:
    """The line cut into pieces at the word gaps `at_gap(left_word, right_word, line_height)` accepts (an RTL
    line, whose words are in reading order, is cut along the page and each piece put back in reading order)."""
    words_on_page = sorted(line.words, key=lambda w: w.box.x0) if line.rtl else line.words
    pieces: list[list[Word]] = [[words_on_page[0]]] if words_on_page else []
    for word in words_on_page[1:]:
        if at_gap(pieces[-1][-1], word, line.box.height):
            pieces.append([word])
        else:
            pieces[-1].append(word)
    if len(pieces) <= 1:
        return [line]
    if line.rtl:
        pieces = [reading_order(words) for words in pieces]
    return [Line(words, union_all([w.box for w in words]), rtl=line.rtl, score=line.score) for words in pieces]


def _split_at_gutters(lines: list[Line], columns: list[tuple[float, float]], header: bool = False) -> list[Line]:
    """A segment running across a column boundary is cut where a wide word gap of it lies in the gutter (the text
    layer keeps "22 Easy" together where "1 Easy" was split), then figures still crossing a boundary (OCR joins
    close numbers into one box) are cut by where each figure sits. In a `header` row (no figures) a narrower gap
    is enough when it is clearly wider than the segment's own word spaces: two column heads set close together
    ("Number Margin of") are one run of the text layer."""
    gutters = [(columns[i][1], columns[i + 1][0]) for i in range(len(columns) - 1)]
    out: list[Line] = []
    for line in lines:
        first, last = span_of(columns, line.box.x0, line.box.x1)
        if last == first:
            out.append(line)
            continue
        out.extend(_cut(line, _gap_in(gutters[first:last], _header_gap(line) if header else None)))
    return _split_numeric_runs(out, columns)


def _header_gap(line: Line) -> float:
    """The least word gap (in line heights) that separates two column heads within one header segment: wider than
    `HEADER_CELL_GAP` and than `HEADER_GAP_OVER_SPACE` of its narrowest; a segment of two words keeps the wide gap."""
    height = max(line.box.height, 1e-6)
    words = sorted(line.words, key=lambda w: w.box.x0)
    gaps = [right.box.x0 - left.box.x1 for left, right in zip(words, words[1:], strict=False)]
    if len(gaps) < 2:
        return _WIDE_GAP  # no word space of its own to compare with ("Mexican American" may head two columns)
    return max(tuning.HEADER_CELL_GAP, tuning.HEADER_GAP_OVER_SPACE * min(gaps) / height)


def _gap_in(gutters: list[tuple[float, float]], least: float | None = None) -> Callable[[Word, Word, float], bool]:
    """Accepts a word gap lying in one of the gutters, wider than `least` line heights (default: a wide gap)."""
    threshold = _WIDE_GAP if least is None else min(_WIDE_GAP, least)

    def accepts(left: Word, right: Word, height: float) -> bool:
        start, stop = left.box.x1, right.box.x0
        return threshold * height < stop - start and any(start < g1 and stop > g0 for g0, g1 in gutters)
    return accepts


def _split_numeric_runs(lines: list[Line], columns: list[tuple[float, float]]) -> list[Line]:
    out: list[Line] = []
    for line in lines:
        first, last = span_of(columns, line.box.x0, line.box.x1)
        if last == first or len(line.words) < 2 or not all(_is_figure(w.text) for w in line.words):
            out.append(line)
            continue
        pieces: dict[int, list[Word]] = {}
        for word in line.words:
            band = span_of(columns, word.box.cx, word.box.cx + 0.01)[0]
            pieces.setdefault(band, []).append(word)
        for band in sorted(pieces):
            words = pieces[band]
            out.append(Line(words, union_all([w.box for w in words]), score=line.score))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Rows: text rows placed into columns, then text rows that continue a row joined to it


@dataclass(slots=True)
class _Piece:
    first: int
    last: int
    text: str
    left: float
    right: float


def _place(row: TextRow, columns: list[tuple[float, float]]) -> dict[int, _Piece]:
    placed: dict[int, _Piece] = {}
    header = not any(is_numeric(line.text) for line in row.lines)
    for line in _split_at_gutters(row.lines, columns, header):
        first, last = span_of(columns, line.box.x0, line.box.x1)
        previous = next((p for p in placed.values() if p.first <= last and first <= p.last), None)
        if previous is not None:
            # Two segments in one column: one cell, read left to right (right to left in RTL text).
            del placed[previous.first]
            text = f"{line.text} {previous.text}" if line.rtl else f"{previous.text} {line.text}"
            previous = _Piece(min(previous.first, first), max(previous.last, last), text, previous.left, line.box.x1)
            placed[previous.first] = previous
            continue
        placed[first] = _Piece(first, last, line.text, line.box.x0, line.box.x1)
    return placed


def _continues(upper: str, lower: str) -> bool:
    """Does `lower` read as the next line of the cell text `upper` (not a new entry)?"""
    if is_numeric(upper) or is_numeric(lower) or _ENUMERATOR.match(lower):
        return False
    # A parenthesis opening the next line is more of the cell: an abbreviation, a unit ("(FedRAMP)", "(in %)").
    return lower[:1].islower() or lower.startswith("(") or bool(_OPEN_ENDING.search(upper.rstrip()))


def _joins(row: dict[int, _Piece], lower: dict[int, _Piece], tight: bool = False) -> bool:
    """Is the text row `lower` more lines of the logical row `row` rather than a row of its own?

    Yes when it continues the text of cells it shares with the row (and shares at least one), or when it brings
    the figures of a row whose label alone sat above them (a label centred on wrapped figures). A `tight` row,
    set at a fraction of the table's row pitch, continues any words above it, capitalised or not.
    """
    shared = False
    for below in lower.values():
        over = [p for p in row.values() if p.first <= below.last and below.first <= p.last]
        if not over:
            continue
        if len(over) > 1 or (over[0].first, over[0].last) != (below.first, below.last):
            return False  # a header over several columns, with the columns' own headers below it
        if tight and not (is_numeric(over[0].text) or is_numeric(below.text)):
            pass
        elif not _continues(over[0].text, below.text):
            return False
        shared = True
    if shared:
        return True
    label_only = list(row) == [0] and not is_numeric(row[0].text)
    return label_only and 0 not in lower and any(is_numeric(p.text) for p in lower.values())


def _logical_rows(rows: list[TextRow], placed: list[dict[int, _Piece]]) -> list[dict[int, _Piece]]:
    pitches = [rows[i].box.cy - rows[i - 1].box.cy for i in range(1, len(rows))]
    typical = statistics.median(pitches) if pitches else 0.0
    out: list[dict[int, _Piece]] = []
    for index, pieces in enumerate(placed):
        pitch = rows[index].box.cy - rows[index - 1].box.cy if index > 0 else 0.0
        tight = pitch < tuning.CELL_LINE_PITCH * typical
        if out and index > 0 and pitch <= tuning.ROW_JOIN_PITCH * typical and _joins(out[-1], pieces, tight):
            for col, piece in pieces.items():
                if col in out[-1]:
                    above = out[-1][col]
                    # A word broken at a hyphen is joined again; before a capital the hyphen is a compound's
                    # ("Non-" over "Hispanic") and stays.
                    hyphen = above.text.endswith(("-", "‐")) and piece.text[:1].isalpha()
                    joiner = "" if hyphen else " "
                    text = above.text[:-1] if hyphen and piece.text[:1].islower() else above.text
                    out[-1][col] = _Piece(above.first, above.last, f"{text}{joiner}{piece.text}",
                                          min(above.left, piece.left), max(above.right, piece.right))
                else:
                    out[-1][col] = piece
            continue
        out.append(dict(pieces))
    return out


# ---------------------------------------------------------------------------------------------------------------
# The grid and its spans


def build_grid(rows: list[TextRow]) -> Grid | None:
    """Columns from the gaps the rows leave; cells wrapped over lines joined; spans from the headers' geometry."""
    if not rows:
        return None
    columns = column_bands(rows)
    if len(columns) < 2:
        return None
    logical = _logical_rows(rows, [_place(row, columns) for row in rows])
    grid = Grid(rows=len(logical), cols=len(columns))
    for r, pieces in enumerate(logical):
        for piece in sorted(pieces.values(), key=lambda p: p.first):
            grid.cells.append(Cell(r, piece.first, piece.text.strip(), colspan=piece.last - piece.first + 1,
                                   left=piece.left, right=piece.right))
    grid.header_rows = header_rows(grid)
    if unfold(grid):
        columns = columns[: grid.cols]
    widen_group_headers(grid, columns)
    join_wrapped_heads(grid, _continues)
    raise_under_groups(grid)
    stub_head(grid)
    section_rows(grid)
    grouped_row_labels(grid)
    return grid


def unfold(grid: Grid) -> bool:
    """A long table set in side-by-side copies ("Age | Total", "Age | Total", ...) is one table: when the whole
    header, stub head included, repeats in column groups and no body cell crosses from one group into the next,
    the groups are stacked one under the other. Says whether it did."""
    if grid.header_rows < 1 or grid.cols < 4:
        return False
    header = [c for c in grid.cells if c.row < grid.header_rows]
    if any(c.colspan > 1 for c in header):
        return False
    texts = {(c.row, c.col): c.text for c in header}
    for copies in range(2, grid.cols // 2 + 1):
        width = grid.cols // copies
        if grid.cols % copies or not texts.get((0, 0)):
            continue
        if all(texts.get((r, c), "") == texts.get((r, c % width), "") for r in range(grid.header_rows)
               for c in range(grid.cols)):
            break
    else:
        return False
    body = [c for c in grid.cells if c.row >= grid.header_rows]
    if any(c.col // width != (c.col + c.colspan - 1) // width for c in body):
        return False
    cells = [c for c in header if c.col < width]
    row = grid.header_rows
    for group in range(copies):
        for source in range(grid.header_rows, grid.rows):
            members = [c for c in body if c.row == source and c.col // width == group]
            if not any(c.text for c in members):
                continue
            for cell in members:
                cell.row, cell.col = row, cell.col - group * width
                cells.append(cell)
            row += 1
    grid.cells, grid.rows, grid.cols = cells, row, width
    return True


def header_rows(grid: Grid) -> int:
    """Leading rows with no figures in their data columns (years allowed), or only a few among words, are headers."""
    rows_of = by_row(grid)
    has_numbers = any(is_numeric(c.text) for c in grid.cells if c.col > 0)
    if not has_numbers:
        return 1 if grid.rows > 2 else 0
    header = 0
    for r in range(min(grid.rows - 1, tuning.HEADER_MAX_ROWS)):
        cells = [c for c in rows_of.get(r, []) if c.col > 0 and c.text]
        figures = sum(1 for c in cells if is_numeric(c.text) and not _YEAR.fullmatch(c.text.strip()))
        # Column heads may hold a few figures among words (age bands "15-24" beside "Female", "Male").
        if figures and figures * tuning.HEADER_FIGURE_SHARE >= len(cells):
            break
        header = r + 1
    # A label alone in the first column right above the figures opens the body's first section.
    while header > 0 and all(c.col == 0 for c in rows_of.get(header - 1, [])):
        header -= 1
    return header


def section_rows(grid: Grid) -> None:
    """A body row holding only a label in the first column heads a section: it spans the table's width."""
    if grid.cols < tuning.SECTION_MIN_COLS:
        return
    for r, cells in by_row(grid).items():
        if r < grid.header_rows or len(cells) != 1:
            continue
        cell = cells[0]
        if cell.col == 0 and cell.rowspan == 1 and cell.text and not is_numeric(cell.text):
            cell.colspan = grid.cols


def grouped_row_labels(grid: Grid) -> None:
    """A first-column label followed by rows whose first column is empty while a second-level label fills the
    second column heads all those rows (a rowspan), as in "DHS WI" over "CDR-RS", "CDR", "RS"."""
    rows_of = by_row(grid)
    lookup = {(c.row, c.col): c for c in grid.cells}
    r = grid.header_rows
    while r < grid.rows:
        label = lookup.get((r, 0))
        second = lookup.get((r, 1))
        if label is None or label.colspan > 1 or not label.text or second is None or is_numeric(second.text):
            r += 1
            continue
        end = r + 1
        while end < grid.rows and (end, 0) not in lookup and not any(
                c.col == 0 for c in rows_of.get(end, [])):
            below = lookup.get((end, 1))
            if below is None or is_numeric(below.text) or below.colspan > 1:
                break
            end += 1
        if end - r >= 2:
            label.rowspan = end - r
        r = end
