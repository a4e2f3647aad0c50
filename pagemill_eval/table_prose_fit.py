"""Fit and judge a table-prose penalty on saved eval outputs: confidence − weight × `table_prose_share`.

`table_prose_share` (`confidence.table_prose_share`) is the share of a page's words sitting in table cells of six
words or more: sentences laid out as cells, as when a page's columns or a list of definitions are taken for one
table. Outputs saved before the engine recorded the signal carry what it is computed from (each page's Markdown,
whose tables are HTML, and its elements' words), so it is recomputed here the same way for every saved output.

The weight is the one-feature extension of `penalty_fit`: an L2 logistic regression of "text similarity ≥ 0.5" on
a case's weakest page's confidence (as shipped) and its share, the share's per-unit weight divided by the
confidence's. Leave-one-corpus-out runs over the names; `--judge` sets are never fitted on and scored without the
penalty, with the weight in use (`tuning.TABLE_PROSE_PENALTY`) and with the weight fitted on the named corpora.

    python -m pagemill_eval.table_prose_fit generated=gen28.json:out/gen28 generated=gen30.json:out/gen30 \\
        [--judge debian41=deb41.json:out/deb41]
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pagemill_eval import confidence_fit, one_penalty
from pagemill_eval.confidence_fit import Row
from pagemill_eval.one_penalty import Penalty
from services.worker.engines.cpu.confidence import table_prose_share
from services.worker.engines.cpu.tuning import TABLE_PROSE_PENALTY

_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)
_LEFT_OUT = frozenset({"figure", "page_header", "page_footer"})


def saved_share(markdown: str, blocks: Sequence[dict[str, Any]]) -> float:
    """`table_prose_share` of a saved page: its Markdown's HTML tables against its elements' words."""
    words = sum(len((b.get("text") or "").split()) for b in blocks if b.get("type") not in _LEFT_OUT)
    return round(table_prose_share(_TABLE.findall(markdown), words), 4)


def load(name: str, report_path: Path, outputs: Path) -> list[Row]:
    """The scored cases, each with its pages' (confidence without the table-prose penalty, {"table_prose_share":
    ...}). A page saved by an engine that took the penalty off recorded it (`table_prose_penalty`): it is added
    back, so every saved output is read as the engine without the penalty gave it."""
    rows: list[Row] = []
    for sample, output, confidences in confidence_fit.saved_cases(report_path, outputs):
        markdown = [p if isinstance(p, str) else "" for p in output.get("pages") or []]
        blocks = output.get("blocks") or []
        signals = output.get("signals") or []
        pages = tuple((round(min(1.0, conf + ((signals[i] if i < len(signals) else None) or {}).get(
                           "table_prose_penalty", 0.0)), 4),
                       {"table_prose_share": saved_share(markdown[i] if i < len(markdown) else "",
                                                         blocks[i] if i < len(blocks) else [])})
                      for i, conf in enumerate(confidences))
        rows.append(one_penalty.case_row(name, sample.case_id, sample.confidence, sample.score, pages,
                                         "table_prose_share"))
    return rows


def case_confidence(row: Row, weight: float) -> float:
    return min(round(max(0.0, conf - weight * signals["table_prose_share"]), 4) for conf, signals in row.pages)


def _describe(rows: Sequence[Row]) -> dict[str, Any]:
    return {"with_share": sum(r.features["table_prose_share"] > 0 for r in rows)}


PENALTY = Penalty("table_prose_share", TABLE_PROSE_PENALTY, case_confidence, _describe)


def fit(rows: Sequence[Row]) -> float:
    """Confidence taken off per unit of share (0 when the rows hold one class, or the share would raise it)."""
    return one_penalty.fit(rows, "table_prose_share")


def report(rows: Sequence[Row], judged: Sequence[Row]) -> dict[str, Any]:
    return one_penalty.report(rows, judged, PENALTY)


def main(argv: Sequence[str]) -> int:
    return one_penalty.main(argv, "python -m pagemill_eval.table_prose_fit",
                            "Fit and judge the table-prose penalty on saved eval outputs.", PENALTY, load)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
