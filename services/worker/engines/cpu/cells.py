"""A table grid's cells: what the grid builders (grid.py, headers.py, the lattice in tables.py) fill in and
`grid.grid_html` renders."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Cell", "Grid"]


@dataclass(slots=True)
class Cell:
    row: int
    col: int
    text: str
    rowspan: int = 1
    colspan: int = 1
    left: float = 0.0  # the x-extent of the text, for centring a header over the columns it heads
    right: float = 0.0


@dataclass(slots=True)
class Grid:
    rows: int
    cols: int
    cells: list[Cell] = field(default_factory=list)
    header_rows: int = 0
