"""Tables read out of parser output the way olmOCR-bench reads them: a grid of cells and their neighbours.

Both Markdown pipe tables and HTML `<table>`s are read. A cell spanning rows or columns is stored once, at its
top-left position, and is the neighbour of every cell along its edges, so a relation may have several
answers. Heading cells are `<th>` or cells inside `<thead>`; in a Markdown table, the first row and the first
column. `top_heading` walks up from a cell and answers the heading cells it meets (or, when there are none, the
cells at the top); `left_heading` does the same to the left.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from lxml import html

Position = tuple[int, int]


@dataclass(frozen=True, slots=True)
class CellSpec:
    text: str
    rowspan: int = 1
    colspan: int = 1
    heading: bool = False


@dataclass(slots=True)
class TableGraph:
    cell_text: dict[Position, str] = field(default_factory=dict)
    headings: set[Position] = field(default_factory=set)
    up: dict[Position, set[Position]] = field(default_factory=dict)
    down: dict[Position, set[Position]] = field(default_factory=dict)
    left: dict[Position, set[Position]] = field(default_factory=dict)
    right: dict[Position, set[Position]] = field(default_factory=dict)

    def _walk(self, start: Position, relation: dict[Position, set[Position]]) -> set[Position]:
        found_headings: set[Position] = set()
        ends: set[Position] = set()
        seen: set[Position] = set()
        todo = {start}
        while todo:
            current = todo.pop()
            seen.add(current)
            if current in self.headings:
                found_headings.add(current)
            following = relation.get(current, set()) - seen
            if not relation.get(current):
                ends.add(current)
            todo |= following
        found_headings.discard(start)
        ends.discard(start)
        return found_headings or ends

    def top_headings(self, position: Position) -> set[Position]:
        return self._walk(position, self.up)

    def left_headings(self, position: Position) -> set[Position]:
        return self._walk(position, self.left)


def build_graph(rows: list[list[CellSpec]]) -> TableGraph | None:
    """Lays the cells out on a grid (spans fill every position they cover) and links each to its neighbours."""
    graph = TableGraph()
    grid: dict[Position, Position] = {}
    extent: dict[Position, tuple[int, int, int, int]] = {}
    for row_index, cells in enumerate(rows):
        col = 0
        for spec in cells:
            while (row_index, col) in grid:
                col += 1
            origin = (row_index, col)
            graph.cell_text[origin] = spec.text
            if spec.heading:
                graph.headings.add(origin)
            rowspan, colspan = max(1, spec.rowspan), max(1, spec.colspan)
            for r in range(row_index, row_index + rowspan):
                for c in range(col, col + colspan):
                    grid.setdefault((r, c), origin)
            extent[origin] = (row_index, row_index + rowspan - 1, col, col + colspan - 1)
            col += colspan
    if not graph.cell_text:
        return None
    height = max(r for r, _ in grid) + 1
    width = max(c for _, c in grid) + 1
    for origin, (top, bottom, first, last) in extent.items():
        graph.up[origin] = _neighbours(grid, origin, ((top, c) for c in range(first, last + 1)), -1, 0,
                                       height, width)
        graph.down[origin] = _neighbours(grid, origin, ((bottom, c) for c in range(first, last + 1)), 1, 0,
                                         height, width)
        graph.left[origin] = _neighbours(grid, origin, ((r, first) for r in range(top, bottom + 1)), 0, -1,
                                         height, width)
        graph.right[origin] = _neighbours(grid, origin, ((r, last) for r in range(top, bottom + 1)), 0, 1,
                                          height, width)
    return graph


def _neighbours(grid: dict[Position, Position], origin: Position, edge: Iterable[Position], d_row: int,
                d_col: int, height: int, width: int) -> set[Position]:
    """For each position along an edge, the first other cell met walking in the direction (d_row, d_col)."""
    found: set[Position] = set()
    for r, c in edge:
        r, c = r + d_row, c + d_col
        while 0 <= r < height and 0 <= c < width:
            other = grid.get((r, c))
            if other is not None and other != origin:
                found.add(other)
                break
            r, c = r + d_row, c + d_col
    return found


def _is_rule_row(line: str) -> bool:
    content = line.replace("|", "").strip()
    return bool(content) and all(ch in "-: " for ch in content)


def markdown_tables(markdown: str) -> list[TableGraph]:
    """Runs of two or more consecutive lines containing '|' are a table; a row of dashes is its rule."""
    tables: list[TableGraph] = []
    block: list[str] = []
    for line in [*markdown.strip().split("\n"), ""]:
        if "|" in line:
            block.append(line)
            continue
        if len(block) >= 2:
            rows: list[list[str]] = []
            for row_line in block:
                if _is_rule_row(row_line) or (row_line.strip() and all(ch in "-:| " for ch in row_line)):
                    continue
                cells = [cell.strip() for cell in row_line.split("|")]
                if cells and cells[0] == "":
                    cells = cells[1:]
                if cells and cells[-1] == "":
                    cells = cells[:-1]
                if cells:
                    rows.append(cells)
            specs = [[CellSpec(text, heading=(r == 0 or c == 0)) for c, text in enumerate(cells)]
                     for r, cells in enumerate(rows)]
            graph = build_graph(specs) if specs else None
            if graph:
                tables.append(graph)
        block = []
    return tables


def html_tables(content: str) -> list[TableGraph]:
    if "<table" not in content.lower():
        return []
    try:
        root = html.fromstring(f"<div>{content}</div>")
    except Exception:  # noqa: BLE001 - unparsable markup holds no table
        return []
    tables: list[TableGraph] = []
    for table in root.iter("table"):
        rows: list[list[CellSpec]] = []
        for tr in table.iter("tr"):
            in_head = any(parent.tag == "thead" for parent in tr.iterancestors())
            specs: list[CellSpec] = []
            for cell in tr:
                if cell.tag not in ("td", "th"):
                    continue
                for br in cell.iter("br"):
                    br.tail = "\n" + (br.tail or "")
                specs.append(CellSpec(cell.text_content().strip(), _span(cell.get("rowspan")),
                                      _span(cell.get("colspan")), cell.tag == "th" or in_head))
            rows.append(specs)
        graph = build_graph(rows) if rows else None
        if graph:
            tables.append(graph)
    return tables


def _span(value: str | None) -> int:
    try:
        return max(1, int(value or "1"))
    except ValueError:
        return 1
