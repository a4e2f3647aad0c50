"""Does the engine's confidence predict bad pages? The AUROC of confidence for "this case scores below 0.5".

Each scored case is one sample: its confidence is the lowest confidence of its pages (a document is as weak as
its weakest page), its score is TEDS when it has table references, else text similarity. Cases with only
olmOCR rules are counted apart, on their rule pass rate, so the headline follows the issue's definition.
The AUROC is the chance that a good case (score >= 0.5) has a higher confidence than a bad one, ties half.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

BAD_SCORE = 0.5


@dataclass(frozen=True, slots=True)
class Sample:
    case_id: str
    confidence: float
    score: float

    @property
    def bad(self) -> bool:
        return self.score < BAD_SCORE


def auroc(samples: Sequence[Sample]) -> float | None:
    """Mann-Whitney estimate of P(confidence of a good sample > confidence of a bad one); None without both."""
    good = [s.confidence for s in samples if not s.bad]
    bad = [s.confidence for s in samples if s.bad]
    if not good or not bad:
        return None
    wins = 0.0
    for g in good:
        for b in bad:
            wins += 1.0 if g > b else 0.5 if g == b else 0.0
    return wins / (len(good) * len(bad))


def spearman(samples: Sequence[Sample]) -> float | None:
    """Rank correlation of confidence and score (average ranks for ties); None under three samples."""
    if len(samples) < 3:
        return None
    x = _ranks([s.confidence for s in samples])
    y = _ranks([s.score for s in samples])
    mean = (len(samples) + 1) / 2
    cov = sum((a - mean) * (b - mean) for a, b in zip(x, y, strict=True))
    var_x = sum((a - mean) ** 2 for a in x)
    var_y = sum((b - mean) ** 2 for b in y)
    return cov / (var_x * var_y) ** 0.5 if var_x and var_y else None


def _ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def roc_curve(samples: Sequence[Sample]) -> list[dict[str, float]]:
    """One point per distinct confidence: flagging every case at or below it as bad, the share of bad cases
    caught (true positive rate) and of good cases flagged by mistake (false positive rate)."""
    bad_total = sum(s.bad for s in samples)
    good_total = len(samples) - bad_total
    points = [{"threshold": 0.0, "tpr": 0.0, "fpr": 0.0}]
    for threshold in sorted({s.confidence for s in samples}):
        flagged = [s for s in samples if s.confidence <= threshold]
        points.append({"threshold": round(threshold, 4),
                       "tpr": round(sum(s.bad for s in flagged) / bad_total, 4) if bad_total else 0.0,
                       "fpr": round(sum(not s.bad for s in flagged) / good_total, 4) if good_total else 0.0})
    return points


def case_samples(cases: Iterable[dict[str, Any]], *, rules_only: bool = False) -> list[Sample]:
    """Samples from the report's case entries (`CaseScore.to_json()`): TEDS, else text similarity; with
    `rules_only`, the cases that have neither, on their rule pass rate."""
    samples: list[Sample] = []
    for case in cases:
        confidence = case.get("min_confidence")
        if confidence is None:
            continue
        if rules_only:
            if case.get("teds") is not None or case.get("text_similarity") is not None:
                continue
            score = case.get("rule_pass_rate")
        else:
            score = case["teds"] if case.get("teds") is not None else case.get("text_similarity")
        if score is not None:
            samples.append(Sample(case["case_id"], float(confidence), float(score)))
    return samples


def summary(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures `--json` carries under `calibration`."""
    main = case_samples(cases)
    rules = case_samples(cases, rules_only=True)
    value = auroc(main)
    rules_value = auroc(rules)
    rank = spearman(main)
    return {
        "definition": "AUROC of the case's lowest page confidence for score < 0.5 (TEDS, else text similarity)",
        "samples": len(main), "bad": sum(s.bad for s in main),
        "auroc": None if value is None else round(value, 4),
        "spearman": None if rank is None else round(rank, 4), "roc": roc_curve(main),
        "rules_only": {"samples": len(rules), "bad": sum(s.bad for s in rules),
                       "auroc": None if rules_value is None else round(rules_value, 4)},
    }
