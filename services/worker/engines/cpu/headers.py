"""The header of a table found among lines: group headers widened over the columns they head, cells under a
group's empty positions raised, the stub head and the heads over empty header positions spanning down."""

from __future__ import annotations

from collections.abc import Callable

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.cells import Cell, Grid

__all__ = ["by_row", "join_wrapped_heads", "raise_under_groups", "stub_head", "widen_group_headers"]


def by_row(grid: Grid) -> dict[int, list[Cell]]:
    by_row: dict[int, list[Cell]] = {}
    for cell in grid.cells:
        by_row.setdefault(cell.row, []).append(cell)
    for cells in by_row.values():
        cells.sort(key=lambda c: c.col)
    return by_row


def join_wrapped_heads(grid: Grid, continues: Callable[[str, str], bool]) -> None:
    """Column heads wrapped over two header rows are one cell each. When every head of the lower row sits under
    a head of the same columns, the lower row is only more lines of the heads above ("Weighted" over "Percent"):
    all of it joins them. Otherwise the rest of the lower row is a level of heads of its own, and only a part that
    reads on from the head above it (`continues`: "Total" over "population") joins it; the emptied positions are
    left for the heads to span down over."""
    joined: set[int] = set()
    for r in range(1, grid.header_rows):
        pairs = []
        for cell in (c for c in grid.cells if c.row == r and c.text):
            upper = next((c for c in grid.cells if c.row + c.rowspan == r and c.col == cell.col and c.text
                          and id(c) not in joined), None)
            pairs.append((cell, upper if upper is not None and upper.colspan == cell.colspan else None))
        # Figures in it make a row of its own (a body row read as header), not more lines of heads.
        whole = bool(pairs) and all(upper is not None and not any(ch.isdigit() for ch in cell.text)
                                    for cell, upper in pairs)
        for cell, upper in pairs:
            if upper is None or not (whole or (upper.col > 0 and not any(ch.isdigit() for ch in upper.text)
                                               and continues(upper.text, cell.text))):
                continue
            upper.text = f"{upper.text} {cell.text}"
            upper.left, upper.right = min(upper.left, cell.left), max(upper.right, cell.right)
            joined.add(id(cell))
    grid.cells = [c for c in grid.cells if id(c) not in joined]
    for r in reversed(range(1, grid.header_rows)):
        if any(c.row == r for c in grid.cells):
            continue
        for cell in grid.cells:  # a header row all of whose heads joined those above goes
            if cell.row > r:
                cell.row -= 1
            elif cell.row + cell.rowspan > r:
                cell.rowspan -= 1
        grid.rows -= 1
        grid.header_rows -= 1


def widen_group_headers(grid: Grid, columns: list[tuple[float, float]]) -> None:
    """A header cell over several columns' headers spans all the columns it is centred over, not only those its
    text happens to cross ("Year Ended" over three dates, "General Practitioners" over five answers). Rows are
    widened top down, and a cell stays within the group header above it (a three-level header: "2007" over
    "Inadequate housing" over "no.", "(%)")."""
    rows = by_row(grid)
    for r in range(grid.header_rows - 1):
        cells = [c for c in rows.get(r, []) if c.col > 0 and c.text]
        below = {col for c in grid.cells if r < c.row < grid.header_rows and c.text
                 for col in range(c.col, c.col + c.colspan)}
        taken = {col for c in rows.get(r, []) for col in range(c.col, c.col + c.colspan)}
        for cell in cells:
            band = columns[cell.col][1] - columns[cell.col][0]
            overflows = cell.right - cell.left > tuning.HEADER_OVERFLOW * band
            # A header standing in the gap between two columns, over neither, is centred over both.
            in_gap = cell.right <= columns[cell.col][0] or cell.left >= columns[cell.col][1]
            # Otherwise it may be one column's own header: it spans only when clearly centred over several.
            own = cell.colspan < 2 and len(cells) > 1 and not overflows and not in_gap
            parent = _parent_span(grid, cell)
            lo = cell.col
            while lo - 1 > max(0, parent[0] - 1) and lo - 1 not in taken:
                lo -= 1
            hi = cell.col + cell.colspan - 1
            while hi + 1 < min(grid.cols, parent[1] + 1) and hi + 1 not in taken:
                hi += 1
            centre = (cell.left + cell.right) / 2
            tolerance = max(tuning.HEADER_ALIGN_MIN, tuning.HEADER_ALIGN_SHARE * (cell.right - cell.left))
            options = []
            for first in range(lo, cell.col + 1):
                for last in range(cell.col + cell.colspan - 1, hi + 1):
                    if first not in below or last not in below:
                        continue
                    if sum(1 for col in range(first, last + 1) if col in below) < 2:
                        continue
                    offset = abs((columns[first][0] + columns[last][1]) / 2 - centre)
                    options.append((offset, first, last))
            if not options:
                continue
            best = min(offset for offset, _, _ in options)
            if own and best + tolerance >= abs((columns[cell.col][0] + columns[cell.col][1]) / 2 - centre):
                continue  # no better centred over several columns than over its own
            _, first, last = max((o for o in options if o[0] <= best + tolerance), key=lambda o: o[2] - o[1])
            taken.difference_update(range(cell.col, cell.col + cell.colspan))
            cell.col, cell.colspan = first, last - first + 1
            taken.update(range(first, last + 1))


def _parent_span(grid: Grid, cell: Cell) -> tuple[int, int]:
    """The columns of the nearest header cell above `cell` spanning several columns over it (all columns when
    there is none)."""
    above = [c for c in grid.cells if c.row + c.rowspan <= cell.row and c.colspan > 1 and c.text
             and c.col <= cell.col < c.col + c.colspan]
    if not above:
        return 0, grid.cols - 1
    parent = max(above, key=lambda c: c.row)
    return parent.col, parent.col + parent.colspan - 1


def raise_under_groups(grid: Grid) -> None:
    """A column head below an empty header position that a group header above covers (the group's other
    columns have a second level of heads: "total occupied housing units" beside "Inadequate housing" under
    "2007") spans up to the row under that group header."""
    if grid.header_rows < 3:
        return
    occupied = {(r, col) for c in grid.cells for r in range(c.row, c.row + c.rowspan)
                for col in range(c.col, c.col + c.colspan)}
    for cell in grid.cells:
        if cell.row == 0 or cell.row >= grid.header_rows or cell.col == 0 or not cell.text:
            continue
        top = cell.row
        while top > 0 and not any((top - 1, col) in occupied for col in range(cell.col, cell.col + cell.colspan)):
            top -= 1
        if top in (cell.row, 0):
            continue  # nothing empty above it, or nothing above at all (no group over it)
        group = [c for c in grid.cells if c.row + c.rowspan == top and c.colspan > cell.colspan and c.text
                 and c.col <= cell.col and cell.col + cell.colspan <= c.col + c.colspan]
        if not group:
            continue
        for r in range(top, cell.row):
            occupied.update((r, col) for col in range(cell.col, cell.col + cell.colspan))
        cell.rowspan += cell.row - top
        cell.row = top


def stub_head(grid: Grid) -> None:
    """In the header, a cell with only empty positions under it spans down over them; the stub head (the first
    column's header, often set on several lines beside the column headers) becomes one cell."""
    if grid.header_rows < 2:
        return
    stub = sorted((c for c in grid.cells if c.row < grid.header_rows and c.col == 0 and c.colspan == 1),
                  key=lambda c: c.row)
    if len(stub) > 1:
        stub[0].text = " ".join(c.text for c in stub if c.text)
        grid.cells = [c for c in grid.cells if c not in stub[1:]]
    elif len(stub) == 1 and stub[0].row > 0 and stub[0].text and _grouped_above(grid, stub[0].row):
        # A stub head set on the line of the column heads, under nothing while group headers span all the
        # columns above them, spans up to the top of the header.
        stub[0].rowspan = stub[0].row + 1
        stub[0].row = 0
    occupied = {(c.row, col) for c in grid.cells for col in range(c.col, c.col + c.colspan)}
    for cell in grid.cells:
        if cell.row >= grid.header_rows - 1 or not cell.text:
            continue
        span = 1
        while cell.row + span < grid.header_rows and not any(
                (cell.row + span, col) in occupied for col in range(cell.col, cell.col + cell.colspan)):
            span += 1
        cell.rowspan = span


def _grouped_above(grid: Grid, row: int) -> bool:
    """Do the header rows above `row` hold nothing in the first column, and does the row right above hold group
    headers over several columns that together head every other column?"""
    if any(c.row < row and c.col == 0 and c.text for c in grid.cells):
        return False
    above = [c for c in grid.cells if c.row == row - 1 and c.text]
    if not any(c.colspan > 1 for c in above):
        return False
    headed = {col for c in above for col in range(c.col, c.col + c.colspan)}
    return headed >= set(range(1, grid.cols))
