"""Tables from geometry: table regions found among the page's lines, and grids from ruling lines (lattice
tables) or from text alignment (`grid.build_grid`), rendered as HTML <table>s with colspan/rowspan. The same
code serves text layers and OCR boxes.

A drawn grid is trusted only when it is consistent with the text in it: rules that draw columns but not rows
(several rows of figures in one drawn row) leave the table to the text finder, which reads its rows from the
baselines; a grid whose rows go on past its edges yields to the wider table the text finder reads around it; a
boxed caption or note is no row of it."""

from __future__ import annotations

import re

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.bidi import cell_text
from services.worker.engines.cpu.cells import Cell, Grid
from services.worker.engines.cpu.grid import (
    TextRow,
    build_grid,
    grid_html,
    header_rows,
    is_numeric,
    text_rows,
)
from services.worker.engines.cpu.model import Block, BlockKind, Box, Line, Segment, Word, union_all
from services.worker.engines.cpu.outside import open_cells, widen_over_labels, widen_to_rules

__all__ = ["Cell", "Grid", "find_ruled_tables", "find_tables", "grid_html"]

_NOTE_KEY = re.compile(r"^(?:(?:n\.?b|notes?|sources?)\s*[:.]|\(?[*†‡§:]+\)?)(?:\s|$)", re.IGNORECASE)
_BRACKETED = re.compile(r"^\s*(?:\([^()]*\)|\[[^\[\]]*\])\s*$")
_CAPTION = re.compile(r"^(table|tab\.|figure|fig\.|chart|exhibit|source|note)\s*[\dIVX:.]", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------------------------
# Finding table regions among lines


def find_tables(lines: list[Line], rules: list[Segment], width: float, size: float,
                min_rows: int = tuning.TABLE_MIN_ROWS) -> tuple[list[Block], list[Line]]:
    """Table blocks found among the lines, and the lines left over for the text flow."""
    ruled, lines, partial = _ruled_tables(lines, rules)
    tables, rest = _text_tables(lines, size, min_rows)
    # A drawn grid that is only part of a table yields to the table the text finder reads around it; where the
    # text finder reads none, the drawn grid is the best reading there is.
    for block in partial:
        if not any(block.box.x_overlap(t.box) > 0 and block.box.y_overlap(t.box) > 0 for t in tables):
            taken = {id(line) for line in block.lines}
            tables.append(block)
            rest = [line for line in rest if id(line) not in taken]
    return ruled + tables, rest


def _text_tables(lines: list[Line], size: float, min_rows: int) -> tuple[list[Block], list[Line]]:
    """Tables found from the alignment of the lines alone (no rules), and the lines left over."""
    rows = text_rows(lines)
    if not rows:
        return [], lines
    text_width = max(1.0, max(r.box.x1 for r in rows) - min(r.box.x0 for r in rows))
    table_like = [_row_is_tabular(row, text_width) for row in rows]
    tables: list[Block] = []
    used: set[int] = set()
    index = 0
    while index < len(rows):
        if not table_like[index]:
            index += 1
            continue
        end = index + 1
        loose = 0  # single-segment rows at the end so far, which may be text after the table
        while end < len(rows):
            gap = rows[end].box.y0 - rows[end - 1].box.y1
            if gap > tuning.TABLE_MAX_ROW_GAP * max(size, rows[end - 1].box.height):
                break
            if table_like[end]:
                loose = 0
            elif loose == 0 and _wraps_cell(rows[end], rows[end - 1]):
                pass  # the next line of a cell's text belongs to the table wherever it stands
            else:
                if (not _can_sit_in_table(rows[end], rows[index:end], text_width)
                        or loose == tuning.TABLE_MAX_LOOSE_ROWS):
                    break
                loose += 1
            end += 1
        stop = end - loose  # a table does not end on loose single lines
        while stop - index > 1 and _is_note(rows[stop - 1]):
            stop -= 1  # nor on the notes under it ("NB: ...", "(:) Not available.")
        start = _extend_header(rows, index, stop, table_like, text_width, size)
        region = rows[start:stop]
        if sum(1 for i in range(start, stop) if table_like[i]) >= min_rows and not _is_prose(region):
            grid = build_grid(region)
            if grid is not None and grid.cols >= 2:
                region_lines = [line for row in region for line in row.lines]
                block = Block(region_lines, union_all([line.box for line in region_lines]), BlockKind.TABLE,
                              html=grid_html(grid))
                tables.append(block)
                used.update(id(line) for line in region_lines)
                index = stop
                continue
        index = max(index + 1, stop)
    rest = [line for line in lines if id(line) not in used]
    return tables, rest


def _is_note(row: TextRow) -> bool:
    """A note under a table: a key ("NB:", "Source:", "(:)", "*") and its explanation, without figures."""
    if row.count > 2 or any(is_numeric(line.text) for line in row.lines):
        return False
    return bool(_NOTE_KEY.match(row.lines[0].text.strip()))


def _row_is_tabular(row: TextRow, text_width: float) -> bool:
    if row.count < 2:
        return False
    if row.count == 2 and _CAPTION.match(row.lines[0].text) and not is_numeric(row.lines[1].text):
        return False  # a caption with its number set apart ("Table 16." and its title)
    wordy = sum(1 for line in row.lines if len(line.words) >= tuning.TABLE_WORDY_SEGMENT)
    if wordy * 2 > row.count:
        return False  # side-by-side prose (columns, sidebars), not cells
    widths = sorted(line.box.width for line in row.lines)
    if row.count == 2:
        # Two prose columns side by side are not a table row: one of the two parts must be short.
        return widths[0] < tuning.TABLE_TWO_PART_SHORT * text_width
    return widths[len(widths) // 2] < tuning.TABLE_MEDIAN_SEGMENT * text_width


def _is_prose(region: list[TextRow]) -> bool:
    """Columns of running text (a magazine page read by OCR) rather than cells: most segments are many words."""
    words = [len(line.words) for row in region for line in row.lines]
    return sum(1 for count in words if count >= tuning.PROSE_SEGMENT_WORDS) > tuning.PROSE_SHARE * len(words)


def _wraps_cell(row: TextRow, above: TextRow) -> bool:
    """A lone line right under a row, starting inside one of its segments and in lower case: a wrapped cell."""
    line = row.lines[0]
    if row.count != 1 or not line.text[:1].islower():
        return False
    if row.box.y0 - above.box.y1 > tuning.CELL_WRAP_MAX_GAP * min(row.box.height, above.box.height):
        return False
    return any(segment.box.x0 - tuning.CELL_WRAP_INDENT * line.box.height <= line.box.x0 <= segment.box.x1
               for segment in above.lines)


def _can_sit_in_table(row: TextRow, above: list[TextRow], text_width: float) -> bool:
    """A one-segment row inside a table (a section label, a wrapped cell) is short and not prose, or it is a
    long label of the first column: flush with the table's rows and ending before their second segments start."""
    line = row.lines[0]
    if len(line.text) >= tuning.LOOSE_ROW_MAX_CHARS:
        return False
    if line.box.width < tuning.LOOSE_ROW_MAX_WIDTH * text_width:
        return True
    tabular = [r for r in above if r.count >= 2]
    if len(tabular) < 2:
        return False
    slack = tuning.CAPTION_EDGE_SLACK * line.box.height
    return all(abs(r.lines[0].box.x0 - line.box.x0) <= slack and line.box.x1 < r.lines[1].box.x0 for r in tabular)


def _extend_header(rows: list[TextRow], start: int, stop: int, table_like: list[bool], text_width: float,
                   size: float) -> int:
    """Up to two short rows right above the first tabular row (of the table's rows `start` to `stop`) are its
    column headers."""
    begin = start
    for _ in range(tuning.HEADER_MAX_ROWS_ABOVE):
        if begin == 0:
            break
        candidate = rows[begin - 1]
        gap = rows[begin].box.y0 - candidate.box.y1
        if gap > tuning.HEADER_MAX_GAP * max(size, candidate.box.height) or table_like[begin - 1]:
            break
        if candidate.count == 1 and candidate.lines[0].box.width >= tuning.HEADER_MAX_WIDTH * text_width:
            break
        if candidate.count == 1 and candidate.lines[0].text.rstrip().endswith((".", ":")):
            break
        if _CAPTION.match(candidate.lines[0].text):
            break
        if candidate.count == 1 and _BRACKETED.match(candidate.lines[0].text) and not _over_stub(
                candidate, rows[begin:stop]):
            break  # the table's unit ("[In thousands]", "(%)"), not a column head; over the stub, its head
        if candidate.count == 1 and _set_apart(candidate, rows[begin:stop]):
            break
        if candidate.count == 1 and begin >= 2 and _continues_caption(rows[begin - 2], candidate):
            break
        begin -= 1
    return begin


def _over_stub(candidate: TextRow, below: list[TextRow]) -> bool:
    """Does a one-segment row lie over the first column of the rows below (where the stub head stands)?"""
    firsts = [row.lines[0].box for row in below if row.count >= 2]
    return bool(firsts) and candidate.box.x1 <= min(row.lines[1].box.x0 for row in below if row.count >= 2) \
        and candidate.box.x0 <= max(box.x1 for box in firsts)


def _continues_caption(caption: TextRow, candidate: TextRow) -> bool:
    """Is a one-segment row the next line of a caption right above it ("Table 2: Persons employed by sector and"
    over "gender (in %)"; "Table 16." set apart from its title): closer to it than a line's height and starting
    within its title (or flush with it)?"""
    if caption.count > 2 or not _CAPTION.match(caption.lines[0].text):
        return False
    line = caption.lines[-1]
    gap = candidate.box.y0 - caption.box.y1
    slack = tuning.CAPTION_EDGE_SLACK * line.box.height
    return gap < tuning.CAPTION_WRAP_GAP * line.box.height and line.box.x0 - slack <= candidate.box.x0 < line.box.x1


def _set_apart(candidate: TextRow, below: list[TextRow]) -> bool:
    """Is a one-segment row above a table (the rows `below`) a note on it ("(Numbers in thousands)") rather than
    a header: flush with the table's left or right edge and further above the row under it than that row is
    above the next?"""
    if len(below) < 2:
        return False
    line = candidate.lines[0]
    left = min(row.box.x0 for row in below)
    right = max(row.box.x1 for row in below)
    slack = tuning.CAPTION_EDGE_SLACK * line.box.height
    if abs(line.box.x0 - left) > slack and abs(line.box.x1 - right) > slack:
        return False  # centred over some columns: a group header
    gap = below[0].box.y0 - candidate.box.y1
    pitch_gap = max(below[1].box.y0 - below[0].box.y1, tuning.CAPTION_MIN_ROW_GAP * line.box.height)
    return gap > tuning.CAPTION_GAP_OVER_HEADER * pitch_gap


# ---------------------------------------------------------------------------------------------------------------
# Ruled (lattice) tables: the drawn lines give the grid, missing borders give the spans


def _clusters(values: list[float], tolerance: float) -> list[float]:
    out: list[list[float]] = []
    for value in sorted(values):
        if out and value - out[-1][-1] <= tolerance:
            out[-1].append(value)
        else:
            out.append([value])
    return [sum(group) / len(group) for group in out]


def _merge_collinear(segments: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """(position, start, stop) segments on one line that touch become one. Segments a fraction of a point apart
    may sort on either side of a rounding boundary, so a segment is merged only with one it really touches."""
    merged: list[tuple[float, float, float]] = []
    for pos, start, stop in sorted(segments, key=lambda s: (round(s[0]), s[1])):
        if (merged and abs(merged[-1][0] - pos) <= tuning.RULE_MERGE_OFFSET
                and start <= merged[-1][2] + tuning.RULE_MERGE_GAP and stop >= merged[-1][1] - tuning.RULE_MERGE_GAP):
            last = merged[-1]
            merged[-1] = (last[0], min(last[1], start), max(last[2], stop))
        else:
            merged.append((pos, start, stop))
    return merged


def find_ruled_tables(lines: list[Line], rules: list[Segment]) -> tuple[list[Block], list[Line]]:
    """Tables whose cells are drawn: horizontal and vertical rules that cross each other form a grid."""
    blocks, rest, _ = _ruled_tables(lines, rules)
    return blocks, rest


def _ruled_tables(lines: list[Line], rules: list[Segment]) -> tuple[list[Block], list[Line], list[Block]]:
    """Drawn tables, the lines left over, and the drawn grids that seem to be only part of a table (their lines
    are left over too)."""
    horizontal = _merge_collinear([(s.y0, min(s.x0, s.x1), max(s.x0, s.x1)) for s in rules if s.horizontal])
    vertical = _merge_collinear([(s.x0, min(s.y0, s.y1), max(s.y0, s.y1)) for s in rules if not s.horizontal])
    if len(horizontal) < 2 or len(vertical) < 2:
        return [], lines, []
    parent = list(range(len(horizontal) + len(vertical)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for hi, (y, x0, x1) in enumerate(horizontal):
        for vi, (x, y0, y1) in enumerate(vertical):
            if x0 - tuning.RULE_CROSS_TOLERANCE <= x <= x1 + tuning.RULE_CROSS_TOLERANCE \
                    and y0 - tuning.RULE_CROSS_TOLERANCE <= y <= y1 + tuning.RULE_CROSS_TOLERANCE:
                parent[find(hi)] = find(len(horizontal) + vi)
    groups: dict[int, tuple[list[tuple[float, float, float]], list[tuple[float, float, float]]]] = {}
    for hi, segment in enumerate(horizontal):
        groups.setdefault(find(hi), ([], []))[0].append(segment)
    for vi, segment in enumerate(vertical):
        groups.setdefault(find(len(horizontal) + vi), ([], []))[1].append(segment)
    blocks: list[Block] = []
    partial: list[Block] = []
    used: set[int] = set()
    for hs, vs in groups.values():
        if len(hs) < 2 or len(vs) < 2:
            continue
        # Double borders and cells drawn as separate boxes put several rules a few points apart.
        xs = _clusters([v[0] for v in vs], tuning.RULE_CLUSTER_X)
        ys = _clusters([h[0] for h in hs], tuning.RULE_CLUSTER_Y)
        if len(xs) < tuning.LATTICE_MIN_LINES and len(ys) < tuning.LATTICE_MIN_LINES:
            continue  # a plain box around some text, not a grid
        free = [line for line in lines if id(line) not in used]
        ys = _without_caption_rows(xs, ys, vs, free)
        if len(ys) < 2:
            continue
        xs = widen_to_rules(xs, hs)
        xs, hs, vs = widen_over_labels(xs, ys, hs, vs, free)
        area = Box(xs[0], ys[0], xs[-1], ys[-1])
        if area.width < tuning.LATTICE_MIN_WIDTH or area.height < tuning.LATTICE_MIN_HEIGHT:
            continue
        inside = [line for line in lines if id(line) not in used and area.contains_point(line.box.cx, line.box.cy)]
        if not inside:
            continue
        if _lacks_row_rules(xs, ys, inside):
            continue  # the rules draw only the columns: the text finder reads the rows from the baselines
        grid = _lattice_grid(xs, ys, hs, vs, inside)
        if grid is None or grid.cols < 2 or grid.rows < 2:
            continue
        block = Block(inside, area, BlockKind.TABLE, html=grid_html(grid))
        if _continues_outside(area, xs, inside, lines):
            partial.append(block)
            continue
        used.update(id(line) for line in inside)
        blocks.append(block)
    return blocks, [line for line in lines if id(line) not in used], partial


def _without_caption_rows(xs: list[float], ys: list[float], vs: list[tuple[float, float, float]],
                          lines: list[Line]) -> list[float]:
    """The grid's row lines without a boxed caption over the table or a boxed note under it: a drawn row no
    column rule crosses, whose text opens like a caption ("Exhibit 19 ...", "Source: ..."), stays text; so does a
    last drawn row holding one paragraph of prose (a sentence under the table explaining how to read it)."""
    def caption_between(top: float, bottom: float, under: bool = False) -> bool:
        if any(_covered(vs, x, top, bottom) for x in xs[1:-1]):
            return False
        band = sorted((line for line in lines if top <= line.box.cy <= bottom and xs[0] <= line.box.cx <= xs[-1]),
                      key=lambda line: (line.box.y0, line.box.x0))
        if not band:
            return False
        if _CAPTION.match(band[0].text):
            return True
        return under and all(row.count == 1 for row in text_rows(band)) and any(
            len(line.words) >= tuning.TABLE_WORDY_SEGMENT for line in band)

    while len(ys) > 2 and caption_between(ys[0], ys[1]):
        ys = ys[1:]
    while len(ys) > 2 and caption_between(ys[-2], ys[-1], under=True):
        ys = ys[:-1]
    return ys


def _lacks_row_rules(xs: list[float], ys: list[float], lines: list[Line]) -> bool:
    """Do the rules draw a table's columns but not its rows? Then one drawn row holds several text rows that
    each put figures into two drawn columns or more, and the lattice would merge whole columns of figures into
    single cells. Wrapped text (a paragraph in a cell, a header set on several lines in every column) holds no
    such rows, so it keeps its drawn cells."""
    for top, bottom in zip(ys, ys[1:], strict=False):
        figure_rows = 0
        for row in text_rows([line for line in lines if top <= line.box.cy <= bottom]):
            columns = {_band_index(xs, line.box.cx) for line in row.lines if is_numeric(line.text)} - {None}
            if len(columns) >= 2:
                figure_rows += 1
        if figure_rows >= tuning.LATTICE_MAX_FIGURE_ROWS:
            return True
    return False


def _continues_outside(area: Box, xs: list[float], inside: list[Line], lines: list[Line]) -> bool:
    """Do most rows of a drawn grid go on past its left or right edge with short cells (a stub column or a last
    column the rules leave out), within a column's width of the edge? Then the grid is only part of its table."""
    reach = (xs[-1] - xs[0]) / max(1, len(xs) - 1)
    outside = [line for line in lines if not area.contains_point(line.box.cx, line.box.cy)
               and len(line.words) < tuning.TABLE_WORDY_SEGMENT
               and (0 <= area.x0 - line.box.x1 <= reach or 0 <= line.box.x0 - area.x1 <= reach)]
    rows = [row for row in text_rows(inside) if row.count >= 2]
    if len(rows) < tuning.TABLE_MIN_ROWS:
        return False
    going_on = sum(1 for row in rows if any(
        line.box.y_overlap(row.box) >= tuning.ROW_MIN_Y_OVERLAP * min(line.box.height, row.box.height)
        for line in outside))
    return going_on * 2 > len(rows)


def _covered(segments: list[tuple[float, float, float]], pos: float, start: float, stop: float) -> bool:
    """Is the edge at `pos` from `start` to `stop` drawn (mostly)?"""
    length = stop - start
    drawn = sum(max(0.0, min(stop, s[2]) - max(start, s[1])) for s in segments
                if abs(s[0] - pos) <= tuning.EDGE_TOLERANCE)
    return drawn >= tuning.EDGE_MIN_DRAWN * length


def _lattice_grid(xs: list[float], ys: list[float], hs: list[tuple[float, float, float]],
                  vs: list[tuple[float, float, float]], lines: list[Line]) -> Grid | None:
    rows, cols = len(ys) - 1, len(xs) - 1
    owner = {(r, c): (r, c) for r in range(rows) for c in range(cols)}

    def root(cell: tuple[int, int]) -> tuple[int, int]:
        while owner[cell] != cell:
            cell = owner[cell]
        return cell

    words = [w for line in lines for w in line.words]
    for r in range(rows):
        for c in range(cols - 1):
            if _covered(vs, xs[c + 1], ys[r], ys[r + 1]):
                continue
            # An undrawn border splits cells unless text runs across it (a heading over two columns).
            if any(w.box.x0 < xs[c + 1] - 1 < xs[c + 1] + 1 < w.box.x1 and ys[r] <= w.box.cy <= ys[r + 1]
                   for w in words):
                owner[root((r, c + 1))] = root((r, c))
    for r in range(rows - 1):
        for c in range(cols):
            if not _covered(hs, ys[r + 1], xs[c], xs[c + 1]):
                a, b = root((r, c)), root((r + 1, c))
                if a != b:
                    owner[max(a, b)] = min(a, b)
    placed: dict[tuple[int, int], list[Word]] = {}
    for word in words:
        col, row = _band_index(xs, word.box.cx), _band_index(ys, word.box.cy)
        if row is not None and col is not None:
            placed.setdefault((row, col), []).append(word)
    for empty, written in open_cells(rows, cols, xs, placed, root,
                                     lambda r, border: _covered(vs, xs[border], ys[r], ys[r + 1])):
        owner[empty] = written
    members: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for cell in owner:
        members.setdefault(root(cell), []).append(cell)
    texts: dict[tuple[int, int], list[tuple[float, float, str]]] = {}
    for line in lines:
        for word in line.words:
            col = _band_index(xs, word.box.cx)
            row = _band_index(ys, word.box.cy)
            if row is None or col is None:
                continue
            texts.setdefault(root((row, col)), []).append((line.box.cy, word.box.x0, word.text))
    grid = Grid(rows=rows, cols=cols)
    for origin, cells in members.items():
        r0 = min(r for r, _ in cells)
        c0 = min(c for _, c in cells)
        r1 = max(r for r, _ in cells)
        c1 = max(c for _, c in cells)
        grid.cells.append(Cell(r0, c0, cell_text(texts.get(origin, [])), rowspan=r1 - r0 + 1,
                               colspan=c1 - c0 + 1))
    _drop_spacer_columns(grid, xs)
    _drop_empty(grid)
    grid.header_rows = header_rows(grid)
    return grid


def _drop_spacer_columns(grid: Grid, xs: list[float]) -> None:
    """A narrow drawn column with no text in any row (cells drawn as boxes with a gap between them) is no column:
    its empty cells go, and `_drop_empty` removes it."""
    widths = sorted(b - a for a, b in zip(xs, xs[1:], strict=False))
    typical = widths[len(widths) // 2]
    written = {col for c in grid.cells if c.text for col in range(c.col, c.col + c.colspan)}
    spacers = {col for col in range(grid.cols)
               if col not in written and xs[col + 1] - xs[col] < tuning.LATTICE_SPACER_WIDTH * typical}
    grid.cells = [c for c in grid.cells if not (c.colspan == 1 and c.col in spacers and not c.text)]


def _band_index(edges: list[float], value: float) -> int | None:
    for index in range(len(edges) - 1):
        if edges[index] <= value <= edges[index + 1]:
            return index
    return None


def _drop_empty(grid: Grid) -> None:
    """Rows and columns holding no cell origin (double rules, thin gaps) are removed."""
    used_rows = sorted({c.row for c in grid.cells})
    used_cols = sorted({c.col for c in grid.cells})
    row_map = {r: i for i, r in enumerate(used_rows)}
    col_map = {c: i for i, c in enumerate(used_cols)}
    for cell in grid.cells:
        end_row = max((r for r in used_rows if r < cell.row + cell.rowspan), default=cell.row)
        end_col = max((c for c in used_cols if c < cell.col + cell.colspan), default=cell.col)
        cell.rowspan = row_map[end_row] - row_map[cell.row] + 1
        cell.colspan = col_map[end_col] - col_map[cell.col] + 1
        cell.row, cell.col = row_map[cell.row], col_map[cell.col]
    grid.rows, grid.cols = len(used_rows), len(used_cols)
