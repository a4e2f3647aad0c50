"""A generated reference card of sentence-long descriptions, read from its text layer by the cpu engine: its
descriptions come out as paragraphs beside `code` blocks of their syntax, with no table to check (issue 28: the
Debian judges' asymptote page 3 kept 1.0), and the order its producer wrote them in tells it; scanned and read by
OCR, the shape of the blocks does."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core.elements import ElementType
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.confidence import NEEDS_REVIEW_BELOW
from services.worker.engines.cpu.engine import CpuEngine
from tests.corpus_pages import generated_card, parse_file


def wordy_card(corpus: Path, tmp_path: Path, degradation: str) -> Path:
    """The PDF of the generated wordy card (`--card-tabs --card-long-sections --card-wordy`, seed 5) in `degradation`
    (`cards`: born digital; `cards_scan`: its rendering)."""
    return generated_card(corpus, tmp_path / "set", degradation, seed=5, tabs=True, long_sections=True, wordy=True)


def test_a_card_read_as_paragraphs_beside_code_blocks_is_sent_to_review(wordy_corpus: Path, tmp_path: Path,
                                                                       engine: CpuEngine,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = wordy_card(wordy_corpus, tmp_path, "cards")
    output = parse_file(engine, path)
    kinds = {e.type for e in output.elements}
    assert ElementType.TABLE not in kinds and {ElementType.PARAGRAPH, ElementType.CODE} <= kinds
    assert output.signals["beside_order_disorder"] >= 0.8  # written entry by entry, read block by block
    assert output.signals["beside_order_share"] >= 0.5
    assert output.confidence is not None and output.confidence < NEEDS_REVIEW_BELOW
    code = [e for e in output.elements if e.type == ElementType.CODE]
    assert min(e.confidence or 0.0 for e in code) < 0.7  # the blocks are where a reviewer is sent
    monkeypatch.setattr(tuning, "BESIDE_ORDER_PENALTY", 0.0)
    assert (parse_file(engine, path).confidence or 0.0) > 0.9  # what the page kept before


def test_the_same_card_scanned_and_read_by_ocr_has_its_entries_read_apart(wordy_corpus: Path, tmp_path: Path,
                                                                         engine: CpuEngine,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """OCR has no producer's order: the shape tells, sentences beside one-word lines (`beside.entry_readings`)."""
    path = wordy_card(wordy_corpus, tmp_path, "cards_scan")
    output = parse_file(engine, path)
    assert output.details.get("source") == "ocr" and "beside_order_disorder" not in output.signals
    assert output.signals["beside_entries_share"] >= 0.5
    assert output.confidence is not None and output.confidence < NEEDS_REVIEW_BELOW
    monkeypatch.setattr(tuning, "BESIDE_ENTRIES_PENALTY", 0.0)
    assert (parse_file(engine, path).confidence or 0.0) > 0.9  # what the page kept before
