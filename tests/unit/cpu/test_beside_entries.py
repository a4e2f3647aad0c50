"""`entry_readings`: a page read without a producer's order (by OCR) whose descriptions came out as one block beside a
block of their one-word syntax, line for line, has its entries read apart; two columns of prose, two columns of
single words, line numbers beside their lines, blocks half a line apart or one over the other are not such pairs; a
text-layer page is not asked (its producer's order is `beside_readings`'); the penalty only moves the confidence and
a refit adds it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core.elements import Element, ElementType
from services.worker.engines.base import PageOutput, PageWord
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.beside import entry_readings
from services.worker.engines.cpu.routes import Held, settle
from tests.unit.cpu.test_beside import block, column, runs
from tests.unit.cpu.test_table_flow import assert_paid, saved_rows
from tests.unit.cpu.test_table_gutter import CHAR, LINE


def page(left_words: int, right_words: int, rows: int = 12, right_y: float = 60.0,
         right_kind: ElementType = ElementType.PARAGRAPH) -> tuple[list[Element], list[PageWord]]:
    """Two blocks, `rows` lines each, the left of `left_words` words a line beside the right of `right_words`
    (from `right_y` down): the blocks the layout made and the page's words."""
    left = column(40, rows, left_words, 0)
    right = column(40 + CHAR * (6 * left_words + 4), rows, right_words, 10_000, y=right_y)
    tree = [block("p1-e1", ElementType.PARAGRAPH, left), block("p1-e2", right_kind, right)]
    return tree, [w for line in left + right for w in line]


def test_descriptions_beside_their_one_word_syntax_are_entries_read_apart() -> None:
    tree, words = page(5, 1)
    read = entry_readings(tree, words)
    assert read.block_words == {"p1-e1": 60, "p1-e2": 12}
    assert read.signals() == {"beside_entries_share": 1.0}
    assert read.penalties() == {"p1-e1": tuning.BESIDE_ENTRIES_PENALTY, "p1-e2": tuning.BESIDE_ENTRIES_PENALTY}
    two_words, two_words_boxes = page(4, 2)  # a syntax of two words beside descriptions of twice as many
    assert entry_readings(two_words, two_words_boxes).block_words == {"p1-e1": 48, "p1-e2": 24}
    swapped, swapped_words = page(1, 5)  # the one-word lines on the left: a form's labels beside their values
    assert entry_readings(swapped, swapped_words).block_words == {"p1-e1": 12, "p1-e2": 60}
    with_heading = [Element(id="p1-e0", type=ElementType.HEADING, page=1, bbox=(40.0, 20.0, 200.0, 30.0),
                            text="path operations", markdown="## path operations"), *tree]
    heading_word = PageWord("path", (40.0, 20.0, 60.0, 30.0))  # outside both blocks: on the page, in no pair
    assert entry_readings(with_heading, [heading_word, *words]).signals() == {
        "beside_entries_share": round(72 / 73, 4)}


def test_pages_of_two_columns_and_blocks_not_line_for_line_are_not_entries() -> None:
    # prose; single words; short lines beside lines under twice as long; neither side entries of a word or two
    for left, right in ((5, 5), (1, 1), (2, 2), (2, 1), (3, 2), (6, 3)):
        tree, words = page(left, right)
        assert entry_readings(tree, words).block_words == {}, (left, right)
    numbers, numbered_words = page(1, 5)  # line numbers beside the lines they count: no entries
    numbered_words = [PageWord(str(n), w.bbox) if w.text in numbers[0].text.split() else w
                      for n, w in enumerate(numbered_words)]
    assert entry_readings(numbers, numbered_words).block_words == {}
    tree, words = page(5, 1, right_y=60 + LINE / 2)  # the one-word lines between the sentences' lines
    assert entry_readings(tree, words).block_words == {}
    tree, words = page(5, 1, rows=4)  # under `BESIDE_MIN_LINES` each
    assert entry_readings(tree, words).block_words == {}
    tree, words = page(5, 1)
    under = [tree[0].model_copy(update={"bbox": (40.0, 60.0, 40 + CHAR * 40, 60 + 12 * LINE)}), tree[1]]
    assert entry_readings(under, words).block_words == {}  # one block over the other: not beside
    table = [tree[0], tree[1].model_copy(update={"type": ElementType.TABLE})]
    assert entry_readings(table, words).block_words == {}  # a table's cells are `table_readings`'


def test_a_text_layer_page_is_asked_by_its_producers_order_not_by_its_shape() -> None:
    tree, words = page(5, 1)
    written = runs(*column(40, 12, 5, 0)) + runs(*column(40 + CHAR * 34, 12, 1, 10_000))  # down each block
    output = PageOutput(markdown="x", engine="cpu", confidence=0.97, elements=list(tree), words=list(words))
    settled = settle(output, Held(layer_words=len(words)), ink=None, runs=written)
    assert "beside_entries_share" not in settled.signals and settled.confidence == 0.97


def test_the_penalty_moves_only_the_confidence_and_the_fit_adds_it_back(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    tree, words = page(5, 1)

    def read(weight: float) -> PageOutput:
        monkeypatch.setattr(tuning, "BESIDE_ENTRIES_PENALTY", weight)
        markdown = "\n\n".join(e.markdown for e in tree)
        output = PageOutput(markdown=markdown, engine="cpu", confidence=0.97, elements=list(tree), words=list(words))
        return settle(output, Held(ocr_words=len(words), ocr_boxes=24), ink=None)  # read by OCR: no runs

    from pagemill_eval.entries_fit import RECORDED

    before, after = read(0.0), read(0.6)
    assert before.confidence == 0.97
    assert_paid(RECORDED, before, after, 0.6, tmp_path)  # both blocks pay it
    assert read(5.0).confidence == 0.0  # never below 0
    assert saved_rows(RECORDED, after, tmp_path)[0].features["beside_entries_share"] == 1.0
