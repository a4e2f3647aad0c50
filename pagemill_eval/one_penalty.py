"""One penalty on one recorded feature, fitted and judged on saved eval outputs: what `table_prose_fit` and
`rescale_fit` share (each says how its feature is read from a saved output and how a case's confidence pays it).

The weight is the one-feature extension of `penalty_fit`: an L2 logistic regression of "text similarity ≥ 0.5" on
a case's weakest page's confidence and the feature, the feature's per-unit weight divided by the confidence's.
Leave-one-corpus-out runs over the corpus names; `--judge` sets are never fitted on, and every set is scored
without the penalty, with the weight in use and with the weight fitted on the named corpora.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pagemill_eval import confidence_fit
from pagemill_eval.confidence_fit import Row
from pagemill_eval.penalty_fit import aurocs, review_figures
from services.worker.engines.cpu.confidence import NEEDS_REVIEW_BELOW

Loader = Callable[[str, Path, Path], list[Row]]


@dataclass(frozen=True, slots=True)
class Penalty:
    """`feature`: the key of `Row.features` the penalty weighs; `in_use`: the engine's weight;
    `case_confidence(row, weight)`: the case's confidence with `weight` taken off; `describe(rows)`: figures of a
    set put before its AUROCs."""

    feature: str
    in_use: float
    case_confidence: Callable[[Row, float], float]
    describe: Callable[[Sequence[Row]], dict[str, Any]]


def fit(rows: Sequence[Row], feature: str) -> float:
    """Confidence taken off per unit of `feature` (0 when the rows hold one class, or the feature would raise it)."""
    if not any(r.bad for r in rows) or all(r.bad for r in rows):
        return 0.0
    model = confidence_fit.fit(rows)
    per_unit = dict(zip(model.names, model.weights / model.scale, strict=True))
    if per_unit["confidence"] <= 0:
        return 0.0
    return round(max(0.0, -float(per_unit[feature]) / float(per_unit["confidence"])), 3)


def case_row(name: str, case_id: str, confidence: float, score: float,
             pages: tuple[tuple[float, dict[str, float]], ...], feature: str) -> Row:
    """A case's row: its pages (each its confidence without the penalty and its features), and as the case's own
    features its weakest page's confidence and `feature`."""
    weakest = min(pages, key=lambda page: page[0])
    return Row(name, case_id, confidence, score, {"confidence": weakest[0], feature: weakest[1][feature]}, pages)


SCAN = tuple(round(0.1 * n, 1) for n in range(11))  # the weights `--scan` scores every set at


def scored(rows: Sequence[Row], weight: float, penalty: Penalty, scan: bool = False) -> dict[str, Any]:
    """AUROCs and `needs_review` figures without the penalty, with the weight in use and with `weight`; with `scan`,
    the AUROCs at each weight of `SCAN` too (for a penalty whose pages are bad only under 0.7, which the fit, of
    "text similarity ≥ 0.5", cannot weigh)."""
    figures: dict[str, Any] = {"samples": len(rows), **penalty.describe(rows)}
    for label, used in (("no_penalty", 0.0), ("in_use", penalty.in_use), ("fitted", weight)):
        confidences = [penalty.case_confidence(r, used) for r in rows]
        figures[label] = aurocs(rows, confidences)
        figures[f"needs_review_{label}"] = review_figures(rows, confidences, NEEDS_REVIEW_BELOW)
    if scan:
        figures["scan"] = {str(w): aurocs(rows, [penalty.case_confidence(r, w) for r in rows]) for w in SCAN}
    return figures


def report(rows: Sequence[Row], judged: Sequence[Row], penalty: Penalty, scan: bool = False) -> dict[str, Any]:
    """The fit on every row, each corpus scored with it, the leave-one-corpus-out folds, and the judged sets (with
    `scan`, each scored at the weights of `SCAN` too)."""
    corpora = sorted({r.corpus for r in rows})
    weight = fit(rows, penalty.feature)
    result: dict[str, Any] = {"fitted_on_all": weight, "in_use": penalty.in_use, "per_corpus": {}, "folds": [],
                              "judged": {}}
    for corpus in corpora:
        result["per_corpus"][corpus] = scored([r for r in rows if r.corpus == corpus], weight, penalty, scan)
    if len(corpora) > 1:
        for held in corpora:
            fold_weight = fit([r for r in rows if r.corpus != held], penalty.feature)
            result["folds"].append({"held_out": held, "weight": fold_weight,
                                    **scored([r for r in rows if r.corpus == held], fold_weight, penalty, scan)})
    for corpus in sorted({r.corpus for r in judged}):
        result["judged"][corpus] = scored([r for r in judged if r.corpus == corpus], weight, penalty, scan)
    return result


def add_sets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("corpora", nargs="+", metavar="NAME=REPORT.json:OUTPUTS")
    parser.add_argument("--judge", action="append", default=[], metavar="NAME=REPORT.json:OUTPUTS")
    parser.add_argument("--scan", action="store_true", help="also score every set at the weights 0, 0.1, ..., 1")


def read_sets(parser: argparse.ArgumentParser, specs: Sequence[str], load: Loader) -> list[Row]:
    """The rows of every `NAME=REPORT.json:OUTPUTS` set, read by `load`."""
    rows: list[Row] = []
    for spec in specs:
        name, _, paths = spec.partition("=")
        report_path, _, outputs = paths.partition(":")
        if not name or not outputs:
            parser.error(f"{spec!r}: expected NAME=REPORT.json:OUTPUTS")
        rows.extend(load(name, Path(report_path), Path(outputs)))
    return rows


def main(argv: Sequence[str], prog: str, description: str, penalty: Penalty, load: Loader) -> int:
    """A fit tool's command line: the named sets are fitted (folds over their names), `--judge` sets scored."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_sets(parser)
    args = parser.parse_args(argv)
    rows = read_sets(parser, args.corpora, load)
    judged = read_sets(parser, args.judge, load)
    print(json.dumps(report(rows, judged, penalty, args.scan), indent=1))
    return 0


@dataclass(frozen=True, slots=True)
class Recorded:
    """A share the engine records in each page's `signals` (`feature`, computed from the words' boxes, which saved
    outputs do not keep) and the signal in which it records what its penalty took off (`taken`): read as the engine
    recorded them, the penalty added back. A page saved before the engine recorded the share (or without a table)
    has none and loses nothing."""

    feature: str
    taken: str
    in_use: float

    def base_confidence(self, confidence: float, signals: dict[str, float]) -> float:
        """The page's confidence without this penalty (what the engine recorded taking off, added back)."""
        return round(min(1.0, confidence + signals.get(self.taken, 0.0)), 4)

    def load(self, name: str, report_path: Path, outputs: Path) -> list[Row]:
        """The scored cases, each with its pages' (confidence without the penalty, {feature: the recorded share})."""
        rows: list[Row] = []
        for row in confidence_fit.load_rows(name, report_path, outputs):
            pages = tuple((self.base_confidence(conf, signals), {self.feature: signals.get(self.feature, 0.0)})
                          for conf, signals in row.pages or ((row.confidence, {}),))
            rows.append(case_row(name, row.case_id, row.confidence, row.score, pages, self.feature))
        return rows

    def case_confidence(self, row: Row, weight: float) -> float:
        """The case's confidence (its weakest page's) with `weight` taken off per unit of share."""
        return min(round(max(0.0, conf - weight * page[self.feature]), 4) for conf, page in row.pages)

    def describe(self, rows: Sequence[Row]) -> dict[str, Any]:
        shared = [r for r in rows if any(page[self.feature] > 0 for _, page in r.pages)]
        return {"bad<0.5": sum(r.score < 0.5 for r in rows), "bad<0.7": sum(r.score < 0.7 for r in rows),
                "with_share": len(shared), "with_share_scores": sorted(r.score for r in shared)}

    @property
    def penalty(self) -> Penalty:
        return Penalty(self.feature, self.in_use, self.case_confidence, self.describe)

    def main(self, argv: Sequence[str], prog: str, description: str) -> int:
        return main(argv, prog, description, self.penalty, self.load)
