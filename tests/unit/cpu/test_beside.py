"""`beside_readings`: a card's descriptions read as one block beside a block of their syntax, written entry by entry,
leave nearly every producer's jump unread on; two columns of a page written down each column read in order; blocks
that are not side by side line for line, and pages without runs, are not asked; the penalty only moves the
confidence and a refit adds it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core.elements import BBox, Element, ElementType
from services.worker.engines.base import PageOutput, PageWord
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.beside import _beside, _owner, beside_readings, crossings, side_by_side
from services.worker.engines.cpu.routes import Held, settle
from tests.unit.cpu.test_table_flow import assert_paid, saved_rows
from tests.unit.cpu.test_table_gutter import CHAR, LINE, box

Run = tuple[str, BBox]


def column(x: float, rows: int, words: int, start: int, y: float = 60.0) -> list[list[PageWord]]:
    """`rows` lines of `words` words each, one line pitch apart, from (`x`, `y`); every word its own (`w<n>`)."""
    return [[PageWord(f"w{start + words * row + n}", (x + CHAR * 6 * n, y + row * LINE, x + CHAR * (6 * n + 5),
                                                      y + row * LINE + 10.0)) for n in range(words)]
            for row in range(rows)]


def block(element_id: str, kind: ElementType, lines: list[list[PageWord]]) -> Element:
    text = "\n".join(" ".join(w.text for w in line) for line in lines)
    return Element(id=element_id, type=kind, page=1, bbox=box([w for line in lines for w in line]), text=text,
                   markdown=text)


def runs(*lines: list[PageWord]) -> list[Run]:
    return [(" ".join(w.text for w in line), box(line)) for line in lines]


def card(rows: int = 30) -> tuple[list[Element], list[PageWord], list[Run], list[Run]]:
    """A description of five words beside its syntax of two, `rows` entries: the two blocks the layout made, the
    page's words, and its runs as a card's producer writes them (entry by entry) and as a page of two columns is
    written (down each)."""
    descriptions = column(40, rows, 5, 0)
    syntax = column(40 + CHAR * 34, rows, 2, 10_000)
    tree = [block("p1-e1", ElementType.PARAGRAPH, descriptions), block("p1-e2", ElementType.CODE, syntax)]
    words = [w for line in descriptions + syntax for w in line]
    by_entry = [run for pair in zip(descriptions, syntax, strict=True) for run in runs(*pair)]
    by_column = runs(*descriptions) + runs(*syntax)
    return tree, words, by_entry, by_column


def test_crossings_count_block_changes_beyond_one_reading_of_each_block() -> None:
    assert crossings({"a": [0, 1, 2], "b": [3, 4, 5]}) == (5, 0)  # down one block, then the other
    assert crossings({"a": [0, 2, 4], "b": [1, 3, 5]}) == (5, 4)  # across, line by line
    assert crossings({"a": [0, 1], "b": [2, 3], "c": [4, 5]}) == (5, 0)
    assert crossings({"a": [0, 3], "b": [1, 4], "c": [2, 5]}) == (5, 3)


def test_a_card_written_entry_by_entry_and_read_block_by_block_is_disordered() -> None:
    tree, words, by_entry, _ = card()
    read = beside_readings(tree, words, by_entry)
    assert read.jumps == 59 and read.crossed == 58
    assert read.disordered and read.disorder == pytest.approx(58 / 59, abs=1e-4)
    assert read.signals() == {"beside_order_disorder": read.disorder, "beside_order_share": 1.0}
    assert read.penalties() == {"p1-e1": tuning.BESIDE_ORDER_PENALTY, "p1-e2": tuning.BESIDE_ORDER_PENALTY}


def test_two_columns_written_down_each_read_in_order() -> None:
    tree, words, _, by_column = card()
    read = beside_readings(tree, words, by_column)
    assert read.jumps == 59 and read.crossed == 0
    assert read.signals() == {"beside_order_disorder": 0.0, "beside_order_share": 0.0}
    assert read.penalties() == {}


def test_blocks_not_line_for_line_or_too_small_or_without_runs_are_not_asked() -> None:
    tree, words, by_entry, _ = card()
    assert beside_readings(tree, words, []).signals() == {}  # an OCR page: no producer's order
    half_a_line = column(40 + CHAR * 34, 30, 2, 10_000, y=60 + LINE / 2)  # between the descriptions' lines
    assert not side_by_side([box(line) for line in column(40, 30, 5, 0)], [box(line) for line in half_a_line])
    descriptions = column(40, 30, 5, 0)
    moved = [tree[0], block("p1-e2", ElementType.CODE, half_a_line)]
    moved_runs = [run for pair in zip(descriptions, half_a_line, strict=True) for run in runs(*pair)]
    assert beside_readings(moved, words, moved_runs).signals() == {}
    small, small_words, small_runs, _ = card(rows=8)  # 15 jumps, under `BESIDE_ORDER_MIN_JUMPS`
    assert beside_readings(small, small_words, small_runs).signals() == {}
    under = [tree[0].model_copy(update={"bbox": (40.0, 60.0, 40 + CHAR * 40, 60 + 30 * LINE)}), tree[1]]
    assert beside_readings(under, words, by_entry).signals() == {}  # one block over the other: not beside
    table = [tree[0], tree[1].model_copy(update={"type": ElementType.TABLE})]
    assert beside_readings(table, words, by_entry).signals() == {}  # a table's order is `table_readings`'s


def test_the_penalty_moves_only_the_confidence_and_the_fit_adds_it_back(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    tree, words, by_entry, _ = card()

    def read(weight: float) -> PageOutput:
        monkeypatch.setattr(tuning, "BESIDE_ORDER_PENALTY", weight)
        markdown = "\n\n".join(e.markdown for e in tree)
        output = PageOutput(markdown=markdown, engine="cpu", confidence=0.97, elements=list(tree), words=list(words))
        return settle(output, Held(layer_words=len(words)), ink=None, runs=by_entry)

    from pagemill_eval.beside_fit import RECORDED

    before, after = read(0.0), read(0.6)
    assert before.confidence == 0.97 and len(after.elements) == 2
    assert_paid(RECORDED, before, after, 0.6, tmp_path)  # both blocks pay it
    assert read(5.0).confidence == 0.0  # never below 0
    rows = saved_rows(RECORDED, after, tmp_path)

    from pagemill_eval.one_penalty import SCAN, case_row, scored

    good = case_row("x", "c2", 0.97, 0.9, ((0.97, {"beside_order_share": 0.0}),), "beside_order_share")
    figures = scored([*rows, good], 0.0, RECORDED.penalty, scan=True)
    assert list(figures["scan"]) == [str(w) for w in SCAN]
    assert figures["scan"]["0.0"] == figures["no_penalty"]  # a tie: both at 0.97
    assert figures["scan"]["0.5"] == {"bad<0.5": 1.0, "bad<0.7": 1.0}  # the card pays and falls under the good page


def nested_card(rows: int = 30) -> tuple[list[Element], list[PageWord], list[Run], list[Run]]:
    """A list of syntax beside its descriptions, under a sentence across the page that the layout took into the
    descriptions' paragraph: the paragraph's box holds the syntax's `code` block. The blocks, the page's words, and
    its runs written row by row (the sentence, then each syntax and its description) and down each column."""
    sentence = column(40, 1, 12, 50_000, y=60 - 2 * LINE)
    syntax = column(40, rows, 1, 10_000)
    descriptions = column(40 + CHAR * 10, rows, 5, 0)
    tree = [block("p1-e1", ElementType.PARAGRAPH, sentence + descriptions), block("p1-e2", ElementType.CODE, syntax)]
    words = [w for line in sentence + syntax + descriptions for w in line]
    by_row = runs(*sentence) + [run for pair in zip(syntax, descriptions, strict=True) for run in runs(*pair)]
    by_column = runs(*sentence) + runs(*syntax) + runs(*descriptions)
    return tree, words, by_row, by_column


def test_a_code_block_inside_a_paragraphs_box_beside_its_lines_is_asked() -> None:
    tree, words, by_row, by_column = nested_card()
    assert tree[0].bbox is not None and tree[1].bbox is not None
    assert not _beside(tree[0].bbox, tree[1].bbox)  # the paragraph's box holds the code block's
    read = beside_readings(tree, words, by_row)
    assert read.jumps == 60 and read.crossed == 59 and read.disordered  # every jump but the one a reading makes
    assert read.block_words == {"p1-e1": 162, "p1-e2": 30}  # each word counted in its innermost block
    assert read.penalties() == {"p1-e1": tuning.BESIDE_ORDER_PENALTY, "p1-e2": tuning.BESIDE_ORDER_PENALTY}
    down = beside_readings(tree, words, by_column)  # the sentence, the syntax, the descriptions: one jump too many
    assert down.crossed == 1 and not down.disordered and down.penalties() == {}
    between = column(40, 30, 1, 10_000, y=60 + LINE / 2)  # inside the box, on none of the paragraph's lines
    moved = [tree[0], block("p1-e2", ElementType.CODE, between)]
    moved_runs = runs(*column(40, 1, 12, 50_000, y=60 - 2 * LINE)) + [
        run for pair in zip(between, column(40 + CHAR * 10, 30, 5, 0), strict=True) for run in runs(*pair)]
    assert beside_readings(moved, words, moved_runs).signals() == {}


def test_a_run_in_two_boxes_that_do_not_nest_is_nobodys() -> None:
    blocks = {"a": (0.0, 0.0, 100.0, 100.0), "b": (50.0, 0.0, 150.0, 100.0), "c": (10.0, 10.0, 40.0, 40.0)}
    assert _owner((60.0, 10.0, 70.0, 20.0), blocks) is None  # in a and b, which overlap
    assert _owner((20.0, 20.0, 30.0, 30.0), blocks) == "c"  # in a and c, c inside a
    assert _owner((120.0, 10.0, 130.0, 20.0), blocks) == "b"
    assert _owner((200.0, 10.0, 210.0, 20.0), blocks) is None
