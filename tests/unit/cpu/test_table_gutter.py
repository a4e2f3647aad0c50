"""`table_gutter_share`: page columns taken for one table score high, real tables (ruled or not, figures, short
cells, a header row, sentence-long cells) score 0, and the penalty on it only moves the confidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.core.elements import BBox, Element, ElementType
from services.worker.engines.base import PageOutput, PageWord
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.confidence import structure_signals
from services.worker.engines.cpu.pagecolumns import table_gutter_share, table_readings
from services.worker.engines.cpu.routes import Held, settle

CHAR = 5.0  # pt per character
LINE = 12.0  # pt from one line to the next; words are 10 pt high

PROSE_TEXT = ("the quick brown fox jumps over the lazy dog while the reader follows a sentence that runs on from "
              "one line to the next as prose does in a column of running text")
PROSE = PROSE_TEXT.split()


def line_words(text: str, x: float, y: float) -> list[PageWord]:
    words = []
    for word in text.split():
        words.append(PageWord(word, (x, y, x + CHAR * len(word), y + 10.0)))
        x += CHAR * (len(word) + 1)
    return words


def column(x: float, y: float, rows: int, width_chars: int, start: int = 0,
           blanks: frozenset[int] = frozenset()) -> list[PageWord]:
    """`rows` lines of prose filling a column `width_chars` wide from (x, y), the lines `blanks` left empty."""
    words: list[PageWord] = []
    index = start
    for row in range(rows):
        if row in blanks:
            continue
        text: list[str] = []
        while len(" ".join(text)) + len(PROSE[index % len(PROSE)]) < width_chars:
            text.append(PROSE[index % len(PROSE)])
            index += 1
        words += line_words(" ".join(text), x, y + row * LINE)
    return words


def box(words: list[PageWord]) -> BBox:
    return (min(w.bbox[0] for w in words), min(w.bbox[1] for w in words), max(w.bbox[2] for w in words),
            max(w.bbox[3] for w in words))


def element(kind: ElementType, words: list[PageWord], n: int) -> Element:
    text = " ".join(w.text for w in words)
    return Element(id=f"p1-e{n}", type=kind, page=1, bbox=box(words), text=text, markdown=text,
                   html="<table><tr><td>x</td><td>y</td></tr></table>" if kind == ElementType.TABLE else None)


def two_column_page(table_rows: range) -> tuple[list[Element], list[PageWord]]:
    """Two prose columns (40 characters wide, a 20 pt gutter) whose lines `table_rows` were read as one table."""
    left = column(50, 100, 30, 40)
    right = column(50 + 40 * CHAR + 20, 100, 30, 40, start=7)
    in_table = [w for w in left + right if int((w.bbox[1] - 100) // LINE) in table_rows]
    above = [w for w in left + right if int((w.bbox[1] - 100) // LINE) < table_rows.start]
    below = [w for w in left + right if int((w.bbox[1] - 100) // LINE) >= table_rows.stop]
    parts = [(ElementType.PARAGRAPH, [w for w in above if w.bbox[0] < 260]),
             (ElementType.PARAGRAPH, [w for w in above if w.bbox[0] > 260]), (ElementType.TABLE, in_table),
             (ElementType.PARAGRAPH, [w for w in below if w.bbox[0] < 260]),
             (ElementType.PARAGRAPH, [w for w in below if w.bbox[0] > 260])]
    tree = [element(kind, part, n) for n, (kind, part) in enumerate(parts, 1) if part]
    return tree, above + in_table + below


def test_page_columns_read_across_as_one_table_score_their_words_share() -> None:
    tree, words = two_column_page(range(10, 22))
    share = table_gutter_share(tree, words)
    in_table = sum(1 for w in words if 100 + 10 * LINE <= w.bbox[1] < 100 + 22 * LINE)
    assert share == pytest.approx(in_table / len(words))
    assert 0.3 < share < 0.5
    assert structure_signals(tree, table_readings(tree, words))["table_gutter_share"] == round(share, 4)


def test_the_gutter_may_run_on_above_or_below_only() -> None:
    tree, words = two_column_page(range(0, 20))  # the table opens the page: only the text under it tells
    assert table_gutter_share(tree, words) > 0.5


def test_a_real_table_under_a_paragraph_that_runs_across_its_gaps_scores_0() -> None:
    paragraph = column(50, 100, 4, 90)
    rows = [("Year", "Cost", "Share"), ("2020", "12.5", "3 %"), ("2021", "14.25", "4 %"), ("2022", "9.0", "2 %")]
    table = [w for n, row in enumerate(rows) for x, cell in zip((50, 200, 350), row, strict=True)
             for w in line_words(cell, x, 160 + n * LINE)]
    notes = column(50, 230, 3, 90, start=11)
    tree = [element(ElementType.PARAGRAPH, paragraph, 1), element(ElementType.TABLE, table, 2),
            element(ElementType.PARAGRAPH, notes, 3)]
    assert table_gutter_share(tree, paragraph + table + notes) == 0.0


def test_a_table_with_sentence_long_cells_in_a_one_column_page_scores_0() -> None:
    paragraph = column(50, 100, 3, 90)
    cells = [w for n in range(6) for w in line_words("option", 50, 150 + n * LINE)
             + line_words(" ".join(PROSE[n:n + 9]), 140, 150 + n * LINE)]
    tree = [element(ElementType.PARAGRAPH, paragraph, 1), element(ElementType.TABLE, cells, 2)]
    assert table_gutter_share(tree, paragraph + cells) == 0.0


def test_a_table_that_is_all_the_page_has_nothing_around_it_to_tell() -> None:
    tree, words = two_column_page(range(0, 30))
    assert [e.type for e in tree] == [ElementType.TABLE]
    assert table_gutter_share(tree, words) == 0.0


def test_running_heads_across_the_page_do_not_hide_the_gutter() -> None:
    tree, words = two_column_page(range(10, 22))
    head = line_words("Journal of Examples volume twelve issue three pages one hundred and one", 50, 60)
    furniture = Element(id="p1-e0", type=ElementType.PAGE_HEADER, page=1, bbox=box(head), text="", markdown="")
    assert table_gutter_share([furniture, *tree], head + words) == pytest.approx(table_gutter_share(tree, words),
                                                                                 abs=1e-9)
    # the same line as the page's text runs across the gutter: not a page gutter any more
    title = Element(id="p1-e0", type=ElementType.HEADING, page=1, bbox=box(head), text="", markdown="")
    assert table_gutter_share([title, *tree], head + words) == 0.0


def test_a_page_without_a_table_records_no_share_and_without_words_none() -> None:
    tree, words = two_column_page(range(10, 22))
    prose = [e for e in tree if e.type != ElementType.TABLE]
    assert "table_gutter_share" not in structure_signals(prose, table_readings(prose, words))
    assert "table_gutter_share" not in structure_signals(tree)


def test_the_penalty_moves_only_the_confidence_and_the_fit_adds_it_back(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    tree, words = two_column_page(range(10, 22))
    markdown = "\n\n".join(e.markdown for e in tree)

    def read(weight: float) -> PageOutput:
        monkeypatch.setattr(tuning, "TABLE_GUTTER_PENALTY", weight)
        page = PageOutput(markdown=markdown, engine="cpu", confidence=0.97, elements=list(tree), words=list(words))
        return settle(page, Held(layer_words=len(words)), ink=None)

    before, after = read(0.0), read(0.5)
    share = before.signals["table_gutter_share"]
    assert share > 0.3 and "table_gutter_penalty" not in before.signals
    assert after.signals["table_gutter_penalty"] == pytest.approx(0.5 * share, abs=1e-4)
    assert after.confidence == pytest.approx((before.confidence or 0.0) - 0.5 * share, abs=1e-4)
    assert after.markdown == before.markdown
    for was, now in zip(before.elements, after.elements, strict=True):  # the table pays the weight, nothing else
        taken = 0.5 if was.type == ElementType.TABLE else 0.0
        assert now.model_copy(update={"confidence": was.confidence}) == was
        assert now.confidence == pytest.approx(max(0.0, (was.confidence or 0.0) - taken), abs=1e-4)

    from pagemill_eval.gutter_fit import load

    saved = {"pages": [markdown], "confidences": [after.confidence], "signals": [after.signals], "warnings": [[]]}
    (tmp_path / "c1.json").write_text(json.dumps(saved))
    report = {"cases": [{"case_id": "c1", "min_confidence": after.confidence, "text_similarity": 0.3, "pages": 1,
                         "status": "ok"}]}
    (tmp_path / "r.json").write_text(json.dumps(report))
    rows = load("x", tmp_path / "r.json", tmp_path)
    assert [page[0] for page in rows[0].pages] == [before.confidence]  # read as the engine without the penalty
