"""The OCR penalties' fit, on synthetic pages with a known answer, and the review threshold it picks."""

from __future__ import annotations

import random

import pytest

from pagemill_eval.confidence_fit import Row, page_features
from pagemill_eval.penalty_fit import NONE, base_confidence, case_confidence, choose_threshold, fit, main, report
from services.worker.engines.cpu.confidence import OcrPenalties


def _rows(corpus: str, rng: random.Random, count: int = 40) -> list[Row]:
    """Pages read with many doubtful lines are the bad ones; the formula's confidence knows it only a little and
    the tilt is noise, level pages all."""
    rows = []
    for number in range(count):
        bad = number % 5 == 0
        signals = {"ocr_low_score_share": rng.uniform(0.4, 0.9) if bad else rng.uniform(0.0, 0.3),
                   "ocr_skew_deg": rng.uniform(0.0, 0.3), "ocr_penalty": 0.0}
        confidence = rng.uniform(0.8, 0.95) if bad else rng.uniform(0.85, 1.0)
        rows.append(Row(corpus, f"{corpus}{number}", confidence, 0.2 if bad else 0.9,
                        page_features(confidence, signals, []), ((confidence, signals),)))
    return rows


def test_the_fit_weighs_the_doubtful_share_and_ranks_the_bad_pages_last() -> None:
    rows = _rows("generated", random.Random(1))
    penalties = fit(rows)
    assert penalties.per_doubt_share > 0.3 and penalties.per_doubt_share > 5 * penalties.per_skew_deg
    fitted = [case_confidence(r, penalties) for r in rows]
    assert max(c for r, c in zip(rows, fitted, strict=True) if r.bad) < min(
        c for r, c in zip(rows, fitted, strict=True) if not r.bad)


def test_a_saved_confidence_gets_its_penalty_back_and_a_case_is_its_weakest_page() -> None:
    assert base_confidence(0.5, {"ocr_penalty": 0.3}) == 0.8
    assert base_confidence(0.5, {"ocr_skew_deg": 3.0}) == pytest.approx(0.5 / 0.76)  # saved before: the tilt factor
    # a table-prose penalty taken off after the OCR penalty stays off: the cap at 1 applies before it
    assert base_confidence(0.5, {"ocr_penalty": 0.6, "table_prose_penalty": 0.2}) == pytest.approx(0.8)
    sharp, doubtful = {"ocr_low_score_share": 0.0}, {"ocr_low_score_share": 0.5}
    row = Row("g", "two", 0.9, 0.9, {}, ((0.9, sharp), (0.95, doubtful)))
    assert case_confidence(row, OcrPenalties(0.0, 0.4)) == 0.75
    assert case_confidence(row, NONE) == 0.9


def test_each_fold_fits_on_the_others_and_the_threshold_splits_the_training_pages() -> None:
    rng = random.Random(2)
    rows = _rows("dev", rng) + _rows("generated", rng) + _rows("wide", rng)
    result = report(rows, [])
    assert [f["held_out"] for f in result["folds"]] == ["dev", "generated", "wide"]
    for fold in result["folds"]:
        assert fold["fitted"]["bad<0.5"] > max(0.95, fold["before"]["bad<0.5"] + 0.03), fold
    threshold = choose_threshold(rows, [case_confidence(r, fit(rows)) for r in rows])
    review = result["needs_review_at_chosen"]
    assert review["threshold"] == threshold and review["bad<0.5"]["recall"] == 1.0


def test_one_class_fits_no_penalty() -> None:
    good = [r for r in _rows("dev", random.Random(3)) if not r.bad]
    assert fit(good) == NONE


def test_a_malformed_set_is_a_usage_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["gen28.json"])
    assert exited.value.code == 2
    assert "expected NAME=REPORT.json:OUTPUTS" in capsys.readouterr().err
