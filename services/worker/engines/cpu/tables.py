"""Tables from geometry: rows of aligned text segments (and the ruling lines between them) become a grid,
the grid becomes an HTML <table> with colspan/rowspan. The same code serves text layers and OCR boxes."""

from __future__ import annotations

import html
import re
import statistics
from dataclasses import dataclass, field

from services.worker.engines.cpu.model import Block, BlockKind, Box, Line, Segment, Word, union_all

_CAPTION = re.compile(r"^(table|tab\.|figure|fig\.|chart|exhibit|source|note)\s*[\dIVX:.]", re.IGNORECASE)
_NUMERIC = re.compile(r"^[\s$€£¥%()+\-–—−.,:/*\d<>≤≥±x×~]+$")


@dataclass(slots=True)
class Cell:
    row: int
    col: int
    text: str
    rowspan: int = 1
    colspan: int = 1


@dataclass(slots=True)
class Grid:
    rows: int
    cols: int
    cells: list[Cell] = field(default_factory=list)
    header_rows: int = 0


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


# ---------------------------------------------------------------------------------------------------------------
# Finding table regions among lines


@dataclass(slots=True)
class _Row:
    lines: list[Line]
    box: Box

    @property
    def count(self) -> int:
        return len(self.lines)


def text_rows(lines: list[Line]) -> list[_Row]:
    """Lines sharing a baseline band, left to right."""
    rows: list[_Row] = []
    for line in sorted(lines, key=lambda item: item.box.cy):
        for row in reversed(rows[-3:]):
            if line.box.y_overlap(row.box) >= 0.5 * min(line.box.height, row.box.height):
                row.lines.append(line)
                row.box = row.box.union(line.box)
                break
        else:
            rows.append(_Row([line], line.box))
    for row in rows:
        row.lines.sort(key=lambda item: item.box.x0)
    return rows


def find_tables(lines: list[Line], rules: list[Segment], width: float, size: float,
                min_rows: int = 3) -> tuple[list[Block], list[Line]]:
    """Table blocks found among the lines, and the lines left over for the text flow."""
    ruled, lines = find_ruled_tables(lines, rules)
    rows = text_rows(lines)
    if not rows:
        return ruled, lines
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
        singles = 0
        while end < len(rows):
            gap = rows[end].box.y0 - rows[end - 1].box.y1
            if gap > 2.5 * max(size, rows[end - 1].box.height):
                break
            if table_like[end]:
                singles = 0
            else:
                if not _can_sit_in_table(rows[end], rows[index:end], text_width):
                    break
                singles += 1
                if singles > 2:
                    break
            end += 1
        stop = end - singles  # a table does not end on loose single lines
        start = _extend_header(rows, index, table_like, text_width, size)
        region = rows[start:stop]
        if sum(1 for i in range(start, stop) if table_like[i]) >= min_rows:
            grid = build_grid(region, rules)
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
    return ruled + tables, rest


def _row_is_tabular(row: _Row, text_width: float) -> bool:
    if row.count < 2:
        return False
    wordy = sum(1 for line in row.lines if len(line.words) >= 6)
    if wordy * 2 > row.count:
        return False  # side-by-side prose (columns, sidebars), not cells
    widths = sorted(line.box.width for line in row.lines)
    if row.count == 2:
        # Two prose columns side by side are not a table row: one of the two parts must be short.
        return widths[0] < 0.3 * text_width
    return widths[len(widths) // 2] < 0.4 * text_width


def _can_sit_in_table(row: _Row, above: list[_Row], text_width: float) -> bool:
    """A one-segment row inside a table (a section label, a wrapped cell) is short and not prose."""
    line = row.lines[0]
    return line.box.width < 0.5 * text_width and len(line.text) < 80


def _extend_header(rows: list[_Row], start: int, table_like: list[bool], text_width: float, size: float) -> int:
    """Up to two short rows right above the first tabular row are its column headers."""
    begin = start
    for _ in range(2):
        if begin == 0:
            break
        candidate = rows[begin - 1]
        gap = rows[begin].box.y0 - candidate.box.y1
        if gap > 1.5 * max(size, candidate.box.height) or table_like[begin - 1]:
            break
        if candidate.count == 1 and candidate.lines[0].box.width >= 0.5 * text_width:
            break
        if candidate.count == 1 and candidate.lines[0].text.rstrip().endswith((".", ":")):
            break
        if _CAPTION.match(candidate.lines[0].text):
            break
        begin -= 1
    return begin


# ---------------------------------------------------------------------------------------------------------------
# Rows of segments to a grid


def build_grid(rows: list[_Row], rules: list[Segment] | None = None) -> Grid | None:
    """Columns from the x-extents that the segments of the fullest rows leave free; spanning cells from segments
    that cross a column boundary."""
    if not rows:
        return None
    counts = sorted(row.count for row in rows)
    typical = counts[int(len(counts) * 0.6)] if counts else 1
    basis = [line for row in rows if row.count >= max(2, typical) for line in row.lines]
    if not basis:
        basis = [line for row in rows for line in row.lines]
    columns = _column_bands([(line.box.x0, line.box.x1) for line in basis])
    if len(columns) < 2:
        return None
    # Segments of the other rows that fall between bands widen the nearest band rather than adding a column.
    grid_rows: list[list[tuple[int, int, str]]] = []
    for row in rows:
        placed: list[tuple[int, int, str]] = []
        for line in _split_numeric_runs(row.lines, columns):
            first, last = _span(columns, line.box.x0, line.box.x1)
            if placed and first <= placed[-1][1]:
                # Two segments in one column: join their text.
                prev_first, prev_last, prev_text = placed[-1]
                placed[-1] = (prev_first, max(prev_last, last), f"{prev_text} {line.text}")
                continue
            placed.append((first, last, line.text))
        grid_rows.append(placed)
    grid = Grid(rows=len(grid_rows), cols=len(columns))
    for r, placed in enumerate(grid_rows):
        for first, last, text in placed:
            grid.cells.append(Cell(r, first, text.strip(), colspan=last - first + 1))
    _merge_wrapped_rows(grid, rows)
    grid.header_rows = _header_rows(grid)
    _stub_rowspans(grid)
    return grid


def _split_numeric_runs(lines: list[Line], columns: list[tuple[float, float]]) -> list[Line]:
    """A segment of figures that crosses column bands (OCR joins close numbers into one box) is cut into one
    segment per band, by where each figure sits."""
    out: list[Line] = []
    for line in lines:
        first, last = _span(columns, line.box.x0, line.box.x1)
        if last == first or len(line.words) < 2 or not all(_is_figure(w.text) for w in line.words):
            out.append(line)
            continue
        pieces: dict[int, list[Word]] = {}
        for word in line.words:
            band = _span(columns, word.box.cx, word.box.cx + 0.01)[0]
            pieces.setdefault(band, []).append(word)
        for band in sorted(pieces):
            words = pieces[band]
            out.append(Line(words, union_all([w.box for w in words]), score=line.score))
    return out


def _is_figure(text: str) -> bool:
    return _is_numeric(text) or bool(re.fullmatch(r"[*†‡§#\-–—.]+|n/?a|NS|ns", text))


def _column_bands(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    bands: list[tuple[float, float]] = []
    for start, stop in sorted(spans):
        if bands and start <= bands[-1][1] + 1.0:
            bands[-1] = (bands[-1][0], max(bands[-1][1], stop))
        else:
            bands.append((start, stop))
    return bands


def _span(columns: list[tuple[float, float]], x0: float, x1: float) -> tuple[int, int]:
    """The first and last column a segment covers; a segment in a gap goes to the nearest column."""
    hit = [i for i, (a, b) in enumerate(columns) if min(b, x1) - max(a, x0) > 0.25 * min(b - a, x1 - x0)]
    if hit:
        return hit[0], hit[-1]
    centre = (x0 + x1) / 2
    nearest = min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - centre))
    return nearest, nearest


def _merge_wrapped_rows(grid: Grid, rows: list[_Row]) -> None:
    """A row holding only text that continues the cell above (a label wrapped onto two lines) joins that row.

    Continuation: the row is much closer to the one above than rows usually are, and fills only cells that are
    filled above too, starting in lower case or following a line that did not end a sentence.
    """
    if len(rows) < 3:
        return
    pitches = [rows[i].box.cy - rows[i - 1].box.cy for i in range(1, len(rows))]
    typical = statistics.median(pitches)
    by_row: dict[int, list[Cell]] = {}
    for cell in grid.cells:
        by_row.setdefault(cell.row, []).append(cell)
    merged_into: dict[int, int] = {}
    for r in range(1, grid.rows):
        cells = by_row.get(r, [])
        above_row = merged_into.get(r - 1, r - 1)
        above = {c.col: c for c in by_row.get(above_row, [])}
        pitch = rows[r].box.cy - rows[r - 1].box.cy
        if not cells:
            continue
        continuation = cells[0].text[:1].islower() if len(cells) == 1 else False
        if continuation and cells[0].col == 0 and 0 in above:
            pitch = 0.0  # a row label wrapped onto the next line, however the rows are spaced
        if pitch >= 0.8 * typical:
            continue
        if continuation and cells[0].col in above:
            target = above[cells[0].col]
            target.text = f"{target.text} {cells[0].text}"
            merged_into[r] = above_row
    if not merged_into:
        return
    grid.cells = [c for c in grid.cells if c.row not in merged_into]
    remap: dict[int, int] = {}
    new_index = 0
    for r in range(grid.rows):
        if r in merged_into:
            continue
        remap[r] = new_index
        new_index += 1
    for cell in grid.cells:
        cell.row = remap[cell.row]
    grid.rows = new_index


def _is_numeric(text: str) -> bool:
    return bool(text) and bool(_NUMERIC.match(text)) and any(ch.isdigit() for ch in text)


def _header_rows(grid: Grid) -> int:
    """Leading rows with no figures in their data columns (or with cells spanning columns) are headers."""
    by_row: dict[int, list[Cell]] = {}
    for cell in grid.cells:
        by_row.setdefault(cell.row, []).append(cell)
    has_numbers = any(_is_numeric(c.text) for c in grid.cells if c.col > 0)
    if not has_numbers:
        return 1 if grid.rows > 2 else 0
    header = 0
    for r in range(min(grid.rows - 1, 5)):
        cells = [c for c in by_row.get(r, []) if c.col > 0]
        numeric = [c for c in cells if _is_numeric(c.text) and not re.fullmatch(r"(19|20)\d\d", c.text.strip())]
        if numeric:
            break
        header = r + 1
    return header


def _stub_rowspans(grid: Grid) -> None:
    """In the header, a cell with only empty positions under it (within the header) spans down over them."""
    if grid.header_rows < 2:
        return
    occupied = {(c.row, col) for c in grid.cells for col in range(c.col, c.col + c.colspan)}
    for cell in grid.cells:
        if cell.row >= grid.header_rows - 1 or not cell.text:
            continue
        span = 1
        while cell.row + span < grid.header_rows and not any(
                (cell.row + span, col) in occupied for col in range(cell.col, cell.col + cell.colspan)):
            span += 1
        cell.rowspan = span


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
    """(position, start, stop) segments on one line that touch become one."""
    merged: list[tuple[float, float, float]] = []
    for pos, start, stop in sorted(segments, key=lambda s: (round(s[0]), s[1])):
        if merged and abs(merged[-1][0] - pos) <= 1.5 and start <= merged[-1][2] + 2.0:
            last = merged[-1]
            merged[-1] = (last[0], last[1], max(last[2], stop))
        else:
            merged.append((pos, start, stop))
    return merged


def find_ruled_tables(lines: list[Line], rules: list[Segment]) -> tuple[list[Block], list[Line]]:
    """Tables whose cells are drawn: horizontal and vertical rules that cross each other form a grid."""
    horizontal = _merge_collinear([(s.y0, min(s.x0, s.x1), max(s.x0, s.x1)) for s in rules if s.horizontal])
    vertical = _merge_collinear([(s.x0, min(s.y0, s.y1), max(s.y0, s.y1)) for s in rules if not s.horizontal])
    if len(horizontal) < 2 or len(vertical) < 2:
        return [], lines
    parent = list(range(len(horizontal) + len(vertical)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for hi, (y, x0, x1) in enumerate(horizontal):
        for vi, (x, y0, y1) in enumerate(vertical):
            if x0 - 2 <= x <= x1 + 2 and y0 - 2 <= y <= y1 + 2:
                parent[find(hi)] = find(len(horizontal) + vi)
    groups: dict[int, tuple[list[tuple[float, float, float]], list[tuple[float, float, float]]]] = {}
    for hi, segment in enumerate(horizontal):
        groups.setdefault(find(hi), ([], []))[0].append(segment)
    for vi, segment in enumerate(vertical):
        groups.setdefault(find(len(horizontal) + vi), ([], []))[1].append(segment)
    blocks: list[Block] = []
    used: set[int] = set()
    for hs, vs in groups.values():
        if len(hs) < 2 or len(vs) < 2:
            continue
        # Double borders and cells drawn as separate boxes put several rules a few points apart.
        xs = _clusters([v[0] for v in vs], 4.0)
        ys = _clusters([h[0] for h in hs], 3.0)
        if len(xs) < 3 and len(ys) < 3:
            continue  # a plain box around some text, not a grid
        area = Box(xs[0], ys[0], xs[-1], ys[-1])
        if area.width < 30 or area.height < 12:
            continue
        inside = [line for line in lines if id(line) not in used and area.contains_point(line.box.cx, line.box.cy)]
        if not inside:
            continue
        grid = _lattice_grid(xs, ys, hs, vs, inside)
        if grid is None or grid.cols < 2 or grid.rows < 2:
            continue
        used.update(id(line) for line in inside)
        blocks.append(Block(inside, area, BlockKind.TABLE, html=grid_html(grid)))
    return blocks, [line for line in lines if id(line) not in used]


def _covered(segments: list[tuple[float, float, float]], pos: float, start: float, stop: float) -> bool:
    """Is the edge at `pos` from `start` to `stop` drawn (mostly)?"""
    length = stop - start
    drawn = sum(max(0.0, min(stop, s[2]) - max(start, s[1])) for s in segments if abs(s[0] - pos) <= 4.0)
    return drawn >= 0.6 * length


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
        placed = sorted(texts.get(origin, []), key=lambda item: (round(item[0]), item[1]))
        grid.cells.append(Cell(r0, c0, " ".join(text for _, _, text in placed), rowspan=r1 - r0 + 1,
                               colspan=c1 - c0 + 1))
    _drop_empty(grid)
    grid.header_rows = _header_rows(grid)
    return grid


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
