"""What the rules of a drawn table leave open (a label column beside the grid, a column only the row rules run
on to, header cells without rules between them), three-level headers among lines, and cell text over lines."""

from __future__ import annotations

from services.worker.engines.cpu.bidi import join_lines
from services.worker.engines.cpu.grid import build_grid, grid_html, text_rows
from services.worker.engines.cpu.model import Box, Line, Segment, Word
from services.worker.engines.cpu.tables import find_tables
from tests.unit.cpu.test_grid import rows_of, segment

LABELS = ("Salaries", "Rent", "Travel", "Phone", "Total")


def texts(html: str | None) -> list[list[str]]:
    return [[text for _, text in row] for row in rows_of(html or "")]


def figures_grid(top: float, xs: list[float], row_rules_from: float) -> tuple[list[Line], list[Segment]]:
    """A header row and five rows of three figures in drawn cells (columns at `xs`), row labels at x 0; the
    horizontal rules start at `row_rules_from`."""
    ys = [top + 14 * row for row in range(7)]
    lines = [segment(head, x + 4, ys[0] + 2) for head, x in zip(("2019", "2020", "2021"), xs, strict=False)]
    for row, label in enumerate(LABELS):
        y = ys[row + 1] + 2
        lines.append(segment(label, 0, y))
        lines += [segment(f"{row}{col},5", x + 4, y) for col, x in enumerate(xs[:3])]
    rules = [Segment(x, ys[0], x, ys[-1]) for x in xs] + [Segment(row_rules_from, y, xs[-1], y) for y in ys]
    return lines, rules


def test_row_labels_beside_a_grid_that_draws_only_the_figures_become_its_first_column() -> None:
    # The labels end 70 points left of the grid: further than a column's width.
    lines, rules = figures_grid(0, [120, 170, 220, 270], row_rules_from=120)
    tables, rest = find_tables(lines, rules, 400, 10.0)
    assert len(tables) == 1 and rest == []
    rows = texts(tables[0].html)
    assert rows[0] == ["", "2019", "2020", "2021"] and rows[1] == ["Salaries", "00,5", "01,5", "02,5"]
    assert [row[0] for row in rows[1:]] == list(LABELS)


def test_a_column_only_the_row_rules_run_on_to_is_part_of_the_grid() -> None:
    lines, rules = figures_grid(0, [120, 170, 220, 270], row_rules_from=-4)
    tables, _ = find_tables(lines, rules, 400, 10.0)
    assert len(tables) == 1
    assert [row[0] for row in texts(tables[0].html)[1:]] == list(LABELS)


def test_prose_beside_a_drawn_grid_is_no_label_column() -> None:
    lines, rules = figures_grid(0, [120, 170, 220, 270], row_rules_from=120)
    lines = [line for line in lines if line.box.x0 >= 100]
    lines.append(segment("a line of running text beside the table", 0, 30))
    tables, rest = find_tables(lines, rules, 400, 10.0)
    assert len(tables) == 1 and [line.text for line in rest] == ["a line of running text beside the table"]
    assert texts(tables[0].html)[0] == ["2019", "2020", "2021"]


def test_a_header_in_a_drawn_row_without_column_rules_spans_the_empty_cells_beside_it() -> None:
    xs = [0.0, 60.0, 100.0, 140.0, 180.0, 220.0]
    ys = [0.0, 14.0, 28.0, 42.0, 56.0, 70.0]
    lines = [segment("Region", 2, 16), segment("Finland", 105, 2)]
    lines += [segment(head, x + 2, 16) for head, x in zip(("Men", "Women", "Men", "Women"), xs[1:], strict=False)]
    for row, label in enumerate(("North", "South", "East")):
        lines += [segment(label, 2, 30 + 14 * row)] + [segment(f"{row}.{col}", x + 2, 30 + 14 * row)
                                                      for col, x in enumerate(xs[1:-1])]
    # Column rules everywhere but in the top row, where only the outer edges and the stub's edge are drawn.
    rules = [Segment(0, y, 220, y) for y in ys]
    rules += [Segment(x, 0, x, 70) for x in (0.0, 60.0, 220.0)]
    rules += [Segment(x, 14, x, 70) for x in (100.0, 140.0, 180.0)]
    tables, _ = find_tables(lines, rules, 400, 10.0)
    assert len(tables) == 1
    rows = rows_of(tables[0].html or "")
    assert (' colspan="4"', "Finland") in rows[0]
    assert [text for _, text in rows[2]] == ["North", "0.0", "0.1", "0.2", "0.3"]


def spread(text: str, x0: float, x1: float, y: float) -> Line:
    """A segment set from `x0` to `x1` (a proportional font: widths not 5 points a character)."""
    tokens = text.split()
    step = (x1 - x0) / len(tokens)
    words = [Word(token, Box(x0 + i * step, y, x0 + (i + 1) * step - 2, y + 7.6)) for i, token in enumerate(tokens)]
    return Line(words, Box(x0, y, words[-1].box.x1, y + 7.6))


def test_a_three_level_header_nests_each_group_inside_the_one_above() -> None:
    # A year over a column of its own ("total ... units", set on two lines) and a group over four columns; the
    # year stands over one of the columns, off its centre, but centred over all five (a report's real geometry).
    columns = [(144.8, 167.0), (191.6, 209.7), (220.0, 234.4), (262.1, 274.2), (307.9, 336.1)]
    lines = [spread("2007", 228.4, 245.5, 90.2), spread("Inadequate housing units", 222.2, 310.7, 109.4),
             spread("total occupied", 130.3, 180.7, 114.5), spread("Characteristic", 36.4, 83.9, 123.5),
             spread("housing units", 131.9, 179.1, 123.5), spread("no.", 193.8, 205.4, 123.5),
             spread("(%)", 221.4, 234.4, 123.5), spread("Unadjusted OR", 262.0, 294.2, 123.5),
             spread("(95% CI)", 307.7, 336.3, 123.5)]
    for row, label in enumerate(("Male", "Female", "Hispanic", "Other")):
        y = 149.4 + 11.8 * row
        lines.append(spread(label, 42.4, 70.0, y))
        figures = (f"{row + 6}1,206", f"{row + 2},862", f"({row}.7)", f"1.{row}", f"(1.{row}–1.9)")
        lines += [spread(text, x0, x1, y) for text, (x0, x1) in zip(figures, columns, strict=False)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.header_rows == 3
    rows = rows_of(grid_html(grid))
    assert rows[0] == [(' rowspan="3"', "Characteristic"), (' colspan="5"', "2007")]
    assert rows[1] == [(' rowspan="2"', "total occupied housing units"), (' colspan="4"', "Inadequate housing units")]
    assert [text for _, text in rows[2]] == ["no.", "(%)", "Unadjusted OR", "(95% CI)"]


def test_a_long_first_column_label_on_its_own_line_stays_in_the_table() -> None:
    # A label wrapped over two lines with its figure on the second, the first line longer than half the text.
    lines = [segment("Program", 0, 0), segment("Budget", 380, 0), segment("Performance", 0, 20),
             segment("$1.1M", 380, 20), segment("Federal Risk Authorization and Management Program", 0, 40),
             segment("(FedRAMP)", 0, 50), segment("$0.3M", 380, 50), segment("Data.gov", 0, 70),
             segment("$0.9M", 380, 70), segment("Total", 0, 90), segment("$2.3M", 380, 90)]
    tables, rest = find_tables(lines, [], 420, 10.0)
    assert len(tables) == 1 and rest == []
    rows = texts(tables[0].html)
    assert rows[2] == ["Federal Risk Authorization and Management Program (FedRAMP)", "$0.3M"] and len(rows) == 5


def test_a_hyphen_at_a_cell_line_end_joins_the_word_and_stays_before_a_capital() -> None:
    assert join_lines("Murder / Non-", "Negligent") == "Murder / Non-Negligent"
    assert join_lines("experi-", "ment") == "experiment"
    assert join_lines("1990 -", "Present") == "1990 - Present"
    assert join_lines("Total", "population") == "Total population"


def test_a_boxed_sentence_under_a_drawn_table_stays_out_of_its_grid() -> None:
    note = "Exhibit reads: thirty-four percent of the schools were small"
    lines = [segment("Size", 0, 0), segment("Share", 100, 0)]
    for row, (size, share) in enumerate((("Small", "34%"), ("Medium", "11%"), ("Large", "2%"))):
        lines += [segment(size, 0, 20 + 20 * row), segment(share, 100, 20 + 20 * row)]
    lines.append(segment(note, 0, 80))
    rules = [Segment(-5, y, 400, y) for y in (-5, 15, 35, 55, 75, 95)]
    rules += [Segment(-5, -5, -5, 95), Segment(400, -5, 400, 95), Segment(90, -5, 90, 75)]  # none in the note
    tables, rest = find_tables(lines, rules, 400, 10.0)
    assert len(tables) == 1 and [line.text for line in rest] == [note]
    assert texts(tables[0].html) == [["Size", "Share"], ["Small", "34%"], ["Medium", "11%"], ["Large", "2%"]]


def test_a_caption_with_its_number_set_apart_and_the_tables_unit_stay_out_of_its_header() -> None:
    lines = [segment("Table 16.", 0, 0), segment("Teachers and new hires by control of", 60, 0),
             segment("school: 1996 to 2021", 60, 11), segment("[In thousands]", 120, 23),
             segment("Year", 0, 37), segment("Teachers", 100, 37), segment("Hires", 200, 37)]
    for row in range(4):
        y = 51 + 12 * row
        lines += [segment(f"199{row}", 0, y), segment(f"3,0{row}1", 100, y), segment(f"30{row}", 200, y)]
    tables, rest = find_tables(lines, [], 400, 10.0)
    assert len(tables) == 1
    assert [line.text for line in rest] == ["Table 16.", "Teachers and new hires by control of",
                                            "school: 1996 to 2021", "[In thousands]"]
    assert texts(tables[0].html)[0] == ["Year", "Teachers", "Hires"]


def test_heads_wrapped_over_two_header_lines_are_one_cell_each() -> None:
    # Every head of the second line sits under one of the first: the second line is more of them.
    lines = [segment("Status", 0, 0), segment("Sample", 100, 0), segment("Weighted", 200, 0),
             segment("size", 100, 11), segment("Percent", 200, 11)]
    for row, label in enumerate(("Total", "Interviewed", "Examined")):
        y = 25 + 12 * row
        lines += [segment(label, 0, y), segment(f"{row}9695", 100, y), segment(f"{row}8.2", 200, y)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.header_rows == 1
    assert texts(grid_html(grid))[0] == ["Status", "Sample size", "Weighted Percent"]
    # Under group heads with a level of their own, only a head that reads on joins the one above ("Total"
    # over "population"), and spans down over the emptied position.
    lines = [segment("Age", 0, 0), segment("White", 110, 0), segment("Black", 210, 0), segment("Total", 300, 0)]
    lines += [segment(head, x, 11) for head, x in (("Male", 80), ("Female", 130), ("Male", 180), ("Female", 230),
                                                    ("population", 290))]
    for row in range(3):
        y = 25 + 12 * row
        lines += [segment(f"{row}-9", 0, y)] + [segment(f"{row}{col},1", x, y)
                                                for col, x in enumerate((80, 130, 180, 230, 300))]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.header_rows == 2
    rows = rows_of(grid_html(grid))
    assert rows[0][-1] == (' rowspan="2"', "Total population")
    assert [text for _, text in rows[1]] == ["Male", "Female", "Male", "Female"]


def test_heads_wrapped_over_three_lines_keep_every_word() -> None:
    lines = [segment("Status", 0, 0), segment("Sample", 100, 0), segment("Weighted", 200, 0),
             segment("size", 100, 11), segment("Percent", 200, 11), segment("Overall", 200, 22)]
    for row, label in enumerate(("Total", "Interviewed", "Examined")):
        y = 36 + 12 * row
        lines += [segment(label, 0, y), segment(f"{row}9695", 100, y), segment(f"{row}8.2", 200, y)]
    grid = build_grid(text_rows(lines))
    assert grid is not None
    html = grid_html(grid)
    # The third line joins no head that an earlier line has already joined (its words would be lost).
    assert all(word in html for word in ("Sample", "size", "Weighted", "Percent", "Overall"))
    assert texts(html)[0] == ["Status", "Sample size", "Weighted Percent"]
