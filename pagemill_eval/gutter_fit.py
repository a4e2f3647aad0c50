"""Fit and judge the page-gutter penalty on saved eval outputs: confidence − weight × `table_gutter_share`.

`table_gutter_share` (`pagecolumns.table_gutter_share`) is the share of a page's words sitting in a table one of
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
from typing import Any

from pagemill_eval import one_penalty
from pagemill_eval.confidence_fit import Row
from services.worker.engines.cpu.tuning import TABLE_GUTTER_PENALTY

FEATURE = "table_gutter_share"
RECORDED = one_penalty.Recorded(FEATURE, "table_gutter_penalty", TABLE_GUTTER_PENALTY)
PENALTY = RECORDED.penalty
base_confidence = RECORDED.base_confidence
load = RECORDED.load
case_confidence = RECORDED.case_confidence


def fit(rows: Sequence[Row]) -> float:
    """Confidence taken off per unit of share (0 when the rows hold one class, or the share would raise it)."""
    return one_penalty.fit(rows, FEATURE)


def report(rows: Sequence[Row], judged: Sequence[Row]) -> dict[str, Any]:
    return one_penalty.report(rows, judged, PENALTY)


def main(argv: Sequence[str]) -> int:
    return RECORDED.main(argv, "python -m pagemill_eval.gutter_fit",
                         "Fit and judge the page-gutter penalty on saved eval outputs.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
