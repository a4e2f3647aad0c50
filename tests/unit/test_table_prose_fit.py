"""The table-prose penalty's fit on synthetic pages with a known answer, and the leader-free re-scoring."""

from __future__ import annotations

import random

from pagemill_eval.calibset import without_leaders
from pagemill_eval.confidence_fit import Row
from pagemill_eval.table_prose_fit import case_confidence, fit, report, saved_share


def _rows(corpus: str, rng: random.Random, count: int = 40) -> list[Row]:
    """Pages whose words sit in sentence-long cells are the bad ones; the confidence as shipped does not know."""
    rows = []
    for number in range(count):
        bad = number % 5 == 0
        share = rng.uniform(0.5, 1.0) if bad else rng.uniform(0.0, 0.1)
        confidence = rng.uniform(0.9, 1.0)
        signals = {"table_prose_share": share}
        rows.append(Row(corpus, f"{corpus}{number}", confidence, 0.2 if bad else 0.9,
                        {"confidence": confidence, "table_prose_share": share}, ((confidence, signals),)))
    return rows


def test_the_fit_weighs_the_share_and_ranks_the_bad_pages_last() -> None:
    rows = _rows("generated", random.Random(3))
    weight = fit(rows)
    assert weight > 0.3
    worst_good = min(case_confidence(r, weight) for r in rows if not r.bad)
    assert all(case_confidence(r, weight) < worst_good for r in rows if r.bad)
    folds = report(rows + _rows("other", random.Random(4)), [])["folds"]
    assert [f["held_out"] for f in folds] == ["generated", "other"]
    assert all(f["fitted"]["bad<0.5"] == 1.0 > f["no_penalty"]["bad<0.5"] for f in folds)


def test_one_class_fits_nothing() -> None:
    rows = [r for r in _rows("generated", random.Random(5)) if not r.bad]
    assert fit(rows) == 0.0


def test_a_saved_page_is_measured_on_its_markdown_tables_and_its_elements_words() -> None:
    markdown = ("<table><tr><td>one two three four five six</td><td>7</td></tr></table>\n\nA closing line here.")
    blocks = [{"type": "table", "text": "one two three four five six 7"},
              {"type": "paragraph", "text": "A closing line here."}, {"type": "page_footer", "text": "12"}]
    assert saved_share(markdown, blocks) == round(6 / 11, 4)


def test_dot_leaders_go_and_the_words_stay() -> None:
    cleaned = without_leaders("6.3.1 Windows . . . . . . . . 26\n1.2 Objects........7")
    assert [line.split() for line in cleaned.split("\n")] == [["6.3.1", "Windows", "26"], ["1.2", "Objects", "7"]]
    assert without_leaders("e.g. 3.14 and ... stay") == "e.g. 3.14 and ... stay"
