"""`table_order_disorder`: a text-layer table of page columns whose producer wrote each column down, read across as
one table's rows, leaves about half of its producer's jumps unread on; a table of wide columns written row by row
and a table of narrow columns written column by column score 0; the penalty only moves the confidence and a refit
adds it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core.elements import BBox, Element, ElementType
from services.worker.engines.base import PageOutput, PageWord
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.confidence import structure_signals
from services.worker.engines.cpu.pagecolumns import content_order, table_readings
from services.worker.engines.cpu.routes import Held, settle
from tests.unit.cpu.test_table_flow import assert_paid
from tests.unit.cpu.test_table_gutter import CHAR, LINE, box

Run = tuple[str, BBox]


def test_jumps_the_output_writes_one_after_the_other_are_read_on() -> None:
    runs = ["the quick brown", "fox jumps over", "the lazy dog"]
    assert content_order(runs, ["the quick brown fox jumps over the lazy dog"]) == (2, 2)
    assert content_order(runs, ["the lazy dog", "the quick brown fox jumps over"]) == (1, 2)


def test_a_hyphenated_word_rejoined_and_a_line_number_between_are_read_on() -> None:
    assert content_order(["a deposi-", "tion here"], ["a deposition here"]) == (1, 1)
    runs = ["first line ends", "second line starts"]
    assert content_order(runs, ["first line ends 12 second line starts"]) == (0, 1)
    assert content_order(runs, ["first line ends 12 second line starts"], reach=2) == (1, 1)


def test_a_jump_to_a_word_the_output_does_not_write_is_not_counted() -> None:
    assert content_order(["kept words", "dropped footer"], ["kept words"]) == (0, 0)


def entries(x: float, y: float, rows: int, start: int) -> list[list[PageWord]]:
    """A page column of `rows` entries, each a line of a four-word description and a two-word syntax 30
    characters across; every word of the card its own (`w<n>`)."""
    lines = []
    for row in range(rows):
        number = start + 6 * row
        words = [PageWord(f"w{number + n}", (x + CHAR * 6 * n, y + row * LINE, x + CHAR * (6 * n + 5),
                                             y + row * LINE + 10.0)) for n in range(4)]
        words += [PageWord(f"w{number + 4 + n}", (x + CHAR * (30 + 6 * n), y + row * LINE,
                                                  x + CHAR * (30 + 6 * n + 5), y + row * LINE + 10.0))
                  for n in range(2)]
        lines.append(words)
    return lines


def runs_of(lines: list[list[PageWord]]) -> list[Run]:
    """Each line's description and its syntax, two runs (the gap between them is no glyph's width)."""
    found: list[Run] = []
    for words in lines:
        for part in (words[:4], words[4:]):
            found.append((" ".join(w.text for w in part), box(part)))
    return found


def card(columns: int = 2, rows: int = 30) -> list[list[list[PageWord]]]:
    """Page columns side by side, 20 pt apart, one section each (no heading, no blank line to break at)."""
    return [entries(40 + n * (CHAR * 42 + 20), 60, rows, 1000 * n) for n in range(columns)]


def across(page: list[list[list[PageWord]]]) -> list[PageWord]:
    """The card's words read across, as one table's rows: line by line, left to right."""
    return [w for row in zip(*page, strict=True) for line in row for w in line]


def table(words: list[PageWord]) -> Element:
    text = " ".join(w.text for w in words)
    return Element(id="p1-e1", type=ElementType.TABLE, page=1, bbox=box(words), text=text, markdown=text,
                   html="<table><tr><td>x</td><td>y</td></tr></table>")


def test_page_columns_written_down_and_read_across_leave_half_the_jumps_unread() -> None:
    page = card()
    words = across(page)
    down = [run for column in page for run in runs_of(column)]  # the producer wrote each page column down
    [reading] = table_readings([table(words)], words, runs=down).readings
    assert reading.breaks == 0  # one section each: no section break tells them
    assert 0.45 <= reading.disorder <= 0.55  # description → syntax is read on, syntax → the next entry is not
    assert reading.disordered  # at least `TABLE_ORDER_MIN_DISORDER`
    signals = structure_signals([table(words)], table_readings([table(words)], words, runs=down))
    assert signals["table_order_disorder"] == reading.disorder and signals["table_order_share"] == 1.0


def test_a_table_of_wide_columns_written_row_by_row_reads_in_order() -> None:
    page = card()
    words = across(page)
    rows = [run for row in zip(*page, strict=True) for line in row for run in runs_of([line])]
    [reading] = table_readings([table(words)], words, runs=rows).readings
    assert reading.disorder == 0.0
    assert "table_order_disorder" not in structure_signals([table(words)],
                                                           table_readings([table(words)], words, runs=rows))


def test_a_table_of_narrow_columns_written_column_by_column_is_not_asked() -> None:
    figures = [[PageWord(f"{column}{row:03d}", (40 + 60 * column, 60 + LINE * row, 60 + 60 * column,
                                                70 + LINE * row)) for row in range(30)] for column in range(5)]
    words = [w for row in zip(*figures, strict=True) for w in row]
    down = [(w.text, w.bbox) for column in figures for w in column]
    [reading] = table_readings([table(words)], words, runs=down).readings
    assert reading.disorder == 0.0


def test_a_page_without_runs_or_with_too_few_jumps_scores_0() -> None:
    page = card(rows=3)
    words = across(page)
    down = [run for column in page for run in runs_of(column)]
    assert table_readings([table(words)], words).readings[0].disorder == 0.0  # an OCR page has no runs
    assert len(down) - 1 < tuning.TABLE_ORDER_MIN_JUMPS
    assert table_readings([table(words)], words, runs=down).readings[0].disorder == 0.0


def test_the_penalty_moves_only_the_confidence_and_the_fit_adds_it_back(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    page = card()
    words = across(page)
    down = [run for column in page for run in runs_of(column)]
    tree = [table(words)]

    def read(weight: float) -> PageOutput:
        monkeypatch.setattr(tuning, "TABLE_ORDER_PENALTY", weight)
        output = PageOutput(markdown=tree[0].markdown, engine="cpu", confidence=0.97, elements=list(tree),
                            words=list(words))
        return settle(output, Held(layer_words=len(words)), ink=None, runs=down)

    from pagemill_eval.order_fit import RECORDED

    before = read(0.0)
    assert before.confidence == 0.97
    assert_paid(RECORDED, before, read(0.6), 0.6, tmp_path)  # the table pays it
    assert read(5.0).confidence == 0.0  # never below 0
