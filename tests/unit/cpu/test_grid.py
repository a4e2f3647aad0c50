"""Table grids from boxes on synthetic geometry: columns, wrapped cells, group headers, sections, grouped labels,
and runs of prose that must not become tables."""

from __future__ import annotations

import re

from services.worker.engines.cpu.grid import build_grid, grid_html, text_rows
from services.worker.engines.cpu.model import Box, Line, Word
from services.worker.engines.cpu.tables import find_tables


def segment(text: str, x0: float, y0: float, *, height: float = 10.0, space: float = 3.0) -> Line:
    """A box of words at 5 points per character, as OCR or the text layer gives it."""
    words, cursor = [], x0
    for token in text.split():
        words.append(Word(token, Box(cursor, y0, cursor + 5 * len(token), y0 + height)))
        cursor += 5 * len(token) + space
    return Line(words, Box(x0, y0, cursor - space, y0 + height))


def rows_of(html: str) -> list[list[str]]:
    return [re.findall(r"<td([^>]*)>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]


def survey_table() -> list[Line]:
    """Two groups of answers under centred group headers, numbered statements wrapped over lines with their
    figures on the first line (a PubTabNet-style crop)."""
    lines = [segment("Doctors", 182, 0), segment("Patients", 302, 0)]  # centred over columns 1-3 and 4-6
    for index, x in enumerate((150, 190, 230, 270, 310, 350)):
        lines.append(segment(("no", "maybe", "yes")[index % 3], x, 20))
    statements = [["1. The drug works better than", "anything tried before"], ["2. It is safe"],
                  ["3. It should be used by", "every doctor in", "the country"]]
    y = 40.0
    for number, statement in enumerate(statements):
        for offset, text in enumerate(statement):
            lines.append(segment(text, 0, y + 9 * offset))
        for index, x in enumerate((150, 190, 230, 270, 310, 350)):
            lines.append(segment(f"{number + 1}{index}.5", x, y))
        y += 9 * len(statement) + 6
    return lines


def test_wrapped_row_labels_join_their_row_and_group_headers_span_their_columns() -> None:
    grid = build_grid(text_rows(survey_table()))
    assert grid is not None and grid.cols == 7 and grid.rows == 5 and grid.header_rows == 2
    rows = rows_of(grid_html(grid))
    assert rows[0] == [("", ""), (' colspan="3"', "Doctors"), (' colspan="3"', "Patients")]
    assert [text for _, text in rows[1]] == ["", "no", "maybe", "yes", "no", "maybe", "yes"]
    assert rows[2][0][1] == "1. The drug works better than anything tried before"
    assert rows[3][0][1] == "2. It is safe" and rows[3][1][1] == "20.5"
    assert rows[4][0][1] == "3. It should be used by every doctor in the country"
    assert [text for _, text in rows[4][1:]] == ["30.5", "31.5", "32.5", "33.5", "34.5", "35.5"]


def test_a_header_crossing_a_gap_does_not_merge_the_columns_under_it() -> None:
    lines = [segment("Year Ended", 118, 0)]  # sits over the middle column only
    lines += [segment("Jan 2025", 60, 12), segment("Jan 2024", 120, 12), segment("Jan 2023", 180, 12)]
    for row, label in enumerate(("Revenue", "Cost", "Total")):
        lines += [segment(label, 0, 30 + 12 * row)] + [segment(f"{row}{col},000", 60 + 60 * col, 30 + 12 * row)
                                                       for col in range(3)]
    grid = build_grid(text_rows(lines))
    assert grid is not None
    rows = rows_of(grid_html(grid))
    assert rows[0] == [("", ""), (' colspan="3"', "Year Ended")]
    assert [text for _, text in rows[3]] == ["Cost", "10,000", "11,000", "12,000"]


def test_section_rows_span_the_table_and_grouped_labels_span_their_rows() -> None:
    lines = [segment("metric", 0, 0), segment("model", 80, 0), segment("r2", 160, 0), segment("error", 220, 0)]
    y = 14.0
    for section in ("Whole country", "Urban"):
        lines.append(segment(section, 0, y))
        y += 14
        for metric in ("Wealth", "Income"):
            for index, model in enumerate(("CDR", "RS")):
                if index == 0:
                    lines.append(segment(metric, 0, y))
                lines += [segment(model, 80, y), segment(f"0.{index}1", 160, y), segment(f"{index}.52", 220, y)]
                y += 14
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.header_rows == 1
    rows = rows_of(grid_html(grid))
    assert rows[1] == [(' colspan="4"', "Whole country")]
    assert rows[2] == [(' rowspan="2"', "Wealth"), ("", "CDR"), ("", "0.01"), ("", "0.52")]
    assert rows[3] == [("", "RS"), ("", "0.11"), ("", "1.52")]  # the label's rowspan covers column 0
    assert rows[6] == [(' colspan="4"', "Urban")]


def test_a_wide_word_gap_inside_a_segment_is_cut_at_the_column_boundary() -> None:
    # The text layer split "1 Easy" but kept "22 Easy" (a narrower gap) as one segment.
    lines = []
    for row, (number, level) in enumerate([("1", "Easy"), ("2", "Normal"), ("3", "Hard"), ("4", "Easy"),
                                           ("5", "Normal"), ("6", "Hard")]):
        lines += [segment(number, 0, 12 * row), segment(level, 20, 12 * row), segment("0.5", 80, 12 * row)]
    for row, (number, level) in enumerate([("22", "Easy"), ("23", "Normal")]):
        lines += [segment(f"{number} {level}", 0, 72 + 12 * row, space=9), segment("0.7", 80, 72 + 12 * row)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.cols == 3
    assert [text for _, text in rows_of(grid_html(grid))[-1]] == ["23", "Normal", "0.7"]


def test_a_long_wrapped_label_at_the_end_stays_in_the_table() -> None:
    lines = []
    for row in range(4):
        lines += [segment(f"{row + 1}. Statement", 0, 20 * row), segment("1.5", 100, 20 * row),
                  segment("2.5", 140, 20 * row)]
    lines += [segment("which goes on", 0, 69), segment("for three", 0, 78), segment("more lines", 0, 87)]
    tables, rest = find_tables(lines, [], 300, 10.0)
    assert rest == [] and len(tables) == 1
    assert "4. Statement which goes on for three more lines</td><td>1.5</td>" in tables[0].html


def test_three_columns_of_running_text_with_short_lines_are_not_a_table() -> None:
    left = ["the city suddenly appeared in all", "its walls at the foot of", "cliffs and the sea below.",
            "ered time and war for so", "long that historians remain ignorant", "of its origins.",
            "they believe it may have grown", "out of an old city first", "mentioned long ago."]
    right = ["the city is rebuilding rapidly and", "repairing its roofs and clearing", "debris in March.",
             "only one hotel was open but", "several thousand beds are now", "available again.",
             "a few travel companies are returning", "and tours are scheduled for", "the fall season."]
    lines = []
    for row, (a, b) in enumerate(zip(left, right, strict=True)):
        lines += [segment(a, 0, 12 * row), segment(b, 400, 12 * row)]
        if row % 3 == 2:
            lines.append(segment("ROOFS DAMAGED", 240, 12 * row))  # a caption in the middle column
    tables, rest = find_tables(lines, [], 600, 10.0)
    assert tables == [] and len(rest) == len(lines)


def test_slanted_column_heads_above_a_table_become_its_header_row() -> None:
    from services.worker.engines.cpu.engine import lay_out
    from services.worker.engines.cpu.markdown import render

    lines = [segment("Paragraph text before the table that runs across the whole width of it all", 0, 0)]
    for row in range(5):
        lines += [segment(f"Task {row}", 0, 60 + 12 * row)] + [segment(f"0.{row}{col}", 100 + 40 * col, 60 + 12 * row)
                                                               for col in range(3)]
    # Text set at 45 degrees: each head's box is as tall as it is wide, one line of three words in content order.
    heads = [Word(name, Box(98 + 40 * col, 30, 122 + 40 * col, 54)) for col, name in enumerate(("Alpha", "Beta",
                                                                                              "Gamma"))]
    blocks = lay_out(lines, 400, 600, margin_lines=[Line(heads, Box(98, 30, 202, 54))])
    markdown = render(blocks)
    assert "<td>Alpha</td><td>Beta</td><td>Gamma</td>" in markdown
    assert markdown.count("Alpha") == 1


def test_two_column_heads_in_one_run_are_parted_at_the_body_gutter() -> None:
    # "Number Margin of" is one run of the text layer: the space after "Number" is wider than the run's own
    # word space and lies in the gutter between the first two figure columns.
    joined = Line([Word("Number", Box(60, 0, 90, 10)), Word("Margin", Box(96, 0, 126, 10)),
                   Word("of", Box(129, 0, 139, 10))], Box(60, 0, 139, 10))
    lines = [segment("Item", 0, 0), joined]
    for row, label in enumerate(("Cats", "Dogs", "Birds")):
        lines += [segment(label, 0, 15 + 12 * row), segment(f"{row}1,000", 60, 15 + 12 * row),
                  segment(f"{row}22", 125, 15 + 12 * row)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.cols == 3
    assert [text for _, text in rows_of(grid_html(grid))[0]] == ["Item", "Number", "Margin of"]


def test_a_header_run_with_even_word_spaces_is_not_parted() -> None:
    # The same geometry with one even word space throughout: a heading over both columns, kept whole.
    lines = [segment("Item", 0, 0), segment("Total amount of", 60, 0, space=6.0)]
    for row, label in enumerate(("Cats", "Dogs", "Birds")):
        lines += [segment(label, 0, 15 + 12 * row), segment(f"{row}1,000", 60, 15 + 12 * row),
                  segment(f"{row}22", 125, 15 + 12 * row)]
    grid = build_grid(text_rows(lines))
    assert grid is not None
    assert "Total amount of" in [text for _, text in rows_of(grid_html(grid))[0]]


def test_a_stub_head_on_the_last_header_line_spans_up_over_the_header() -> None:
    lines = [segment("2024", 80, 0), segment("Region", 0, 12), segment("Sold", 60, 12), segment("Kept", 120, 12)]
    for row, label in enumerate(("North", "South", "East")):
        lines += [segment(label, 0, 27 + 12 * row), segment(f"{row}10", 60, 27 + 12 * row),
                  segment(f"{row}20", 120, 27 + 12 * row)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.header_rows == 2
    assert rows_of(grid_html(grid))[0][0] == (' rowspan="2"', "Region")


def test_a_note_set_apart_above_a_table_stays_text() -> None:
    note = segment("(Thousands)", 0, 0)
    lines = [note, segment("2024", 60, 20), segment("Region", 0, 32), segment("Sold", 60, 32),
             segment("Kept", 120, 32)]
    for row, label in enumerate(("North", "South", "East")):
        lines += [segment(label, 0, 45 + 12 * row), segment(f"{row}10", 60, 45 + 12 * row),
                  segment(f"{row}20", 120, 45 + 12 * row)]
    tables, rest = find_tables(lines, [], 600, 10)
    assert len(tables) == 1 and note in rest
    assert "Thousands" not in (tables[0].html or "")
    # Set at the header's own line pitch, the same line is the table's first header row.
    close = segment("(Thousands)", 0, 8)
    tables, rest = find_tables([close, *lines[1:]], [], 600, 10)
    assert len(tables) == 1 and close not in rest


def test_the_last_line_of_a_caption_over_a_table_stays_text() -> None:
    caption = segment("Table 2: Persons employed by sector and", 0, 0)
    tail = segment("gender (in %)", 45, 13)  # the caption's second line, under its text after "Table 2:"
    lines = [caption, tail, segment("Farms", 60, 32), segment("Shops", 120, 32)]
    for row, label in enumerate(("Men", "Women", "Total")):
        lines += [segment(label, 0, 45 + 12 * row), segment(f"{row}1.5", 60, 45 + 12 * row),
                  segment(f"{row}2.5", 120, 45 + 12 * row)]
    tables, rest = find_tables(lines, [], 600, 10)
    assert len(tables) == 1 and tail in rest and caption in rest
    assert "gender" not in (tables[0].html or "")
    # The same short line with no caption over it heads the table.
    tables, rest = find_tables(lines[1:], [], 600, 10)
    assert len(tables) == 1 and tail not in rest


def test_column_heads_holding_an_age_band_among_words_are_still_the_header() -> None:
    lines = [segment("Women", 60, 0), segment("Men", 120, 0), segment("15-24", 180, 0)]
    for row, label in enumerate(("1995", "2000", "2005")):
        lines += [segment(label, 0, 15 + 12 * row)] + [segment(f"{row}{col}.5", 60 + 60 * col, 15 + 12 * row)
                                                       for col in range(3)]
    grid = build_grid(text_rows(lines))
    assert grid is not None and grid.header_rows == 1
    assert "<thead><tr><td></td><td>Women</td><td>Men</td><td>15-24</td></tr></thead>" in grid_html(grid)


def test_a_caption_line_flush_with_the_caption_stays_text_despite_rounding() -> None:
    caption = segment("Table 3. Continued. Persons by sector", 0, 0)
    tail = segment("United States, 2009", -0.01, 12)  # flush left, a hair off in the text layer's coordinates
    lines = [caption, tail, segment("Farms", 100, 24), segment("Shops", 200, 24)]
    for row, label in enumerate(("Men", "Women", "Total")):
        lines += [segment(label, 0, 43 + 12 * row), segment(f"{row}1.5", 100, 43 + 12 * row),
                  segment(f"{row}2.5", 200, 43 + 12 * row)]
    tables, rest = find_tables(lines, [], 600, 10)
    assert len(tables) == 1 and tail in rest


def test_notes_under_a_table_stay_text() -> None:
    lines = [segment("Farms", 100, 0), segment("Shops", 200, 0)]
    for row, label in enumerate(("Men", "Women", "Total")):
        lines += [segment(label, 0, 13 + 12 * row), segment(f"{row}1.5", 100, 13 + 12 * row),
                  segment(f"{row}2.5", 200, 13 + 12 * row)]
    key = [segment("(:)", 0, 50), segment("Not available.", 30, 50)]
    note = [segment("NB:", 0, 62), segment("Rates are shares of the labour force.", 30, 62)]
    tables, rest = find_tables(lines + key + note, [], 600, 10)
    assert len(tables) == 1 and all(line in rest for line in key + note)
    assert "available" not in (tables[0].html or "")
    # A last body row whose label is a word, not a key, stays in the table.
    other = [segment("Other", 0, 50), segment("n/a", 100, 50)]
    tables, rest = find_tables(lines + other, [], 600, 10)
    assert len(tables) == 1 and "Other" in (tables[0].html or "")
