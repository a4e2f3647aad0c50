"""The page-gutter penalty's fit on synthetic pages with a known answer."""

from __future__ import annotations

import random

from pagemill_eval.confidence_fit import Row
from pagemill_eval.gutter_fit import FEATURE, base_confidence, case_confidence, fit, report


def _rows(corpus: str, rng: random.Random, count: int = 40) -> list[Row]:
    """Pages whose words sit in a table a page gutter runs through are the bad ones; the confidence barely knows."""
    rows = []
    for number in range(count):
        bad = number % 5 == 0
        share = rng.uniform(0.3, 0.9) if bad else 0.0
        confidence = rng.uniform(0.88, 0.98) if bad else rng.uniform(0.9, 1.0)
        rows.append(Row(corpus, f"{corpus}{number}", confidence, 0.2 if bad else 0.9,
                        {"confidence": confidence, FEATURE: share}, ((confidence, {FEATURE: share}),)))
    return rows


def test_the_fit_weighs_the_share_and_ranks_the_bad_pages_last() -> None:
    rows = _rows("generated", random.Random(3))
    weight = fit(rows)
    assert weight > 0.1
    worst_good = min(case_confidence(r, weight) for r in rows if not r.bad)
    assert all(case_confidence(r, weight) < worst_good for r in rows if r.bad)
    folds = report(rows + _rows("other", random.Random(4)), [])["folds"]
    assert [f["held_out"] for f in folds] == ["generated", "other"]
    assert all(f["fitted"]["bad<0.5"] == 1.0 > f["no_penalty"]["bad<0.5"] for f in folds)


def test_one_class_fits_nothing_and_a_recorded_penalty_is_added_back() -> None:
    assert fit([r for r in _rows("generated", random.Random(5)) if not r.bad]) == 0.0
    assert base_confidence(0.5, {"table_gutter_penalty": 0.3, "table_prose_penalty": 0.1}) == 0.8
