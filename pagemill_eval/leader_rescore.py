"""Re-score saved outputs of a generated set with dot leaders taken out of both sides, and judge confidence on it.

A table of contents' text layer holds its dot leaders (". . . . . 26") as characters; the engine writes the
entries without them (often as a table of entry and page number). Text similarity then counts every leader dot
as a miss, and a page read word for word scores 0.3. This tool takes every run of four or more dots (spaced or
not) out of the reference and the output alike, for every case, re-scores text similarity, and reports the
confidence AUROC on both scorings (bad < 0.5 and < 0.7) with the `needs_review` figures, so a page that is "bad"
only by its leaders can be told apart from one read wrong. It changes no score `pagemill eval` reports. Sets made
since 2026-12-06 hold no leaders in their references (`calibset.page_text`), so the two scorings agree on them; the
tool is for outputs of sets made before.

    python -m pagemill_eval.leader_rescore CORPUS_DIR REPORT.json OUTPUTS_DIR
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pagemill_eval.calibration import case_samples
from pagemill_eval.calibset import without_leaders
from pagemill_eval.confidence_fit import Row
from pagemill_eval.corpus import read_manifest
from pagemill_eval.penalty_fit import aurocs, review_figures
from pagemill_eval.textsim import similarity
from services.worker.engines.cpu.confidence import NEEDS_REVIEW_BELOW


def rescore(corpus_dir: Path, report_path: Path, outputs: Path) -> list[tuple[Row, float]]:
    """Each scored case with a text reference, and its text similarity with the leaders out."""
    report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    references = {case.case_id: case.text_reference() for case in read_manifest(corpus_dir)}
    scored: list[tuple[Row, float]] = []
    for sample in case_samples(report["cases"]):
        reference = references.get(sample.case_id)
        saved = outputs / f"{sample.case_id}.json"
        if reference is None or not saved.is_file():
            continue
        output = json.loads(saved.read_text(encoding="utf-8"))
        markdown = "\n".join(page for page in output.get("pages") or [] if isinstance(page, str))
        wanted = reference.path.read_text(encoding="utf-8", errors="replace")
        row = Row(corpus_dir.name, sample.case_id, sample.confidence, sample.score, {})
        scored.append((row, round(similarity(without_leaders(markdown), without_leaders(wanted)), 4)))
    return scored


def report(scored: Sequence[tuple[Row, float]]) -> dict[str, Any]:
    rows = [row for row, _ in scored]
    leaderless = [Row(r.corpus, r.case_id, r.confidence, score, {}) for r, score in scored]
    confidences = [r.confidence for r in rows]
    return {
        "samples": len(rows),
        "as_scored": {"bad<0.5": sum(r.score < 0.5 for r in rows), "auroc": aurocs(rows, confidences),
                      "needs_review": review_figures(rows, confidences, NEEDS_REVIEW_BELOW)},
        "leaders_out": {"bad<0.5": sum(r.score < 0.5 for r in leaderless), "auroc": aurocs(leaderless, confidences),
                        "needs_review": review_figures(leaderless, confidences, NEEDS_REVIEW_BELOW)},
        "moved": {r.case_id: [r.score, score] for r, score in scored if abs(score - r.score) >= 0.05},
    }


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    corpus_dir, report_path, outputs = (Path(arg) for arg in argv)
    print(json.dumps(report(rescore(corpus_dir, report_path, outputs)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
