"""Table boxes against ground truth that has boxes (ICDAR-2013 regions, PubTabNet cells): the cpu engine's own
table elements and the aligner's boxes for the ground-truth tables (docs/benchmarks.md, "Element boxes")."""

from __future__ import annotations

import pytest

from pagemill_eval.boxes import iou, measure, truth_tables
from pagemill_eval.corpus import load_cases
from tests.harness import CORPUS

CASES = ["icdar2013_eu-009a", "icdar2013_us-026", "icdar2013_eu-018", "pubtabnet_PMC1626454_002_00"]

pytestmark = pytest.mark.skipif(not (CORPUS / "dev").is_dir(), reason=f"the shared corpus is not at {CORPUS}")


def test_icdar_regions_turn_into_top_left_points() -> None:
    [case] = load_cases(CORPUS / "dev", ["icdar2013_eu-002"])
    [table] = truth_tables(case)
    # -reg.xml says x 124..507, y 499..630 from the bottom of an A4 page (842 pt tall).
    assert table.page == 1 and table.bbox == pytest.approx((124, 842 - 630, 507, 842 - 499), abs=1)
    assert "<td>2004</td>" in table.html


def test_table_boxes_match_the_ground_truth() -> None:
    report = measure([CORPUS / "dev"], patterns=CASES)
    rows = report["tables"]
    assert len(rows) == 5  # eu-018 has two tables
    for row in rows:
        assert row["cpu_iou"] >= 0.8, row
        assert row["aligned_iou"] >= 0.9 and row["alignment"] >= 0.9 and row["whole_page_iou"] >= 0.9, row
    assert report["overall"]["cpu_mean_iou"] >= 0.85 and report["overall"]["aligned_mean_iou"] >= 0.95


def test_iou() -> None:
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(1 / 3)
    assert iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0 and iou(None, (0, 0, 1, 1)) == 0.0
