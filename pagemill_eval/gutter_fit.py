"""Fit and judge the page-gutter penalty on saved eval outputs: confidence − weight × `table_gutter_share`.

`table_gutter_share` (`confidence.table_gutter_share`) is the share of a page's words sitting in a table one of
whose column gaps runs on through the page's own text outside the table: page columns taken for one table's
columns. It needs the words' boxes, which saved outputs do not keep, so it is read as the engine recorded it; a
page saved before the engine recorded it (or without a table) has none and loses nothing.

The weight is the one-feature extension of `penalty_fit`: an L2 logistic regression of "text similarity ≥ 0.5" on
a case's weakest page's confidence (as shipped, the penalty the engine took off added back:
`table_gutter_penalty`) and its share, the share's per-unit weight divided by the confidence's. Leave-one-corpus-out
runs over the names; `--judge` sets are never fitted on and are scored without the penalty, with the weight in use
(`tuning.TABLE_GUTTER_PENALTY`) and with the weight fitted on the named corpora.

    python -m pagemill_eval.gutter_fit gen28=gen28.json:out/gen28 gen30=gen30.json:out/gen30 \\
        [--judge debian44=deb44.json:out/deb44]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pagemill_eval import confidence_fit, one_penalty
from pagemill_eval.confidence_fit import Row
from pagemill_eval.one_penalty import Penalty
from services.worker.engines.cpu.tuning import TABLE_GUTTER_PENALTY

FEATURE = "table_gutter_share"


def base_confidence(confidence: float, signals: dict[str, float]) -> float:
    """The page's confidence without the gutter penalty (what the engine recorded taking off, added back)."""
    return round(min(1.0, confidence + signals.get("table_gutter_penalty", 0.0)), 4)


def load(name: str, report_path: Path, outputs: Path) -> list[Row]:
    """The scored cases, each with its pages' (confidence without the penalty, {FEATURE: the recorded share})."""
    rows: list[Row] = []
    for row in confidence_fit.load_rows(name, report_path, outputs):
        pages = tuple((base_confidence(conf, signals), {FEATURE: signals.get(FEATURE, 0.0)})
                      for conf, signals in row.pages or ((row.confidence, {}),))
        rows.append(one_penalty.case_row(name, row.case_id, row.confidence, row.score, pages, FEATURE))
    return rows


def case_confidence(row: Row, weight: float) -> float:
    """The case's confidence (its weakest page's) with `weight` taken off per unit of share."""
    return min(round(max(0.0, conf - weight * page[FEATURE]), 4) for conf, page in row.pages)


def _describe(rows: Sequence[Row]) -> dict[str, Any]:
    return {"bad<0.5": sum(r.score < 0.5 for r in rows), "bad<0.7": sum(r.score < 0.7 for r in rows),
            "with_share": sum(any(page[FEATURE] > 0 for _, page in r.pages) for r in rows),
            "with_share_scores": sorted(r.score for r in rows if any(page[FEATURE] > 0 for _, page in r.pages))}


PENALTY = Penalty(FEATURE, TABLE_GUTTER_PENALTY, case_confidence, _describe)


def fit(rows: Sequence[Row]) -> float:
    """Confidence taken off per unit of share (0 when the rows hold one class, or the share would raise it)."""
    return one_penalty.fit(rows, FEATURE)


def report(rows: Sequence[Row], judged: Sequence[Row]) -> dict[str, Any]:
    return one_penalty.report(rows, judged, PENALTY)


def main(argv: Sequence[str]) -> int:
    return one_penalty.main(argv, "python -m pagemill_eval.gutter_fit",
                            "Fit and judge the page-gutter penalty on saved eval outputs.", PENALTY, load)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
