"""Fit a small confidence model over the engine's signals and judge it leave-one-corpus-out.

Input: for each corpus, an eval report (`pagemill eval --json`) and the saved outputs beside it
(`--save-outputs`, which carry each page's `signals`). Each scored case is one sample (as in `calibration.py`):
its features are those of its weakest page — the engine's confidence, every numeric signal (absent: 0) and one
0/1 feature per warning — and it is bad when its score is under `calibration.BAD_SCORE`.

The model is an L2-regularised logistic regression on standardised features, fitted by plain gradient descent
(numpy; no extra dependency). `leave_one_corpus_out` fits on all corpora but one and reports the AUROC of the
fitted P(good) on the held-out one, beside the AUROC of the engine's own confidence on the same samples. No
feature names a case or a corpus: a signal that only one corpus has is 0 elsewhere.

    python -m pagemill_eval.confidence_fit dev=dev.json:out/dev wide=wide.json:out/wide gen=gen.json:out/gen
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pagemill_eval.calibration import BAD_SCORE, Sample, auroc, case_samples

L2 = 1.0  # penalty on the (standardised) weights: few bad samples, many signals
STEPS = 2000
RATE = 0.1


@dataclass(frozen=True, slots=True)
class Row:
    corpus: str
    case_id: str
    confidence: float
    score: float
    features: dict[str, float]
    # Every page's (confidence, signals), so a model that rates pages can find the case's weakest page again.
    pages: tuple[tuple[float, dict[str, float]], ...] = ()

    @property
    def bad(self) -> bool:
        return self.score < BAD_SCORE


@dataclass(frozen=True, slots=True)
class Model:
    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    def p_good(self, rows: Sequence[Row]) -> np.ndarray:
        x = (_matrix(rows, self.names) - self.mean) / self.scale
        return np.asarray(1.0 / (1.0 + np.exp(-(x @ self.weights + self.bias))))

    def coefficients(self) -> dict[str, float]:
        """Weights per feature in its standardised units (how much one standard deviation moves the log-odds)."""
        return {name: round(float(w), 4) for name, w in zip(self.names, self.weights, strict=True)}


def page_features(confidence: float, signals: dict[str, float], warnings: Sequence[str]) -> dict[str, float]:
    features = {"confidence": confidence, **{f"signal:{k}": float(v) for k, v in signals.items()}}
    features.update({f"warning:{w}": 1.0 for w in warnings})
    return features


def saved_cases(report_path: Path, outputs_dir: Path) -> Iterator[tuple[Sample, dict[str, Any], list[float]]]:
    """The report's scored cases that have a saved output with page confidences: (sample, output, each page's
    confidence, 1.0 where the page has none)."""
    report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    for sample in case_samples(report["cases"]):
        saved = outputs_dir / f"{sample.case_id}.json"
        if not saved.is_file():
            continue
        output = json.loads(saved.read_text(encoding="utf-8"))
        confidences = [c if c is not None else 1.0 for c in output.get("confidences") or []]
        if confidences:
            yield sample, output, confidences


def load_rows(corpus: str, report_path: Path, outputs_dir: Path) -> list[Row]:
    """The report's scored cases with the features of each one's weakest page (from its saved output)."""
    rows: list[Row] = []
    for sample, output, confidences in saved_cases(report_path, outputs_dir):
        weakest = min(range(len(confidences)), key=confidences.__getitem__)
        signals = (output.get("signals") or [{}] * len(confidences))[weakest] or {}
        warnings = (output.get("warnings") or [[]] * len(confidences))[weakest] or []
        every = output.get("signals") or [{}] * len(confidences)
        pages = tuple((conf, dict(page or {})) for conf, page in zip(confidences, every, strict=False))
        rows.append(Row(corpus, sample.case_id, sample.confidence, sample.score,
                        page_features(confidences[weakest], signals, warnings), pages))
    return rows


def _matrix(rows: Sequence[Row], names: Sequence[str]) -> np.ndarray:
    return np.array([[row.features.get(name, 0.0) for name in names] for row in rows], dtype=np.float64)


def fit(rows: Sequence[Row], *, l2: float = L2) -> Model:
    """Logistic regression of good (score >= BAD_SCORE) on the standardised features."""
    names = tuple(sorted({name for row in rows for name in row.features}))
    x = _matrix(rows, names)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    x = (x - mean) / scale
    y = np.array([0.0 if row.bad else 1.0 for row in rows])
    weights = np.zeros(len(names))
    bias = float(np.log((y.sum() + 1) / (len(y) - y.sum() + 1)))
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ weights + bias)))
        gradient = x.T @ (p - y) / len(y) + l2 * weights / len(y)
        weights -= RATE * gradient
        bias -= RATE * float((p - y).mean())
    return Model(names, mean, scale, weights, bias)


def _auroc(rows: Sequence[Row], scores: Sequence[float]) -> float | None:
    value = auroc([Sample(r.case_id, float(s), r.score) for r, s in zip(rows, scores, strict=True)])
    return None if value is None else round(value, 4)


def leave_one_corpus_out(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One fold per corpus: fitted on the others, scored on it (and the engine's own confidence beside)."""
    folds: list[dict[str, Any]] = []
    for held in sorted({row.corpus for row in rows}):
        train = [r for r in rows if r.corpus != held]
        test = [r for r in rows if r.corpus == held]
        if not any(r.bad for r in train) or all(r.bad for r in train):
            folds.append({"held_out": held, "samples": len(test), "bad": sum(r.bad for r in test),
                          "auroc_model": None, "auroc_engine": _auroc(test, [r.confidence for r in test]),
                          "note": "the other corpora hold only one class"})
            continue
        model = fit(train)
        folds.append({"held_out": held, "samples": len(test), "bad": sum(r.bad for r in test),
                      "auroc_model": _auroc(test, model.p_good(test).tolist()),
                      "auroc_engine": _auroc(test, [r.confidence for r in test])})
    return folds


def main(argv: Sequence[str]) -> int:
    rows: list[Row] = []
    for arg in argv:
        name, _, paths = arg.partition("=")
        report, _, outputs = paths.partition(":")
        rows.extend(load_rows(name, Path(report), Path(outputs)))
    result = {"folds": leave_one_corpus_out(rows), "fitted_on_all": fit(rows).coefficients() if rows else {}}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
