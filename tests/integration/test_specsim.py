"""`pagemill specsim` on real corpus pages: page-level targets, the real command, and what anchors must do."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pagemill_eval.specsim.corpus import NoPageTruth, page_targets, read_manifest
from pagemill_eval.specsim.run import document_pages
from services.core.pdf import pdf_text_layer

REPO = Path(__file__).resolve().parents[2]


def case(corpus: Path, case_id: str):  # type: ignore[no-untyped-def]
    return next(c for c in read_manifest(corpus / "dev") if c.case_id == case_id)


def test_multi_page_markdown_is_cut_where_the_pdf_pages_begin(corpus: Path) -> None:
    found = case(corpus, "docling_multi_page")
    pages = document_pages(found.document.read_bytes())
    targets = page_targets(found, len(pages))
    assert [t.page_number for t in targets] == [1, 2, 3, 4, 5]
    for target, (_, _, page_pdf) in zip(targets, pages, strict=True):
        # the PDF's own text of that page starts with the same words (punctuation and markup aside)
        first_words = re.findall(r"\w+", target.text)[:4]
        assert first_words == re.findall(r"\w+", pdf_text_layer(page_pdf))[:4], target.page_number
    assert "## The Evolution of the Word Processor" in targets[0].text
    assert "## The Evolution of the Word Processor" not in targets[1].text


def test_cases_without_a_page_level_reference_are_skipped_with_a_reason(corpus: Path) -> None:
    with pytest.raises(NoPageTruth, match="olmocr_tests.jsonl"):
        page_targets(case(corpus, "olmocr_earnings"), 1)
    with pytest.raises(NoPageTruth, match="without page boundaries"):
        page_targets(case(corpus, "samplefiles_multicolumn"), 3)
    tables = page_targets(case(corpus, "icdar2013_eu-002"), 1)
    assert tables[0].scope == "tables" and tables[0].text.startswith("<table")
    latex = page_targets(case(corpus, "latex_prove-transform-random-variable"), 1)[0].text
    assert "\\begin{theorem}" in latex and "\\documentclass" not in latex and "\\usepackage" not in latex


@pytest.mark.slow
def test_specsim_command_on_a_corpus_slice(corpus: Path, tmp_path: Path) -> None:
    out, docs = tmp_path / "specsim.json", tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n## Control plane\n\nkept as it is\n", encoding="utf-8")
    command = [sys.executable, "-m", "services.cli", "specsim", str(corpus / "dev"),
               "--case", "pypdf_crazyones", "--case", "tesseract_phototest", "--case", "olmocr_earnings",
               "--json", str(out), "--write", str(docs)]
    finished = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "| **overall** | 2 |" in finished.stdout

    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["overall"]) == {"none", "text_layer", "ocr", "engine"}
    assert set(report["by_kind"]) == {"digital", "image"}
    assert all(set(figures) == {"none", "text_layer", "ocr", "engine"} for figures in report["by_kind"].values())
    assert [r["num_speculative_tokens"] for r in report["runs"]] == [4, 8]
    assert report["params"]["num_speculative_tokens"] == 4 and report["params"]["prompt_lookup_max"] == 32
    assert [s["case_id"] for s in report["skipped"]] == ["olmocr_earnings"]
    for value in report["overall"].values():
        assert 1.0 <= value <= 5.0  # at least the bonus token, at most k + 1

    digital, image = report["by_kind"]["digital"], report["by_kind"]["image"]
    # The property the whole idea rests on: the page's own text in the prompt makes drafts hit.
    assert digital["text_layer"] > digital["none"] + 0.5
    # An image has no text layer, so that anchor is no anchor; its OCR hypothesis is.
    assert image["text_layer"] == image["none"]
    assert image["ocr"] > image["none"]
    k4 = report["runs"][0]["by_kind"]["digital"]
    assert set(k4) >= {"none", "text_layer", "ocr", "engine", "pages", "target_tokens"} and k4["pages"] == 1
    assert k4["engine"] > k4["none"] + 0.5  # what the engine sends: the cpu engine's reading of the page
    assert image["engine"] == image["ocr"]  # a scan's reading is its OCR
    k8 = report["runs"][1]["by_kind"]["digital"]
    assert k8["text_layer"] >= digital["text_layer"]  # longer drafts cannot commit less when they are copies
    assert report["pages"][0]["anchor_source"] == "text_layer"

    text = docs.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks\n\n## Control plane\n\nkept as it is\n")
    assert text.count("<!-- specsim:start -->") == 1 and "`pagemill specsim " in text
    assert "| **overall** | 2 |" in text
