"""The cpu engine on real corpus pages: what a user sees in the Markdown of one page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.worker.engines.cpu import CpuEngine
from tests.corpus_pages import parse_file as parse


def test_right_to_left_page_is_in_logical_order(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/docling_right_to_left_01/right_to_left_01.pdf")
    assert "تحسين الإنتاجية وحل المشكلات" in out.markdown
    assert "البرمجة بلغة R و Python" in out.markdown
    assert out.details["source"] == "text_layer" and 0.9 <= (out.confidence or 0) <= 1


def test_malicious_link_target_cannot_break_out_of_markdown(engine: CpuEngine, corpus: Path) -> None:
    case = corpus / "bad/injection_pymupdf4llm_link_malicious"
    out = parse(engine, case / "test_to_markdown_link_malicious.pdf")
    links = re.findall(r"\]\(([^)]*)\)", out.markdown)
    assert links, out.markdown
    assert all(not re.search(r"[\s()<>\[\]]", target) for target in links)
    assert not re.search(r"^#+ IMPORTANT", out.markdown, re.MULTILINE)
    assert "Quarterly Financial Report" in out.markdown


def test_ruled_tables_keep_their_cells_and_spans(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/icdar2013_eu-018/eu-018.pdf")
    tables = re.findall(r"<table>.*?</table>", out.markdown, re.S)
    assert len(tables) == 2
    assert '<td colspan="2">2007</td>' in tables[0]
    assert "<tr><td>Austria</td><td>Single</td><td>25g</td><td>109</td><td>0.9</td>" in tables[0]


def test_whitespace_table_is_rebuilt_and_page_furniture_dropped(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/olmocr_earnings/earnings.pdf")
    assert "<td>Research and development</td><td></td><td>3,423</td>" in out.markdown
    assert not out.markdown.rstrip().endswith("62")  # the page number


def test_running_header_and_footer_are_dropped_but_the_body_stays(engine: CpuEngine, corpus: Path) -> None:
    case = corpus / "dev/olmocr_ff0f0b22c55d8b90dd77d153f48e144fc9db_pg2"
    out = parse(engine, case / "ff0f0b22c55d8b90dd77d153f48e144fc9db_pg2.pdf")
    assert "www.plosntds.org" not in out.markdown
    assert "Volume 8" not in out.markdown
    assert len(out.markdown) > 3000


def test_two_column_page_is_read_column_by_column(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/samplefiles_multicolumn/multicolumn.pdf")
    text = out.markdown
    assert "This is a sample document with two columns filled with Lorem Ipsum text." in text
    assert "consectetuer adipiscing elit" in text  # hyphenated across lines, joined again


@pytest.mark.slow
def test_upside_down_scan_is_turned_and_read(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/docling_ocr_test_rotated_180/ocr_test_rotated_180.pdf")
    assert "Docling bundles PDF document conversion to JSON and Markdown" in out.markdown
    assert out.details["source"] == "ocr" and out.rotation in (0, 180)
    assert out.signals["ocr_mean_score"] > 0.9


@pytest.mark.slow
def test_page_turned_on_its_side_is_read(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/tesseract_phototest-rotated-L/phototest-rotated-L.png")
    assert out.rotation == 90
    assert "quick brown dog jumped over the lazy fox" in out.markdown


@pytest.mark.slow
def test_blank_scanned_page_gives_no_text(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/olmocr_blank_book_pg1/blank_book_pg1.pdf")
    assert sum(c.isalnum() for c in out.markdown) <= 10
    assert out.confidence is not None and 0 <= out.confidence <= 1
