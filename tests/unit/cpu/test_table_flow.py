"""`table_flow_share`: page columns with their own section breaks, taken for one table that is the whole page (a
reference card), score their words; real tables (blank rows across the grid, a long cell beside short ones, a
sparse grid of figures) score 0; the penalty on it only moves the confidence and a refit adds it back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagemill_eval.confidence_fit import Row
from pagemill_eval.one_penalty import Recorded
from services.core.elements import ElementType
from services.worker.engines.base import PageOutput, PageWord
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.confidence import structure_signals
from services.worker.engines.cpu.pagecolumns import table_flow_breaks, table_flow_share, table_readings
from services.worker.engines.cpu.routes import Held, settle
from services.worker.engines.geometry import Box, pixel_map, rounded, upright_map
from tests.unit.cpu.test_table_gutter import CHAR, LINE, PROSE, box, column, element, line_words


def flow(x: float, y: float, lines: int, blanks: set[int], width_chars: int = 44, start: int = 0) -> list[PageWord]:
    """A page column `lines` lines tall of prose lines `width_chars` wide from (x, y), leaving the lines `blanks`
    empty (a blank line before each of its headings)."""
    return column(x, y, lines, width_chars, start, frozenset(blanks))


def card(blanks: tuple[set[int], ...]) -> list[PageWord]:
    """Page columns side by side on one line pitch, 20 pt apart, each with its own blank lines."""
    return [w for n, column_blanks in enumerate(blanks)
            for w in flow(40 + n * (44 * CHAR + 20), 60, 40, column_blanks, start=5 * n)]


def test_a_card_read_as_one_table_scores_every_word() -> None:
    words = card(({6, 19, 31}, {11, 25}, {4, 16, 28, 35}))
    assert table_flow_breaks([w.bbox for w in words]) >= tuning.TABLE_FLOW_MIN_BREAKS
    tree = [element(ElementType.TABLE, words, 1)]
    assert table_flow_share(tree, words) == (1.0, table_flow_breaks([w.bbox for w in words]))
    signals = structure_signals(tree, table_readings(tree, words))
    assert signals["table_flow_share"] == 1.0 and signals["table_flow_breaks"] >= 2


def test_columns_that_break_at_the_same_lines_are_rows_of_one_table() -> None:
    same = {6, 19, 31}
    words = card((same, same, same))
    assert table_flow_breaks([w.bbox for w in words]) == 0


def test_one_break_each_way_is_enough_only_where_no_producer_order_tells() -> None:
    words = card(({6}, {11}))
    assert table_flow_breaks([w.bbox for w in words]) == 1
    tree = [element(ElementType.TABLE, words, 1)]
    runs = [(w.text, w.bbox) for w in words]  # a text layer's runs: its producer's order asks the table too
    assert table_flow_share(tree, words, runs)[0] == 0.0
    assert table_flow_share(tree, words)[0] == 1.0  # read by OCR, the break is all there is to tell it
    same = card(({6}, {6}))  # breaking at the same line: a blank row across the table
    assert table_flow_share([element(ElementType.TABLE, same, 1)], same)[0] == 0.0


def test_a_long_cell_beside_short_ones_leaves_blanks_only_in_the_narrow_columns() -> None:
    words: list[PageWord] = []
    y = 60.0
    for row, (label, lines) in enumerate((("alpha", 3), ("beta", 1), ("gamma", 4), ("delta", 2), ("eps", 3))):
        words += line_words(label, 40, y)
        words += line_words(f"{row}.5", 110, y + (lines - 1) * LINE)  # a figure set at the cell's foot
        words += flow(160, y, lines, set(), start=row * 3)
        y += (lines + 1) * LINE
    assert table_flow_breaks([w.bbox for w in words]) == 0


def test_a_sparse_grid_of_figures_scores_0() -> None:
    words: list[PageWord] = []
    for row in range(16):
        words += line_words(f"item {row}", 40, 60 + row * LINE)
        for n, x in enumerate((160, 220, 280, 340)):
            if (row + n) % 3:  # each column empty at its own rows
                words += line_words(f"{row * 7 + n}.{n}", x, 60 + row * LINE)
    assert table_flow_breaks([w.bbox for w in words]) == 0


def test_a_page_without_a_table_records_no_flow_and_without_words_none() -> None:
    words = card(({6, 19}, {11, 25}))
    paragraph = [element(ElementType.PARAGRAPH, words, 1)]
    assert "table_flow_share" not in structure_signals(paragraph, table_readings(paragraph, words))
    assert "table_flow_share" not in structure_signals([element(ElementType.TABLE, words, 1)])


def test_the_penalty_moves_only_the_confidence_and_the_fit_adds_it_back(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    words = card(({6, 19, 31}, {11, 25}, {4, 16, 28, 35}))
    tree = [element(ElementType.TABLE, words, 1)]
    markdown = tree[0].markdown

    def read(weight: float) -> PageOutput:
        monkeypatch.setattr(tuning, "TABLE_FLOW_PENALTY", weight)
        page = PageOutput(markdown=markdown, engine="cpu", confidence=0.97, elements=list(tree), words=list(words))
        return settle(page, Held(layer_words=len(words)), ink=None)

    from pagemill_eval.flow_fit import RECORDED

    assert_paid(RECORDED, read(0.0), read(0.6), 0.6, tmp_path)  # the table, the page's one block, pays it
    assert read(5.0).confidence == 0.0  # never below 0


def assert_paid(recorded: Recorded, before: PageOutput, after: PageOutput, weight: float, tmp_path: Path) -> None:
    """`after`, read with the penalty at `weight` where `before` was read at 0, took `weight` off the page (recorded
    as `recorded.taken`) and off each of its blocks and changed nothing else; its fit reads it back as `before`."""
    assert before.signals[recorded.feature] == 1.0 and recorded.taken not in before.signals
    assert after.signals[recorded.taken] == pytest.approx(weight, abs=1e-4)
    assert after.confidence == pytest.approx((before.confidence or 0.0) - weight, abs=1e-4)
    assert after.markdown == before.markdown
    for was, now in zip(before.elements, after.elements, strict=True):
        assert now.model_copy(update={"confidence": was.confidence}) == was
        assert now.confidence == pytest.approx((was.confidence or 0.0) - weight, abs=1e-4)
    rows = saved_rows(recorded, after, tmp_path)
    assert [page[0] for page in rows[0].pages] == [before.confidence]  # read as the engine without the penalty
    assert rows[0].features[recorded.feature] == 1.0


def saved_rows(recorded: Recorded, page: PageOutput, tmp_path: Path) -> list[Row]:
    """`page` saved as `pagemill eval --save-outputs` saves a one-page case (text similarity 0.3), read by
    `recorded` as its fit reads it."""
    saved = {"pages": [page.markdown], "confidences": [page.confidence], "signals": [page.signals],
             "warnings": [[]]}
    (tmp_path / "c1.json").write_text(json.dumps(saved))
    report = {"cases": [{"case_id": "c1", "min_confidence": page.confidence, "text_similarity": 0.3, "pages": 1,
                         "status": "ok"}]}
    (tmp_path / "r.json").write_text(json.dumps(report))
    return recorded.load("x", tmp_path / "r.json", tmp_path)


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_card_scanned_turned_is_read_as_it_was_read(turn: int) -> None:
    """A scan turned a quarter (or half) to be read has its words boxed on the page as given, where its lines run
    down the page: the section breaks are counted with the page turned back, as it was read."""
    words = card(({6, 19, 31}, {11, 25}, {4, 16, 28, 35}))
    width, height = 612.0, 792.0  # the card as read, upright
    page_size = (height, width) if turn in (90, 270) else (width, height)
    to_page = pixel_map(int(width), int(height), turn, *page_size)  # the read frame's boxes on the page as given
    turned = [PageWord(w.text, to_page(Box(*w.bbox))) for w in words]
    tree = [element(ElementType.TABLE, turned, 1)]

    def read(as_read: int) -> PageOutput:
        page = PageOutput(markdown=tree[0].markdown, engine="cpu", confidence=0.97, elements=list(tree),
                          words=list(turned), width=page_size[0], height=page_size[1], rotation=turn)
        return settle(page, Held(ocr_words=len(words)), ink=None, turn=as_read)

    upright = read(turn)
    assert upright.signals["table_flow_share"] == 1.0
    assert upright.signals["table_flow_breaks"] == table_flow_breaks([w.bbox for w in words])
    assert [upright_map(turn, *page_size)(w.bbox) for w in turned] == [rounded(w.bbox) for w in words]
    if turn != 180:  # a half turn keeps lines across; a quarter turn, read as given, has no lines to break
        assert read(0).signals["table_flow_share"] == 0.0


def heading_card(headings: tuple[set[int], ...]) -> list[PageWord]:
    """Page columns on one pitch whose lines `headings` are set larger (15 pt boxes) with no blank line above."""
    words = []
    for n, rows in enumerate(headings):
        x = 40 + n * (44 * CHAR + 20)
        for word in flow(x, 60, 40, set(), start=5 * n):
            row = round((word.bbox[1] - 60) / LINE)
            x0, y0, x1, y1 = word.bbox
            words.append(PageWord(word.text, (x0, y0 - 5, x1 + 2, y1) if row in rows else word.bbox))
    return words


def test_headings_set_larger_break_a_column_as_blank_lines_do() -> None:
    words = heading_card(({0, 9, 21}, {0, 14, 30}, {0, 6, 25}))
    assert table_flow_breaks([w.bbox for w in words]) >= tuning.TABLE_FLOW_MIN_BREAKS
    same = heading_card(({0, 9, 21}, {0, 9, 21}, {0, 9, 21}))  # a larger header and group rows across the table
    assert table_flow_breaks([w.bbox for w in same]) == 0


def test_a_note_mark_lifting_one_word_is_no_heading() -> None:
    words = []
    for n, rows in enumerate(({3, 9, 21}, {5, 14, 30})):
        column_words = flow(40 + n * (44 * CHAR + 20), 60, 40, set(), start=5 * n)
        marked = {min((w for w in column_words if round((w.bbox[1] - 60) / LINE) == row), key=lambda w: w.bbox[0])
                  for row in rows}  # the first word of each of those lines carries a superscript mark
        words += [PageWord(w.text, (w.bbox[0], w.bbox[1] - 5, w.bbox[2] + 2, w.bbox[3])) if w in marked else w
                  for w in column_words]
    assert sum(1 for w in words if w.bbox[3] - w.bbox[1] > 10) == 6
    assert table_flow_breaks([w.bbox for w in words]) == 0
    assert table_flow_breaks([w.bbox for w in heading_card(({3, 9, 21}, {5, 14, 30}))]) >= 2


def index_page(letters: tuple[set[int], ...]) -> list[PageWord]:
    """Index page columns 250 pt wide: entries (at most 16 characters, 8 word heights) at the column's left edge and
    their page numbers at its right (the leaders between them are no words), a blank line and a larger letter
    heading at the rows `letters` of each column."""
    words: list[PageWord] = []
    for n, rows in enumerate(letters):
        left = 40 + n * 270
        for row in range(40):
            y = 60 + row * LINE
            if row - 1 in rows:
                continue  # the blank line above a letter
            if row in rows:
                words.append(PageWord("K", (left, y - 5, left + 2 * CHAR, y + 10)))
                continue
            entry = PROSE[(row + 7 * n) % len(PROSE)] + "_" + PROSE[(row + 3) % len(PROSE)]
            words += line_words(entry[:16], left, y)
            words += line_words(f"{row * 3 + 1}, {row * 5 + 2}", left + 250 - 8 * CHAR, y)
    return words


def test_index_columns_of_narrow_entries_and_page_numbers_are_grouped_into_page_columns() -> None:
    words = index_page(({6, 19, 31}, {11, 25, 36}))
    boxes = [w.bbox for w in words]
    entries = [b for b in boxes if b[0] < 40 + 150 or 310 <= b[0] < 310 + 150]
    assert max(b[2] for b in entries if b[0] < 200) - 40 < tuning.TABLE_FLOW_MIN_WIDTH * 10  # no strip is wide
    assert table_flow_breaks(boxes) >= tuning.TABLE_FLOW_MIN_BREAKS
    same = index_page(({6, 19, 31}, {6, 19, 31}))  # a table of two label-figure pairs, group rows across it
    assert table_flow_breaks([w.bbox for w in same]) == 0


def test_a_wide_label_column_beside_figure_columns_is_no_pair_of_page_columns() -> None:
    """A real table: a label column as wide as page columns, left empty on the rows its figures continue, and four
    figure columns, empty together on its group rows (a label alone). The figures' run of narrow strips is wide
    enough, but the strips do not tile the table into page columns set alike, so nothing is counted (the first form
    of the index step, any run of narrow strips 15 word heights wide, counts 3 here, and counted 2-7 on three
    such tables of dev and wide)."""
    words: list[PageWord] = []
    for row in range(30):
        y = 60 + row * LINE
        if row % 6 != 5:
            words += line_words(" ".join(PROSE[(row + n) % len(PROSE)] for n in range(6))[:60], 40, y)
        if row % 7 == 3:
            continue  # a group row: the label alone
        for n, x in enumerate((360, 420, 480, 540)):
            if (row + 2 * n) % 5:
                words += line_words(f"{row * 7 + n}.{n}", x, y)
    assert table_flow_breaks([w.bbox for w in words]) == 0


def tab_card(blanks: tuple[set[int], ...]) -> list[PageWord]:
    """Page columns 240 pt wide, 260 pt apart, of two-part entries: a description (at most 22 characters) at the
    column's left edge and its syntax (as long) left-aligned at a tab stop 130 pt in (a tabular card), each column
    with its own blank lines."""
    words: list[PageWord] = []
    for n, rows in enumerate(blanks):
        left = 40 + n * 260
        for row in range(40):
            if row in rows:
                continue
            y = 60 + row * LINE
            description = " ".join(PROSE[(row + 5 * n + k) % len(PROSE)] for k in range(4))
            words += line_words(description[:22].strip(), left, y)
            syntax = f"{PROSE[(row + n) % len(PROSE)]}_{PROSE[(row + 2) % len(PROSE)]}(x,{row})"
            words += line_words(syntax[:22], left + 130, y)
    return words


def test_page_columns_of_two_strips_are_tiled_as_such_when_wider_runs_would_fit_too() -> None:
    """Three page columns of two narrow strips each tile as three runs of two, not as two runs of three (which
    are alike in width too, and cut the middle column in half: 0 breaks, what `4c7f859` counted)."""
    words = tab_card(({7, 19, 30}, {12, 24, 35}, {4, 16, 27}))
    boxes = [w.bbox for w in words]
    for left in (40, 300, 560):  # each part of each page column is narrower than a page column must be
        for start, stop in ((left, left + 130), (left + 130, left + 260)):
            part = [b for b in boxes if start <= b[0] < stop]
            assert max(b[2] for b in part) - min(b[0] for b in part) < tuning.TABLE_FLOW_MIN_WIDTH * 10
    assert table_flow_breaks(boxes) >= tuning.TABLE_FLOW_MIN_BREAKS
    same = tab_card(({7, 19, 30}, {7, 19, 30}, {7, 19, 30}))  # blank rows across the whole table: one table
    assert table_flow_breaks([w.bbox for w in same]) == 0


def test_a_page_column_whose_heading_closed_its_inner_gap_tiles_with_the_others() -> None:
    """A heading across the middle page column (a line running from its edge past the tab stop) closes the gap
    between its two parts: one wide strip between two runs of two narrow strips still tiles into page columns."""
    heading = line_words("a_heading_set_across_its_tab_stop", 300, 60 + 13 * LINE)  # its column is blank at 12
    words = tab_card(({7, 19, 30}, {12, 24, 35}, {4, 16, 27})) + heading
    assert max(w.bbox[2] for w in heading) > 300 + 130  # it crosses the middle column's tab stop
    assert table_flow_breaks([w.bbox for w in words]) >= tuning.TABLE_FLOW_MIN_BREAKS
    same = tab_card(({12, 24, 35}, {12, 24, 35}, {12, 24, 35})) + heading  # blank rows across the table
    assert table_flow_breaks([w.bbox for w in same]) == 0


def narrow_page(blanks: tuple[set[int], ...], width_chars: int = 26) -> list[PageWord]:
    """Page columns `width_chars` characters wide (26: 13 word heights, narrower than `TABLE_FLOW_MIN_WIDTH`), 20 pt
    apart, each line one run of words with no gap a column could be cut at (an index in a larger type, its entries
    run into their page numbers), blank at its rows `blanks`; every word its own (`w<n>`), for the order check."""
    words = [w for n, column_blanks in enumerate(blanks)
             for w in flow(40 + n * (width_chars * CHAR + 20), 60, 40, column_blanks, width_chars, start=5 * n)]
    return [PageWord(f"w{n}", w.bbox) for n, w in enumerate(words)]


def test_page_columns_narrower_than_a_wide_strip_count_when_they_tile_the_table_alike() -> None:
    words = narrow_page(({6, 19, 31}, {11, 25, 36}, {4, 16, 28}))
    assert tuning.TABLE_FLOW_MIN_ALIKE_WIDTH * 10 <= 26 * CHAR < tuning.TABLE_FLOW_MIN_WIDTH * 10
    assert table_flow_breaks([w.bbox for w in words]) >= tuning.TABLE_FLOW_MIN_BREAKS
    same = narrow_page(({6, 19, 31}, {6, 19, 31}, {6, 19, 31}))  # blank rows across the table: one table
    assert table_flow_breaks([w.bbox for w in same]) == 0


def test_narrow_page_columns_written_down_and_read_across_are_asked_their_order() -> None:
    words = narrow_page(({6, 19, 31}, {6, 19, 31}, {6, 19, 31}))  # no break to tell them: the order does
    lines: dict[tuple[float, float], list[PageWord]] = {}
    for w in words:  # in each column's order, top to bottom: a run a line
        lines.setdefault(((w.bbox[0] - 40) // (26 * CHAR + 20), w.bbox[1]), []).append(w)  # narrow_page's pitch
    down = [(" ".join(w.text for w in line), box(line)) for line in lines.values()]
    by_row = sorted(lines, key=lambda key: (key[1], key[0]))  # line by line across the page: one table's rows
    across = [w for key in by_row for w in lines[key]]
    tree = [element(ElementType.TABLE, across, 1)]
    [reading] = table_readings(tree, across, runs=down).readings
    assert reading.breaks == 0 and reading.disordered
    rows = [(" ".join(w.text for w in lines[key]), box(lines[key])) for key in by_row]
    assert table_readings(tree, across, runs=rows).readings[0].disorder == 0.0  # written as read: a real table's


def test_narrow_strips_not_set_alike_or_narrower_still_are_no_page_columns() -> None:
    blanks = ({6, 19, 31}, {11, 25, 36})
    uneven = [w for n, (x, chars) in enumerate(((40, 26), (190, 16)))
              for w in flow(x, 60, 40, blanks[n], chars, start=5 * n)]  # 13 and 8 word heights: no page's columns
    assert table_flow_breaks([w.bbox for w in uneven]) == 0
    chars = int(tuning.TABLE_FLOW_MIN_ALIKE_WIDTH * 10 / CHAR) - 2  # alike, but narrower than page columns are
    assert table_flow_breaks([w.bbox for w in narrow_page(blanks, width_chars=chars)]) == 0
