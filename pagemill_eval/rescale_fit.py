"""Fit and judge the OCR rescale penalty on saved eval outputs: confidence − weight × (1 − agreement).

`ocr_rescale_agreement` (`ocr.rescale_agreement`) is how well the recognizer's reading of a page's lines survives
their crops read again at another scale: a blurred or coarse page misread with conviction reads differently the
second time, a crisp one the same. A page OCR did not read has no agreement and loses nothing.

The weight is the one-feature extension of `penalty_fit`: an L2 logistic regression of "text similarity ≥ 0.5" on
a case's weakest page's confidence (as shipped, the weight in use added back) and its disagreement, the
disagreement's per-unit weight divided by the confidence's. Leave-one-corpus-out runs over the names. Each set is
also scored on the agreement alone (the signal as a confidence). `--judge` sets are never fitted on: they are scored
without the penalty, with the weight in use (`tuning.OCR_PENALTY_PER_RESCALE_DISAGREEMENT`) and with the weight
fitted on the named corpora. `--signal` reads another saved agreement (a trial of another scale).

    python -m pagemill_eval.rescale_fit generated=gen28.json:out/gen28 generated=gen30.json:out/gen30 \\
        [--judge debian44=deb44.json:out/deb44]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pagemill_eval import confidence_fit
from pagemill_eval.confidence_fit import Row
from pagemill_eval.penalty_fit import aurocs, review_figures
from services.worker.engines.cpu.confidence import NEEDS_REVIEW_BELOW, structure_factor
from services.worker.engines.cpu.tuning import OCR_PENALTY_PER_RESCALE_DISAGREEMENT

SIGNAL = "ocr_rescale_agreement"
FEATURE = "rescale_disagreement"


def disagreement(signals: dict[str, float], signal: str = SIGNAL) -> float:
    """1 − the page's agreement (0 for a page without one: not read by OCR)."""
    return round(1.0 - signals.get(signal, 1.0), 4)


def base_confidence(confidence: float, signals: dict[str, float]) -> float:
    """The page's confidence without the rescale penalty: the weight in use is added back as the engine took it
    off (before the structure factor), so outputs saved with any weight read as the engine without it."""
    taken = OCR_PENALTY_PER_RESCALE_DISAGREEMENT * disagreement(signals) * structure_factor(signals)
    return round(min(1.0, confidence + taken), 4)


def load(name: str, report_path: Path, outputs: Path, signal: str = SIGNAL) -> list[Row]:
    """The scored cases, each with its pages' (confidence without the penalty, {FEATURE: disagreement,
    "structure": the structure factor the engine applied after the OCR penalties})."""
    rows: list[Row] = []
    for row in confidence_fit.load_rows(name, report_path, outputs):
        pages = tuple((base_confidence(conf, signals),
                       {FEATURE: disagreement(signals, signal), "structure": structure_factor(signals)})
                      for conf, signals in row.pages or ((row.confidence, {}),))
        weakest = min(pages, key=lambda page: page[0])
        rows.append(Row(name, row.case_id, row.confidence, row.score,
                        {"confidence": weakest[0], FEATURE: weakest[1][FEATURE]}, pages))
    return rows


def case_confidence(row: Row, weight: float) -> float:
    """The case's confidence (its weakest page's) with `weight` taken off per unit of disagreement."""
    return min(round(max(0.0, conf - weight * page[FEATURE] * page["structure"]), 4) for conf, page in row.pages)


def agreement_alone(row: Row) -> float:
    """The signal as a confidence: the case's least agreeing page's agreement."""
    return min(1.0 - page[FEATURE] for _, page in row.pages)


def fit(rows: Sequence[Row]) -> float:
    """Confidence taken off per unit of disagreement (0 when the rows hold one class, or it would raise it)."""
    if not any(r.bad for r in rows) or all(r.bad for r in rows):
        return 0.0
    model = confidence_fit.fit(rows)
    per_unit = dict(zip(model.names, model.weights / model.scale, strict=True))
    if per_unit["confidence"] <= 0:
        return 0.0
    return round(max(0.0, -float(per_unit[FEATURE]) / float(per_unit["confidence"])), 3)


def _scored(rows: Sequence[Row], weight: float) -> dict[str, Any]:
    """AUROCs: the agreement alone, the confidence without the penalty, with the weight in use and with `weight`;
    `needs_review` figures for the last three."""
    figures: dict[str, Any] = {"samples": len(rows), "bad<0.5": sum(r.score < 0.5 for r in rows),
                               "bad<0.7": sum(r.score < 0.7 for r in rows),
                               "agreement_alone": aurocs(rows, [agreement_alone(r) for r in rows])}
    for label, used in (("no_penalty", 0.0), ("in_use", OCR_PENALTY_PER_RESCALE_DISAGREEMENT), ("fitted", weight)):
        confidences = [case_confidence(r, used) for r in rows]
        figures[label] = aurocs(rows, confidences)
        figures[f"needs_review_{label}"] = review_figures(rows, confidences, NEEDS_REVIEW_BELOW)
    return figures


def report(rows: Sequence[Row], judged: Sequence[Row]) -> dict[str, Any]:
    corpora = sorted({r.corpus for r in rows})
    weight = fit(rows)
    result: dict[str, Any] = {"fitted_on_all": weight, "in_use": OCR_PENALTY_PER_RESCALE_DISAGREEMENT,
                              "per_corpus": {}, "folds": [], "judged": {}}
    for corpus in corpora:
        result["per_corpus"][corpus] = _scored([r for r in rows if r.corpus == corpus], weight)
    if len(corpora) > 1:
        for held in corpora:
            fold_weight = fit([r for r in rows if r.corpus != held])
            result["folds"].append({"held_out": held, "weight": fold_weight,
                                    **_scored([r for r in rows if r.corpus == held], fold_weight)})
    for corpus in sorted({r.corpus for r in judged}):
        result["judged"][corpus] = _scored([r for r in judged if r.corpus == corpus], weight)
    return result


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pagemill_eval.rescale_fit",
                                     description="Fit and judge the OCR rescale penalty on saved eval outputs.")
    parser.add_argument("corpora", nargs="+", metavar="NAME=REPORT.json:OUTPUTS")
    parser.add_argument("--judge", action="append", default=[], metavar="NAME=REPORT.json:OUTPUTS")
    parser.add_argument("--signal", default=SIGNAL, help=f"the saved agreement to read (default {SIGNAL})")
    args = parser.parse_args(argv)

    def rows_of(spec: str) -> list[Row]:
        name, _, paths = spec.partition("=")
        report_path, _, outputs = paths.partition(":")
        if not name or not outputs:
            parser.error(f"{spec!r}: expected NAME=REPORT.json:OUTPUTS")
        return load(name, Path(report_path), Path(outputs), args.signal)

    rows = [row for spec in args.corpora for row in rows_of(spec)]
    judged = [row for spec in args.judge for row in rows_of(spec)]
    print(json.dumps(report(rows, judged), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
