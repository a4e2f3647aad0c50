"""Table structure from word geometry on synthetic boxes: borderless tables with spanning headers and ragged
rows, figures the text layer ran together, rules that draw only part of a table, and prose that must stay text."""

from __future__ import annotations

from services.worker.engines.cpu.grid import build_grid, grid_html, text_rows
from services.worker.engines.cpu.model import Box, Line, Segment, Word
from services.worker.engines.cpu.tables import find_tables
from tests.unit.cpu.test_grid import rows_of, segment


def run(*parts: tuple[str, float], y: float, height: float = 10.0) -> Line:
    """One line of words placed at given x positions (the text layer may run cells of a row together)."""
    words = [Word(text, Box(x, y, x + 5 * len(text), y + height)) for text, x in parts]
    return Line(words, Box(words[0].box.x0, y, words[-1].box.x1, y + height))


def figures_table() -> list[Line]:
    """A stub column and two groups of two figure columns under year headers that span their group."""
    lines = [segment("2005", 112, 0), segment("2010", 232, 0)]
    lines += [segment(name, x, 12) for name, x in (("Number", 80), ("Percent", 140), ("Number", 200),
                                                   ("Percent", 260))]
    for row, label in enumerate(("All ages", "Men", "Women", "Children", "Adults")):
        y = 26 + 12 * row
        lines.append(segment(label, 0, y))
        lines += [segment(text, x, y) for text, x in ((f"{row + 1}1,250", 80), (f"{row}.5", 150),
                                                      (f"{row + 2}0,100", 200), (f"{row}.7", 270))]
    return lines


def test_a_borderless_table_gets_its_columns_from_the_gaps_and_its_group_headers_span_them() -> None:
    grid = build_grid(text_rows(figures_table()))
    assert grid is not None and (grid.rows, grid.cols) == (7, 5) and grid.header_rows == 2
    rows = rows_of(grid_html(grid))
    assert rows[0] == [("", ""), (' colspan="2"', "2005"), (' colspan="2"', "2010")]
    assert [text for _, text in rows[2]] == ["All ages", "11,250", "0.5", "20,100", "0.7"]


def test_figures_the_text_layer_ran_together_still_fall_into_their_columns() -> None:
    lines = []
    for row, label in enumerate(("All ages", "Men", "Women", "Children", "Adults")):
        # One run from the first figure to the last: the spaces between the figures are clear (6 points, at a
        # line height of 10) but narrower than the gaps a run is cut at anyway.
        lines += [segment(label, 0, 12 * row),
                  run((f"{row + 1}1,250", 80), (f"{row}.5", 116), (f"{row + 2}0,100", 137), (f"{row}.7", 173),
                      y=12 * row)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.cols == 5
    assert [text for _, text in rows_of(grid_html(grid))[-1]] == ["Adults", "51,250", "4.5", "60,100", "4.7"]


def test_ragged_rows_leave_empty_cells_in_the_columns_they_skip() -> None:
    lines = [segment("Item", 0, 0), segment("Q1", 100, 0), segment("Q2", 150, 0), segment("Q3", 200, 0)]
    cells: list[tuple[str, list[str | None]]] = [
        ("Apples", ["10", "12", "14"]), ("Pears", ["7", None, "9"]), ("Plums", [None, None, "3"]),
        ("Figs", ["1", "2", None]), ("Dates", ["5", "6", "8"])]
    for row, (label, values) in enumerate(cells):
        y = 14 + 14 * row
        lines.append(segment(label, 0, y))
        lines += [segment(value, 100 + 50 * col, y) for col, value in enumerate(values) if value is not None]
    tables, rest = find_tables(lines, [], 300, 10.0)
    assert len(tables) == 1 and rest == []
    rows = [[text for _, text in row] for row in rows_of(tables[0].html)]
    assert rows[2] == ["Pears", "7", "", "9"] and rows[3] == ["Plums", "", "", "3"]
    assert rows[4] == ["Figs", "1", "2", ""]


def test_two_columns_of_running_text_are_not_a_table() -> None:
    left = ["Tables are found before their rows are read", "as text, so a page set in two columns",
            "must keep its paragraphs whole even when", "the gutter between the columns lines up",
            "in every row of the page from top to", "bottom, as it does in most journals."]
    right = ["The right column carries on with its own", "sentences, which have nothing to do with",
             "the left one, and the reader goes down", "one column before turning to the next",
             "rather than across the page from left", "to right as in a table."]
    lines = []
    for row, (a, b) in enumerate(zip(left, right, strict=True)):
        lines += [segment(a, 0, 12 * row), segment(b, 260, 12 * row)]
    tables, rest = find_tables(lines, [], 500, 10.0)
    assert tables == [] and len(rest) == len(lines)


def column_rules(xs: list[float], ys: list[float]) -> list[Segment]:
    """Vertical rules at `xs` from the first to the last of `ys`, and horizontal rules at `ys` only."""
    return [Segment(x, ys[0], x, ys[-1]) for x in xs] + [Segment(xs[0], y, xs[-1], y) for y in ys]


def test_rules_that_draw_only_columns_do_not_merge_the_rows_of_figures() -> None:
    # Rules over the table, under its header and under the table: none between the rows of figures.
    tables, _ = find_tables(figures_table(), column_rules([-5, 75, 195, 300], [-4, 24, 90]), 400, 10.0)
    assert len(tables) == 1
    rows = [[text for _, text in row] for row in rows_of(tables[0].html)]
    assert ["Men", "21,250", "1.5", "30,100", "1.7"] in rows and len(rows) == 7


def test_a_drawn_grid_that_leaves_out_the_stub_column_yields_to_the_whole_table() -> None:
    lines = [segment("Finland", 80, 0), segment("Sweden", 160, 0), segment("Norway", 240, 0)]
    for row, year in enumerate(("1996", "2000", "2005", "2006")):
        y = 14 + 14 * row
        lines += [segment(year, 0, y)] + [segment(f"{col}.{row}", 90 + 80 * col, y) for col in range(3)]
    # Boxed cells drawn around the first two figure columns only.
    rules = [Segment(70, y, 230, y) for y in (-3, 11, 25, 39, 53, 67)]
    rules += [Segment(x, -3, x, 67) for x in (70, 150, 230)]
    tables, rest = find_tables(lines, rules, 400, 10.0)
    assert len(tables) == 1 and rest == []
    rows = [[text for _, text in row] for row in rows_of(tables[0].html)]
    assert rows[0] == ["", "Finland", "Sweden", "Norway"] and rows[2] == ["2000", "0.1", "1.1", "2.1"]


def test_a_table_set_in_side_by_side_copies_is_unfolded_into_one_long_table() -> None:
    lines = []
    for copy in range(3):
        lines += [segment("Age", 150 * copy, 0), segment("Count", 150 * copy + 60, 0)]
        for row in range(4):
            lines += [segment(f"{10 * copy + row} years", 150 * copy, 14 + 14 * row),
                      segment(f"{copy},{row}00", 150 * copy + 60, 14 + 14 * row)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and (grid.rows, grid.cols) == (13, 2)
    rows = [[text for _, text in row] for row in rows_of(grid_html(grid))]
    assert rows[0] == ["Age", "Count"] and rows[5] == ["10 years", "1,000"] and rows[12] == ["23 years", "2,300"]


def test_repeated_column_heads_under_one_stub_head_are_not_unfolded() -> None:
    lines = [segment("Age", 0, 0)] + [segment(("Male", "Female")[col % 2], 60 + 50 * col, 0) for col in range(4)]
    for row in range(4):
        lines += [segment(f"{row}0-{row}9", 0, 14 + 14 * row)]
        lines += [segment(f"{row}{col}.5", 60 + 50 * col, 14 + 14 * row) for col in range(4)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and (grid.rows, grid.cols) == (5, 5)


def test_a_caption_boxed_with_a_drawn_table_stays_out_of_its_grid() -> None:
    lines = [segment("Exhibit 4 Schools by size", 0, 0), segment("Size", 0, 20), segment("Share", 100, 20)]
    for row, (size, share) in enumerate((("Small", "34%"), ("Medium", "11%"), ("Large", "2%"))):
        lines += [segment(size, 0, 40 + 20 * row), segment(share, 100, 40 + 20 * row)]
    rules = [Segment(-5, y, 200, y) for y in (-5, 15, 35, 55, 75, 95)]
    rules += [Segment(-5, -5, -5, 95), Segment(200, -5, 200, 95), Segment(90, 15, 90, 95)]  # no rule in the caption
    tables, rest = find_tables(lines, rules, 400, 10.0)
    assert len(tables) == 1 and [line.text for line in rest] == ["Exhibit 4 Schools by size"]
    rows = [[text for _, text in row] for row in rows_of(tables[0].html)]
    assert rows == [["Size", "Share"], ["Small", "34%"], ["Medium", "11%"], ["Large", "2%"]]


def boxed_cells(xs: list[float], ys: list[float], gap: float, skew: float) -> list[Segment]:
    """Every cell drawn as its own box, `gap` points short of its neighbours; the boxes of the last column sit
    `skew` points higher than the others (a table whose cells were drawn one by one)."""
    rules: list[Segment] = []
    for c, (x0, x1) in enumerate(zip(xs, xs[1:], strict=False)):
        lift = skew if c == len(xs) - 2 else 0.0
        for y0, y1 in zip(ys, ys[1:], strict=False):
            top, bottom, right = y0 - lift, y1 - lift - gap, x1 - gap
            rules += [Segment(x0, top, right, top), Segment(x0, bottom, right, bottom),
                      Segment(x0, top, x0, bottom), Segment(right, top, right, bottom)]
    return rules


def test_cell_boxes_a_point_apart_keep_every_drawn_row_and_drop_empty_spacer_columns() -> None:
    # Columns: labels, figures, a narrow empty spacer, figures, notes; the notes' boxes sit 0.6 pt higher, so
    # their rules sort before the others' at each row line.
    xs = [0.0, 60.0, 100.0, 108.0, 148.0, 260.0]
    ys = [0.0, 14.0, 28.0, 42.0, 56.0]
    lines = [segment("2020", 62, 2), segment("2021", 110, 2), segment("Notes", 150, 2)]
    for row, label in enumerate(("North", "South", "East")):
        y = 16 + 14 * row
        lines += [segment(label, 2, y), segment(f"{row}1", 62, y), segment(f"{row}2", 110, y),
                  segment(f"note {row}", 150, y)]
    tables, rest = find_tables(lines, boxed_cells(xs, ys, 1.0, 0.6), 600, 10)
    assert len(tables) == 1 and rest == []
    rows = rows_of(tables[0].html or "")
    assert len(rows) == 4 and all(len(row) == 4 for row in rows)
    assert [text for _, text in rows[2]] == ["South", "11", "12", "note 1"]


def test_collinear_rules_either_side_of_a_rounding_boundary_keep_their_extent() -> None:
    from services.worker.engines.cpu.tables import _merge_collinear

    # The right-hand rule at y 13.4 sorts before the left-hand ones at y 13.9: the merged rule spans them all.
    merged = _merge_collinear([(13.4, 150.0, 260.0), (13.9, 0.0, 59.0), (13.9, 60.0, 149.0)])
    assert sorted((start, stop) for _, start, stop in merged) == [(0.0, 149.0), (150.0, 260.0)]
