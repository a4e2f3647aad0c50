"""`pagemill eval`: every case of a corpus through one parser, scored, reported per case, per kind and overall."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pagemill_eval.corpus import Case, load_cases
from pagemill_eval.math_render import MathComparer, default_comparer
from pagemill_eval.report import build_report
from pagemill_eval.run import Outcome, Source
from pagemill_eval.score import CaseScore, score_case


def evaluate(corpus_dir: Path, source: Source, *, patterns: list[str] | None = None,
             math: MathComparer | None = None, save_outputs: Path | None = None,
             on_case: Callable[[CaseScore], None] | None = None) -> dict[str, Any]:
    """Parses and scores each case in manifest order; returns the report `--json` writes."""
    cases = load_cases(corpus_dir, patterns)
    if not cases:
        raise ValueError(f"no case of {corpus_dir} matches {patterns}")
    math = math or default_comparer()
    started = time.perf_counter()
    scores: list[CaseScore] = []
    for case in cases:
        outcome = _parse(source, case)
        if save_outputs is not None:
            save_outputs.mkdir(parents=True, exist_ok=True)
            (save_outputs / f"{case.case_id}.json").write_text(json.dumps(outcome.to_json(), ensure_ascii=False),
                                                                encoding="utf-8")
        score = score_case(case, outcome, math)
        scores.append(score)
        if on_case:
            on_case(score)
    meta = {"corpus": str(corpus_dir), "parser": source.name, "cases_glob": patterns or [],
            "math_renderer": math.name, "python": platform.python_version(),
            "wall_seconds": round(time.perf_counter() - started, 2)}
    return build_report(scores, meta)


def _parse(source: Source, case: Case) -> Outcome:
    try:
        return source.parse(case)
    except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run; it is scored as failed
        return Outcome(error=f"{type(exc).__name__}: {exc}")
