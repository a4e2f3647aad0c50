"""confidence_fit reads an eval report and its saved outputs: the weakest page's features, one row per case."""

from __future__ import annotations

import json
from pathlib import Path

from pagemill_eval.confidence_fit import load_rows
from pagemill_eval.run import Outcome


def test_rows_carry_the_weakest_pages_signals_and_warnings(tmp_path: Path) -> None:
    outputs = tmp_path / "out"
    outputs.mkdir()
    cases = [{"case_id": "two_pages", "min_confidence": 0.4, "teds": None, "text_similarity": 0.3},
             {"case_id": "unsaved", "min_confidence": 0.9, "teds": None, "text_similarity": 0.9},
             {"case_id": "table", "min_confidence": 0.8, "teds": 0.95, "text_similarity": 0.2}]
    (tmp_path / "report.json").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    two = Outcome(pages=["a", "b"], confidences=[0.9, 0.4], warnings=[[], ["text_dropped"]],
                  signals=[{"agreement": 0.95}, {"agreement": 0.2, "coverage": 0.3}])
    table = Outcome(pages=["t"], confidences=[0.8], warnings=[[]], signals=[{}])
    (outputs / "two_pages.json").write_text(json.dumps(two.to_json()), encoding="utf-8")
    (outputs / "table.json").write_text(json.dumps(table.to_json()), encoding="utf-8")
    rows = {row.case_id: row for row in load_rows("dev", tmp_path / "report.json", outputs)}
    assert set(rows) == {"two_pages", "table"}  # a case without a saved output is left out
    weak = rows["two_pages"]
    assert weak.bad and weak.corpus == "dev"
    assert weak.features == {"confidence": 0.4, "signal:agreement": 0.2, "signal:coverage": 0.3,
                             "warning:text_dropped": 1.0}
    assert not rows["table"].bad and rows["table"].score == 0.95  # TEDS wins over text similarity
