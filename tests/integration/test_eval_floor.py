"""`pagemill eval` on a slice of the dev corpus must keep the scores recorded in eval_floor.json.

The slice (digital text, tables, scanned and image OCR, olmOCR rules, a blank page) is the Makefile's
EVAL_SLICE; after the engine improves, `make eval-floor` re-records the file from a fresh run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pagemill_eval.evaluate import evaluate
from pagemill_eval.run import LocalPagemill
from services.cli import main
from services.core.settings import Settings

pytestmark = pytest.mark.slow

FLOOR = Path(__file__).with_name("eval_floor.json")
TOLERANCE = 0.02  # OCR scores move a little between onnxruntime builds
METRICS = ("rule_pass_rate", "text_similarity", "teds", "teds_struct")


def test_scores_do_not_drop_below_the_recorded_floor(corpus: Path) -> None:
    floor = json.loads(FLOOR.read_text(encoding="utf-8"))
    patterns = [case["case_id"] for case in floor["cases"]]
    report = evaluate(corpus / "dev", LocalPagemill(Settings(), "cpu"), patterns=patterns)
    current = {case["case_id"]: case for case in report["cases"]}
    assert sorted(current) == sorted(patterns), "a case of the floor is missing from the corpus"
    drops = []
    for recorded in floor["cases"]:
        now = current[recorded["case_id"]]
        for metric in METRICS:
            if recorded[metric] is None:
                continue
            if now[metric] is None or now[metric] < recorded[metric] - TOLERANCE:
                drops.append(f"{recorded['case_id']} {metric}: {now[metric]} < recorded {recorded[metric]}")
        if now["error"] or now["failed_pages"] > recorded["failed_pages"]:
            drops.append(f"{recorded['case_id']}: failed ({now['error'] or now['failed_pages']} pages)")
    assert not drops, "scores dropped below eval_floor.json:\n" + "\n".join(drops)


def test_eval_command_writes_the_report(corpus: Path, tmp_path: Path) -> None:
    """The real command, on the instant fake engine: per-case lines, the summary, and the JSON blocks."""
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["eval", str(corpus / "dev"), "--engine", "fake", "--cases", "pypdf_*",
                                       "--cases", "icdar2013_eu-002", "--cases", "olmocr_earnings",
                                       "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "pypdf_crazyones" in result.output and "OVERALL" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report) == {"meta", "overall", "by_kind", "calibration", "empty_pages", "cases"}
    assert [c["case_id"] for c in report["cases"]] == ["olmocr_earnings", "pypdf_crazyones", "icdar2013_eu-002"]
    assert report["overall"]["olmocr_rules"] == 5 and report["overall"]["table_cases"] == 1
    # the fake engine writes a placeholder sentence: it must score far below a real parse
    assert report["overall"]["text_similarity"] < 0.3
    assert report["overall"]["teds"] == 0.0
    assert report["by_kind"]["table"]["cases"] == 2
