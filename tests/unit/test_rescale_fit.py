"""The rescale penalty's fit on synthetic pages with a known answer, and how a saved page is read."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pagemill_eval.confidence_fit import Row
from pagemill_eval.rescale_fit import FEATURE, agreement_alone, case_confidence, disagreement, fit, load, report


def _rows(corpus: str, rng: random.Random, count: int = 40) -> list[Row]:
    """Pages misread with conviction (high confidence) that a second reading does not repeat are the bad ones."""
    rows = []
    for number in range(count):
        bad = number % 5 == 0
        agreement = rng.uniform(0.6, 0.85) if bad else rng.uniform(0.95, 1.0)
        confidence = rng.uniform(0.9, 1.0)
        page = {FEATURE: round(1 - agreement, 4), "structure": 1.0}
        rows.append(Row(corpus, f"{corpus}{number}", confidence, 0.2 if bad else 0.9,
                        {"confidence": confidence, FEATURE: page[FEATURE]}, ((confidence, page),)))
    return rows


def test_the_fit_weighs_the_disagreement_and_ranks_the_bad_pages_last() -> None:
    rows = _rows("generated", random.Random(3))
    weight = fit(rows)
    assert weight > 0.3
    worst_good = min(case_confidence(r, weight) for r in rows if not r.bad)
    assert all(case_confidence(r, weight) < worst_good for r in rows if r.bad)
    assert all(agreement_alone(r) < 0.9 for r in rows if r.bad)
    folds = report(rows + _rows("other", random.Random(4)), [])["folds"]
    assert [f["held_out"] for f in folds] == ["generated", "other"]
    assert all(f["fitted"]["bad<0.5"] == 1.0 > f["no_penalty"]["bad<0.5"] for f in folds)
    assert all(f["agreement_alone"]["bad<0.5"] == 1.0 for f in folds)


def test_one_class_fits_nothing() -> None:
    assert fit([r for r in _rows("generated", random.Random(5)) if not r.bad]) == 0.0


def test_a_page_without_the_signal_loses_nothing_and_a_saved_case_reads_its_weakest_page(tmp_path: Path) -> None:
    assert disagreement({"text_layer_quality": 1.0}) == 0.0
    assert disagreement({"ocr_rescale_agreement": 0.75}) == 0.25
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "case1.json").write_text(json.dumps({
        "pages": ["a", "b"], "confidences": [0.9, 0.95],
        "signals": [{"text_layer_quality": 1.0}, {"ocr_rescale_agreement": 0.5, "x_agreement": 0.9}]}))
    (tmp_path / "report.json").write_text(json.dumps({"cases": [
        {"case_id": "case1", "text_similarity": 0.3, "min_confidence": 0.9, "pages": 2}]}))
    rows = load("set", tmp_path / "report.json", tmp_path / "out")
    assert [r.case_id for r in rows] == ["case1"]
    assert case_confidence(rows[0], 0.2) == 0.85  # the OCR page, 0.95 − 0.2 × 0.5, is now the weakest
    assert agreement_alone(rows[0]) == 0.5
    other = load("set", tmp_path / "report.json", tmp_path / "out", "x_agreement")
    assert agreement_alone(other[0]) == 0.9
