"""block_calibration reads saved outputs: blocks scored against the stretch of the reference they align to, and
page confidences derived from blocks by each rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagemill_eval.block_calibration import block_samples, case_samples_by_rule
from pagemill_eval.run import Outcome
from pagemill_eval.textsim import aligned_similarity

REFERENCE = "Quarterly revenue grew in every region we serve. Costs stayed close to plan all year."


def test_a_block_is_scored_against_the_stretch_it_aligns_to() -> None:
    assert aligned_similarity("Costs stayed close to plan", REFERENCE) == 1.0  # a part, read right
    assert aligned_similarity("Cosls stayeb dose lo p1an", REFERENCE) < 0.9
    assert aligned_similarity("Zqx vvw rrrt kkjh plmm", REFERENCE) < 0.5  # nowhere in the page


def test_blocks_and_pages_from_blocks(tmp_path: Path) -> None:
    corpus, outputs = tmp_path / "corpus", tmp_path / "out"
    (corpus / "case_a").mkdir(parents=True)
    outputs.mkdir()
    (corpus / "case_a" / "a.pdf").write_bytes(b"%PDF-1.4\n")
    (corpus / "case_a" / "a.txt").write_text(REFERENCE, encoding="utf-8")
    (corpus / "MANIFEST.tsv").write_text("file\tkind\tpages\tground_truth_files\tnotes\n"
                                         "case_a/a.pdf\tdigital\t1\tcase_a/a.txt\t[GT:generated]\n",
                                         encoding="utf-8")
    blocks = [{"type": "paragraph", "text": "Quarterly revenue grew in every region we serve.", "confidence": 0.95},
              {"type": "paragraph", "text": "Zqx vvw rrrt kkjh plmm qwe rty", "confidence": 0.3},
              {"type": "figure", "text": "", "confidence": 0.9},
              {"type": "paragraph", "text": "short", "confidence": 0.1}]
    outcome = Outcome(pages=["x"], confidences=[0.7], warnings=[[]], signals=[{}], blocks=[blocks])
    (outputs / "case_a.json").write_text(json.dumps(outcome.to_json()), encoding="utf-8")
    samples = block_samples(corpus, outputs)
    assert [(s.confidence, s.bad) for s in samples] == [(0.95, False), (0.3, True)]  # figure, short: left out
    assert [s.confidence for s in block_samples(corpus, outputs, page_confidence=True)] == [0.7, 0.7]
    case = [{"case_id": "case_a", "min_confidence": 0.7, "teds": None, "text_similarity": 0.6}]
    assert case_samples_by_rule(case, outputs, "page")[0].confidence == 0.7
    assert case_samples_by_rule(case, outputs, "min")[0].confidence == 0.3
    assert case_samples_by_rule(case, outputs, "mean")[0].confidence == pytest.approx(
        (0.95 * 48 + 0.3 * 30 + 0.1 * 5) / 83, abs=1e-6)
