"""Fit the cpu engine's OCR penalties (`confidence.OcrPenalties`) on saved eval outputs; judge them per fold.

The model is `confidence_fit`'s L2 logistic regression restricted to three features of a case's weakest page:
its confidence without any OCR penalty, its line tilt (`ocr_skew_deg`) and its share of characters on doubtful
lines (`ocr_low_score_share`); a text-layer page has 0 for both. Its weights, divided by the confidence's, are
what one degree and one unit of share take off the confidence: the engine subtracts them, which ranks OCR pages
as the regression does and leaves text-layer pages as they were. Three numbers, not a weight per signal: the
regression over every signal is reported beside it (it won one generated fold and lost another).

A page's confidence without penalty is its saved confidence plus the `ocr_penalty` the engine recorded (times the
structure factor applied after it), or, for an output saved before the engine recorded one, divided by the tilt
factor it had then (`BEFORE_THE_FIT`). Several inputs may share a name (two generated seeds as one `generated`
corpus); leave-one-corpus-out runs over the names. `--judge` corpora are never fitted on: the penalties in use
and the `needs_review` threshold are scored on them as they stand.

    python -m pagemill_eval.penalty_fit generated=gen28.json:out/gen28 generated=gen30.json:out/gen30 \\
        dev=dev.json:out/dev wide=wide.json:out/wide [--judge gen31=gen31.json:out/gen31]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pagemill_eval import confidence_fit
from pagemill_eval.calibration import BAD_SCORE, Sample, auroc
from pagemill_eval.confidence_fit import Row
from services.worker.engines.cpu.confidence import NEEDS_REVIEW_BELOW, OCR_PENALTIES, OcrPenalties, structure_factor

BAD_LINES = (0.5, 0.7)  # a case is bad under this score; both lines are reported
FEATURES = ("ocr_skew_deg", "ocr_low_score_share")
NONE = OcrPenalties(0.0, 0.0)
THRESHOLDS = tuple(round(0.5 + 0.05 * step, 2) for step in range(10))  # needs_review candidates, 0.50 .. 0.95



def before_the_fit(confidence: float, signals: dict[str, float]) -> float:
    """The tilt factor outputs saved before this fit carry: × (1 − 0.12 per degree beyond 1°), floor 0.3."""
    return confidence * max(0.3, 1.0 - 0.12 * max(0.0, signals.get("ocr_skew_deg", 0.0) - 1.0))


def base_confidence(confidence: float, signals: dict[str, float]) -> float:
    """A page's confidence without any OCR penalty (see the module's docstring); the table-prose penalty the page
    recorded (`table_prose_penalty`, taken off after the OCR penalties) is left on."""
    if "ocr_penalty" in signals:
        prose = signals.get("table_prose_penalty", 0.0)
        return min(1.0, confidence + prose + signals["ocr_penalty"] * structure_factor(signals)) - prose
    factor = before_the_fit(1.0, signals)
    return min(1.0, confidence / factor)


def page_confidence(confidence: float, signals: dict[str, float], penalties: OcrPenalties) -> float:
    """A saved page's confidence as the engine would give it under `penalties`."""
    value = base_confidence(confidence, signals) - penalties.penalty(signals) * structure_factor(signals)
    return round(max(0.0, min(1.0, value)), 4)


def case_confidence(row: Row, penalties: OcrPenalties | None) -> float:
    """The case's confidence (its weakest page's) under `penalties`; None: the tilt factor of before the fit."""
    pages = row.pages or ((row.confidence, {}),)
    if penalties is None:
        return min(round(before_the_fit(base_confidence(c, s), s), 4) for c, s in pages)
    return min(page_confidence(c, s, penalties) for c, s in pages)


def aurocs(rows: Sequence[Row], confidences: Sequence[float]) -> dict[str, float | None]:
    """AUROC of the confidences for each bad line (None where the rows hold one class only)."""
    result: dict[str, float | None] = {}
    for line in BAD_LINES:
        # scaled so that "under `line`" is "under BAD_SCORE", the line calibration.auroc knows
        scaled = [Sample(r.case_id, c, r.score * BAD_SCORE / line) for r, c in zip(rows, confidences, strict=True)]
        value = auroc(scaled)
        result[f"bad<{line:g}"] = None if value is None else round(value, 4)
    return result


def _restricted(row: Row) -> Row:
    """The row with its weakest page's three features (weakest before any penalty)."""
    pages = row.pages or ((row.confidence, {}),)
    weakest = min(pages, key=lambda page: base_confidence(*page))
    features = {"confidence": base_confidence(*weakest), **{name: weakest[1].get(name, 0.0) for name in FEATURES}}
    return Row(row.corpus, row.case_id, row.confidence, row.score, features, row.pages)


def fit(rows: Sequence[Row]) -> OcrPenalties:
    """The logistic regression's weights in confidence units (none when the rows hold one class only, or when
    the fitted confidence weight is not positive; a signal that would raise confidence weighs 0)."""
    if not any(r.bad for r in rows) or all(r.bad for r in rows):
        return NONE
    model = confidence_fit.fit([_restricted(r) for r in rows])
    per_unit = dict(zip(model.names, model.weights / model.scale, strict=True))
    if per_unit["confidence"] <= 0:
        return NONE
    skew, doubt = (max(0.0, -float(per_unit[name]) / float(per_unit["confidence"])) for name in FEATURES)
    return OcrPenalties(round(skew, 3), round(doubt, 3))


def review_figures(rows: Sequence[Row], confidences: Sequence[float], threshold: float) -> dict[str, Any]:
    """`needs_review` at `threshold` (flag a case whose confidence is under it): for each bad line, the bad cases
    caught, precision and recall."""
    flagged = [r for r, c in zip(rows, confidences, strict=True) if c < threshold]
    figures: dict[str, Any] = {"threshold": threshold, "flagged": len(flagged), "cases": len(rows)}
    for line in BAD_LINES:
        bad = sum(r.score < line for r in rows)
        caught = sum(r.score < line for r in flagged)
        figures[f"bad<{line:g}"] = {"bad": bad, "caught": caught,
                                    "precision": round(caught / len(flagged), 3) if flagged else None,
                                    "recall": round(caught / bad, 3) if bad else None}
    return figures


def choose_threshold(rows: Sequence[Row], confidences: Sequence[float]) -> float:
    """The `needs_review` threshold with the best F1 for "scores under 0.5"; among equals, the best F1 for
    "under 0.7", then the higher threshold (the margin goes to catching a bad page the fit has not seen)."""
    def f1(threshold: float, line: float) -> float:
        flags = [c < threshold for c in confidences]
        caught = sum(f and r.score < line for f, r in zip(flags, rows, strict=True))
        return 2 * caught / (sum(flags) + sum(r.score < line for r in rows)) if caught else 0.0
    return max(THRESHOLDS, key=lambda t: (round(f1(t, 0.5), 6), round(f1(t, 0.7), 6), t))


def _fold(train: Sequence[Row], test: Sequence[Row], held: str) -> dict[str, Any]:
    fold: dict[str, Any] = {"held_out": held, "samples": len(test), "bad<0.5": sum(r.score < 0.5 for r in test),
                            "bad<0.7": sum(r.score < 0.7 for r in test),
                            "before": aurocs(test, [case_confidence(r, None) for r in test])}
    if not any(r.bad for r in train) or all(r.bad for r in train):
        fold["note"] = "the other corpora hold only one class"
        return fold
    penalties = fit(train)
    fold["penalties"] = _describe(penalties)
    fold["fitted"] = aurocs(test, [case_confidence(r, penalties) for r in test])
    logistic = confidence_fit.fit(train)
    fold["logistic_all_signals"] = aurocs(test, logistic.p_good(test).tolist())
    return fold


def _describe(penalties: OcrPenalties) -> dict[str, float]:
    return {"per_skew_deg": penalties.per_skew_deg, "per_doubt_share": penalties.per_doubt_share}


def report(rows: Sequence[Row], judged: Sequence[Row]) -> dict[str, Any]:
    """The fit on every row, its folds, the review threshold chosen on the rows, and the judge sets scored."""
    corpora = sorted({row.corpus for row in rows})
    penalties = fit(rows)
    fitted = [case_confidence(r, penalties) for r in rows]
    chosen = choose_threshold(rows, fitted) if rows else None
    result: dict[str, Any] = {
        "fitted_on_all": _describe(penalties), "in_use": _describe(OCR_PENALTIES),
        "per_corpus": {corpus: {"samples": len(part := [r for r in rows if r.corpus == corpus]),
                                "bad<0.5": sum(r.score < 0.5 for r in part),
                                "before": aurocs(part, [case_confidence(r, None) for r in part]),
                                "fitted_on_all": aurocs(part, [case_confidence(r, penalties) for r in part]),
                                "in_use": aurocs(part, [case_confidence(r, OCR_PENALTIES) for r in part])}
                       for corpus in corpora},
        "folds": [_fold([r for r in rows if r.corpus != held], [r for r in rows if r.corpus == held], held)
                  for held in corpora] if len(corpora) > 1 else [],
        "needs_review_chosen": chosen,
        "needs_review_at_chosen": review_figures(rows, fitted, chosen) if chosen is not None else None,
    }
    for corpus in sorted({row.corpus for row in judged}):
        part = [r for r in judged if r.corpus == corpus]
        in_use = [case_confidence(r, OCR_PENALTIES) for r in part]
        result.setdefault("judged", {})[corpus] = {
            "samples": len(part), "in_use": aurocs(part, in_use),
            "before_the_fit": aurocs(part, [case_confidence(r, None) for r in part]),
            "needs_review": review_figures(part, in_use, NEEDS_REVIEW_BELOW)}
    return result


def _load(spec: str) -> list[Row]:
    name, _, paths = spec.partition("=")
    report_path, _, outputs = paths.partition(":")
    return confidence_fit.load_rows(name, Path(report_path), Path(outputs))


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pagemill_eval.penalty_fit",
        description="Fit the cpu engine's OCR penalties on saved eval outputs; report folds, a review threshold "
                    "and, with --judge, the penalties in use on sets never fitted on (docs/evaluation.md).")
    parser.add_argument("corpora", nargs="+", metavar="NAME=REPORT.json:OUTPUTS",
                        help="an eval report and its --save-outputs folder; a repeated NAME pools them")
    parser.add_argument("--judge", action="append", default=[], metavar="NAME=REPORT.json:OUTPUTS",
                        help="a set scored with the penalties in use, never fitted on (repeatable)")
    args = parser.parse_args(argv)
    for spec in [*args.corpora, *args.judge]:
        name, _, paths = spec.partition("=")
        if not name or not paths.partition(":")[2]:
            parser.error(f"{spec!r}: expected NAME=REPORT.json:OUTPUTS")
    rows = [row for spec in args.corpora for row in _load(spec)]
    judged = [row for spec in args.judge for row in _load(spec)]
    print(json.dumps(report(rows, judged), indent=1))
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
