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

from pagemill_eval import confidence_fit, one_penalty
from pagemill_eval.confidence_fit import Row
from pagemill_eval.one_penalty import Penalty
from pagemill_eval.penalty_fit import aurocs
from services.worker.engines.cpu.confidence import structure_factor
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
        rows.append(one_penalty.case_row(name, row.case_id, row.confidence, row.score, pages, FEATURE))
    return rows


def case_confidence(row: Row, weight: float) -> float:
    """The case's confidence (its weakest page's) with `weight` taken off per unit of disagreement."""
    return min(round(max(0.0, conf - weight * page[FEATURE] * page["structure"]), 4) for conf, page in row.pages)


def agreement_alone(row: Row) -> float:
    """The signal as a confidence: the case's least agreeing page's agreement."""
    return min(1.0 - page[FEATURE] for _, page in row.pages)


def _describe(rows: Sequence[Row]) -> dict[str, Any]:
    return {"bad<0.5": sum(r.score < 0.5 for r in rows), "bad<0.7": sum(r.score < 0.7 for r in rows),
            "agreement_alone": aurocs(rows, [agreement_alone(r) for r in rows])}


PENALTY = Penalty(FEATURE, OCR_PENALTY_PER_RESCALE_DISAGREEMENT, case_confidence, _describe)


def fit(rows: Sequence[Row]) -> float:
    """Confidence taken off per unit of disagreement (0 when the rows hold one class, or it would raise it)."""
    return one_penalty.fit(rows, FEATURE)


def report(rows: Sequence[Row], judged: Sequence[Row]) -> dict[str, Any]:
    """Also: each set's agreement alone as a confidence (`agreement_alone`)."""
    return one_penalty.report(rows, judged, PENALTY)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pagemill_eval.rescale_fit",
                                     description="Fit and judge the OCR rescale penalty on saved eval outputs.")
    one_penalty.add_sets(parser)
    parser.add_argument("--signal", default=SIGNAL, help=f"the saved agreement to read (default {SIGNAL})")
    args = parser.parse_args(argv)

    def load_signal(name: str, report_path: Path, outputs: Path) -> list[Row]:
        return load(name, report_path, outputs, args.signal)

    rows = one_penalty.read_sets(parser, args.corpora, load_signal)
    judged = one_penalty.read_sets(parser, args.judge, load_signal)
    print(json.dumps(report(rows, judged), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
