"""A generated reference card of long sections, read from its text layer by the cpu engine: its page columns come
out as one table's rows that no section break tells (issue 28: 15 such cards kept 0.96-1.0), and the order its
producer wrote them in does. Scanned and read by OCR, with no producer's order to ask, one section break tells it."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core.elements import ElementType
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.engine import CpuEngine
from tests.corpus_pages import generated_card, parse_file


def test_a_long_section_card_read_as_one_table_is_sent_to_review(wordy_corpus: Path, tmp_path: Path,
                                                                 engine: CpuEngine,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = generated_card(wordy_corpus, tmp_path / "set", "cards", seed=5, tabs=True, long_sections=True)
    output = parse_file(engine, path)
    tables = [e for e in output.elements if e.type == ElementType.TABLE]
    assert tables and output.signals["table_flow_breaks"] < tuning.TABLE_FLOW_MIN_BREAKS  # no break tells it
    assert output.signals["table_order_disorder"] >= 0.3
    assert output.confidence is not None and output.confidence < 0.5
    assert min(t.confidence or 0.0 for t in tables) < 0.5  # the table is where a reviewer is sent
    monkeypatch.setattr(tuning, "TABLE_ORDER_PENALTY", 0.0)
    assert (parse_file(engine, path).confidence or 0.0) > 0.9  # what the page kept before


def test_a_long_section_card_read_by_ocr_breaking_once_is_sent_to_review(wordy_corpus: Path, tmp_path: Path,
                                                                         engine: CpuEngine,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = generated_card(wordy_corpus, tmp_path / "set", "cards_scan", seed=2, long_sections=True)
    output = parse_file(engine, path)
    tables = [e for e in output.elements if e.type == ElementType.TABLE]
    assert tables and output.signals["table_flow_breaks"] == 1  # its page columns break apart once
    assert "table_order_disorder" not in output.signals  # no producer's order to ask
    assert output.signals["table_flow_share"] >= 0.9
    assert output.confidence is not None and output.confidence < 0.5
    monkeypatch.setattr(tuning, "TABLE_FLOW_MIN_BREAKS_UNORDERED", tuning.TABLE_FLOW_MIN_BREAKS)
    assert (parse_file(engine, path).confidence or 0.0) > 0.9  # what the page kept before
