"""The confidence model's fit and its leave-one-corpus-out folds, on synthetic samples with a known answer."""

from __future__ import annotations

import random

from pagemill_eval.confidence_fit import Row, fit, leave_one_corpus_out, page_features
from pagemill_eval.run import Outcome


def _rows(corpus: str, rng: random.Random, count: int = 40) -> list[Row]:
    """Agreement tells good from bad in every corpus; the engine's confidence is noise."""
    rows = []
    for number in range(count):
        bad = number % 4 == 0
        agreement = rng.uniform(0.0, 0.5) if bad else rng.uniform(0.4, 1.0)
        confidence = rng.uniform(0.8, 1.0)
        features = page_features(confidence, {"agreement": agreement, "noise": rng.random()},
                                 ["text_dropped"] if bad and rng.random() < 0.3 else [])
        rows.append(Row(corpus, f"{corpus}{number}", confidence, 0.2 if bad else 0.9, features))
    return rows


def test_each_fold_is_scored_on_the_corpus_it_was_not_fitted_on() -> None:
    rng = random.Random(1)
    rows = _rows("dev", rng) + _rows("wide", rng) + _rows("generated", rng)
    folds = leave_one_corpus_out(rows)
    assert [f["held_out"] for f in folds] == ["dev", "generated", "wide"]
    for fold in folds:
        assert fold["samples"] == 40 and fold["bad"] == 10
        assert fold["auroc_model"] > 0.9, fold
        assert fold["auroc_model"] > fold["auroc_engine"] + 0.2, fold


def test_the_weights_follow_the_signal_and_not_the_noise() -> None:
    rng = random.Random(2)
    coefficients = fit(_rows("a", rng, 80)).coefficients()
    assert coefficients["signal:agreement"] > 1.0
    assert abs(coefficients["signal:noise"]) < coefficients["signal:agreement"] / 3


def test_a_fold_whose_training_corpora_hold_no_bad_case_says_so() -> None:
    rng = random.Random(3)
    good = [r for r in _rows("dev", rng) if not r.bad]
    folds = leave_one_corpus_out(good + _rows("wide", rng))
    assert folds[1]["held_out"] == "wide" and folds[1]["auroc_model"] is None and "note" in folds[1]


def test_saved_outputs_keep_the_pages_signals() -> None:
    outcome = Outcome(pages=["a"], confidences=[0.5], warnings=[[]], signals=[{"agreement": 0.25}])
    again = Outcome.from_json({**outcome.to_json(), "signals": [{"agreement": 0.25, "route": "ocr", "x": True}]})
    assert again.signals == [{"agreement": 0.25}]
    assert Outcome.from_json(outcome.to_json()).signals == [{"agreement": 0.25}]
