"""What the rules of a drawn table leave open. A column they leave out: row labels (or a last column) set beside
the grid of ruling lines, outside its outermost column rule, one label on the line of each drawn row, or a column
only the row rules run on to; such a column is part of the table, so the grid is widened over it (and its drawn
row lines carried on across it). Cells they leave open: empty cells beside a header or section label with no rule
between them are that label's span."""

from __future__ import annotations

from collections.abc import Callable

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.grid import is_numeric
from services.worker.engines.cpu.model import Line, Word

Rule = tuple[float, float, float]  # (position across, start, stop along)

__all__ = ["open_cells", "widen_over_labels", "widen_to_rules"]


def widen_to_rules(xs: list[float], hs: list[Rule]) -> list[float]:
    """The grid's column lines widened to where its horizontal rules run: rules drawn on past the outermost
    column rule (at least two of them) bound a column the rules leave open at the table's edge."""
    slack = tuning.EDGE_TOLERANCE
    starts = sorted(x0 for _, x0, _ in hs if x0 < xs[0] - slack)
    stops = sorted((x1 for _, _, x1 in hs if x1 > xs[-1] + slack), reverse=True)
    if len(starts) >= 2:
        xs = [starts[1], *xs]
    if len(stops) >= 2:
        xs = [*xs, stops[1]]
    return xs


def widen_over_labels(xs: list[float], ys: list[float], hs: list[Rule], vs: list[Rule],
                      lines: list[Line]) -> tuple[list[float], list[Rule], list[Rule]]:
    """The grid's column lines and rules, widened on the left and on the right over a column of labels beside it:
    short segments outside the grid, each within one drawn row, in most of the drawn rows that hold text."""
    for side in (-1, 1):
        edge = xs[0] if side < 0 else xs[-1]
        labels = _beside(xs, ys, lines, side)
        if labels is None:
            continue
        outer = (min(line.box.x0 for line in labels) if side < 0 else max(line.box.x1 for line in labels)) \
            + side * tuning.OUTSIDE_COLUMN_PAD
        # Horizontal rules ending at the grid's edge go on to the new edge; the new edge is drawn.
        carried = [(y, min(outer, edge), max(outer, edge)) for y, x0, x1 in hs
                   if abs((x0 if side < 0 else x1) - edge) <= tuning.EDGE_TOLERANCE]
        hs = hs + carried
        vs = vs + [(outer, ys[0], ys[-1])]
        xs = [outer, *xs] if side < 0 else [*xs, outer]
    return xs, hs, vs


def _beside(xs: list[float], ys: list[float], lines: list[Line], side: int) -> list[Line] | None:
    """The labels beside the grid on one side (-1 left, 1 right), or None when there is no such column. Most
    lie within one drawn row each; a label centred over several rows (a group of rows) is one of them too."""
    left, right = xs[0], xs[-1]
    width = right - left
    inside_rows: set[int] = set()
    beside: dict[int, list[Line]] = {}
    straddling: list[Line] = []
    for line in lines:
        if not ys[0] <= line.box.cy <= ys[-1]:
            continue
        row = _row_of(ys, line)
        if left <= line.box.cx <= right:
            if row is not None:
                inside_rows.add(row)
            continue
        gap = left - line.box.x1 if side < 0 else line.box.x0 - right
        if gap < -tuning.EDGE_TOLERANCE or gap > width:
            continue  # on the other side, crossing the edge, or far away
        if len(line.words) >= tuning.TABLE_WORDY_SEGMENT:
            return None  # running text beside the grid, not labels
        if row is None:
            straddling.append(line)
        else:
            beside.setdefault(row, []).append(line)
    if not inside_rows or len(beside) < tuning.TABLE_MIN_ROWS:
        return None
    if len(beside) < tuning.OUTSIDE_COLUMN_SHARE * len(inside_rows):
        return None
    return [line for row in beside.values() for line in row] + straddling


def _row_of(ys: list[float], line: Line) -> int | None:
    """The drawn row a line lies in from top to bottom (within a rule's tolerance), or None."""
    slack = tuning.EDGE_TOLERANCE
    for index in range(len(ys) - 1):
        if ys[index] - slack <= line.box.y0 and line.box.y1 <= ys[index + 1] + slack \
                and ys[index] <= line.box.cy <= ys[index + 1]:
            return index
    return None


def open_cells(rows: int, cols: int, xs: list[float], words: dict[tuple[int, int], list[Word]],
               root: Callable[[tuple[int, int]], tuple[int, int]],
               drawn: Callable[[int, int], bool]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Empty drawn cells that belong to a written cell beside them in a row without figures (a group header over
    several columns, a section label across the table): an empty cell whose border towards written text is not
    drawn (`drawn(row, border)`: is the rule at `xs[border]` drawn in that row) joins the nearest such text along
    the row. Returns (empty cell, the written cell's root) pairs; the text's cell must lie in that row alone."""
    filled: dict[tuple[int, int], list[Word]] = {}
    for cell, found in words.items():
        filled.setdefault(root(cell), []).extend(found)
    rows_of: dict[tuple[int, int], set[int]] = {}
    for r in range(rows):
        for c in range(cols):
            rows_of.setdefault(root((r, c)), set()).add(r)
    joins: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for r in range(rows):
        if any(is_numeric(w.text) for c in range(cols) for w in words.get((r, c), [])):
            continue
        for c in range(cols):
            if root((r, c)) != (r, c) or (r, c) in filled or rows_of[(r, c)] != {r}:
                continue
            centre = (xs[c] + xs[c + 1]) / 2
            nearest: tuple[float, tuple[int, int]] | None = None
            for step in (-1, 1):
                k = c
                while 0 <= k + step < cols and not drawn(r, k + (1 if step > 0 else 0)):
                    k += step
                    owner = root((r, k))
                    if owner in filled:
                        if rows_of[owner] == {r}:
                            x0 = min(w.box.x0 for w in filled[owner])
                            x1 = max(w.box.x1 for w in filled[owner])
                            distance = max(0.0, x0 - centre, centre - x1)
                            if nearest is None or distance < nearest[0]:
                                nearest = (distance, owner)
                        break
            if nearest is not None:
                joins.append(((r, c), nearest[1]))
    return joins
