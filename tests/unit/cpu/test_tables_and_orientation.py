"""Tables from boxes and page orientation from line shapes, on synthetic geometry."""

from __future__ import annotations

import re

import numpy as np

from services.worker.engines.cpu.confidence import agreement, ocr_confidence, ocr_signals
from services.worker.engines.cpu.model import Box, Line, Segment, Word
from services.worker.engines.cpu.ocr import needs_quarter_turn, upside_down_vote
from services.worker.engines.cpu.tables import Cell, Grid, find_tables, grid_html


def segment(text: str, x0: float, y0: float, x1: float | None = None) -> Line:
    width = 5.0 * len(text) if x1 is None else x1 - x0
    words, cursor = [], x0
    for token in text.split():
        words.append(Word(token, Box(cursor, y0, cursor + 5 * len(token), y0 + 10)))
        cursor += 5 * len(token) + 3
    return Line(words, Box(x0, y0, x0 + width, y0 + 10))


def cells_of(html: str) -> list[list[str]]:
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]


def test_grid_html_writes_spans_and_fills_uncovered_positions() -> None:
    grid = Grid(rows=3, cols=3, header_rows=1, cells=[
        Cell(0, 0, "Name", rowspan=2), Cell(0, 1, "Year", colspan=2), Cell(1, 1, "2009"), Cell(1, 2, "2010"),
        Cell(2, 0, "A&B"), Cell(2, 2, "7"),
    ])
    html = grid_html(grid)
    assert '<td rowspan="2">Name</td><td colspan="2">Year</td>' in html
    assert "<tr><td>2009</td><td>2010</td></tr>" in html  # row 1: column 0 is covered by the rowspan
    assert "<tr><td>A&amp;B</td><td></td><td>7</td></tr>" in html
    assert html.startswith("<table><thead>")


def test_aligned_segments_become_a_table_with_a_spanning_header() -> None:
    lines = [segment("Some paragraph text above the table that runs across the page", 50, 20, 560)]
    lines.append(segment("Fused aluminum oxide", 240, 60, 400))  # centred over the two year columns
    lines.append(segment("Country", 50, 75))
    lines.append(segment("2009", 250, 75))
    lines.append(segment("2010", 350, 75))
    for row, (name, a, b) in enumerate([("Brazil", "50,000", "51,000"), ("China", "700,000", "710,000"),
                                        ("France", "40,000", "41,000"), ("Japan", "25,000", "26,000")]):
        y = 90 + 15 * row
        lines += [segment(name, 50, y), segment(a, 250, y), segment(b, 350, y)]
    tables, rest = find_tables(lines, [], 612, 10.0)
    assert len(tables) == 1
    assert [line.text for line in rest] == ["Some paragraph text above the table that runs across the page"]
    rows = cells_of(tables[0].html)
    # The stub head under nothing, beside a group header over all the year columns, spans the header's rows.
    assert rows[0] == ["Country", "Fused aluminum oxide"] and 'colspan="2">Fused aluminum oxide' in tables[0].html
    assert '<td rowspan="2">Country</td>' in tables[0].html
    assert rows[1] == ["2009", "2010"]
    assert rows[3] == ["China", "700,000", "710,000"]


def test_two_prose_columns_are_not_a_table() -> None:
    lines = []
    for row in range(6):
        lines.append(segment("words of the left column keep running on here", 50, 100 + 14 * row, 280))
        lines.append(segment("and the right column has its own prose too", 310, 100 + 14 * row, 560))
    tables, rest = find_tables(lines, [], 612, 10.0)
    assert tables == [] and len(rest) == 12


def test_ruled_grid_with_a_missing_border_becomes_a_colspan() -> None:
    ys = [100, 120, 140]
    rules = [Segment(50, y, 350, y) for y in ys]
    rules += [Segment(x, 100, x, 140) for x in (50, 350)]
    rules += [Segment(150, 120, 150, 140), Segment(250, 100, 250, 140)]  # no border at x=150 in the first row
    lines = [segment("Heading across", 110, 105), segment("Other", 260, 105),  # "across" runs over x=150
             segment("a", 60, 125), segment("b", 160, 125), segment("c", 260, 125)]
    tables, rest = find_tables(lines, rules, 612, 10.0, min_rows=3)
    assert rest == [] and len(tables) == 1
    assert 'colspan="2">Heading across</td>' in tables[0].html
    assert cells_of(tables[0].html)[-1] == ["a", "b", "c"]


def quad(x: float, y: float, w: float, h: float) -> np.ndarray:
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], dtype=np.float32)


def test_a_page_of_tall_text_lines_lies_on_its_side() -> None:
    upright = [quad(50, 40 * i, 400, 20) for i in range(10)]
    sideways = [quad(40 * i, 50, 20, 400) for i in range(10)]
    assert not needs_quarter_turn(upright)
    assert needs_quarter_turn(sideways)
    assert not needs_quarter_turn([quad(0, 0, 5, 5)])  # specks decide nothing


def test_upside_down_vote_weighs_the_classifier_scores() -> None:
    assert upside_down_vote([("180", 0.99), ("180", 0.95), ("0", 0.6)])
    assert not upside_down_vote([("0", 0.99), ("180", 0.55), ("0", 0.9)])
    assert not upside_down_vote([])


def test_confidence_signals() -> None:
    assert agreement("the quick brown fox", "The quick brown fox") == 1.0
    assert agreement("the quick brown fox", "zzz yyy") == 0.0
    blank = ocr_signals([], [], 0)
    assert ocr_confidence(blank) == 0.9
    good = ocr_signals([0.99, 0.98], ["a line", "another"], 2)
    poor = ocr_signals([0.55, 0.6], ["a line", "another"], 6)
    assert 0 <= ocr_confidence(poor) < ocr_confidence(good) <= 1
