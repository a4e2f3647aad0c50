"""The generated calibration set: deterministic by seed, each degradation does what its name says."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest

from pagemill_eval.calibset import (
    CARD_DEGRADATIONS,
    CARD_KINDS,
    INDEX_KINDS,
    KINDS,
    GeneratedCase,
    page_text,
    write_set,
)
from pagemill_eval.corpus import Case, read_manifest
from tests.pdfs import SENTENCE, make_pdf

HEADER = "file\tsource_repo\tsource_path\tcommit\tlicense\tkind\tpages\tground_truth_files\tnotes\n"


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    """A two-case born-digital corpus (one with table rules) and a scanned case the generator must skip."""
    root = tmp_path / "src"
    rows = []
    for name, words, rules, kind in (("alpha", "alpha", 0, "digital"), ("beta", "beta", 4, "digital,table"),
                                     ("gamma", "gamma", 0, "scan")):
        (root / name).mkdir(parents=True)
        lines = [f"{number} {words} {SENTENCE}" for number in range(1, 9)]
        (root / name / f"{name}.pdf").write_bytes(make_pdf(lines=lines, rules=rules))
        rows.append(f"{name}/{name}.pdf\t-\t-\t-\tMIT\t{kind}\t1\t-\t[GT:none]\n")
    (root / "MANIFEST.tsv").write_text(HEADER + "".join(rows), encoding="utf-8")
    return root


def _text(path: Path) -> str:
    pdf = pdfium.PdfDocument(path)
    try:
        return page_text(pdf[0])
    finally:
        pdf.close()


def _pixels(path: Path) -> np.ndarray:
    pdf = pdfium.PdfDocument(path)
    try:
        return np.asarray(pdf[0].render(scale=1).to_pil().convert("L"))
    finally:
        pdf.close()


def test_every_kind_is_written_with_the_text_layer_as_reference(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    cases = write_set([corpus], out, seed=5, kinds_per_page=len(KINDS))
    assert {c.source.case.case_id for c in cases} == {"alpha", "beta"}  # the scanned case is no source
    assert sorted({c.degradation for c in cases}) == sorted(KINDS)
    manifest = {c.case_id: c for c in read_manifest(out)}
    assert len(manifest) == len(cases) == 2 * len(KINDS)
    for case in cases:
        entry = manifest[case.case_id]
        reference = entry.text_reference()
        assert reference is not None and entry.tier == "generated"
        assert reference.path.read_text(encoding="utf-8").strip() == case.source.text
        layer = _text(entry.input_path)
        if case.degradation == "clean":
            assert layer == case.source.text
        elif case.degradation == "wrong_layer":
            other = "beta" if case.source.case.case_id == "alpha" else "alpha"
            assert other in layer and case.source.case.case_id not in layer
        else:
            assert layer == "", case.degradation  # image only: the text layer is dropped


def test_table_rules_are_removed_and_the_text_kept(corpus: Path, tmp_path: Path) -> None:
    cases = write_set([corpus], tmp_path / "gen", seed=5, kinds_per_page=len(KINDS))
    beta = {c.degradation: tmp_path / "gen" / c.case_id / f"{c.case_id}.pdf"
            for c in cases if c.source.case.case_id == "beta"}
    clean, stripped = _pixels(beta["clean"]), _pixels(beta["no_rules"])
    rule_rows = (clean < 128).mean(axis=1) > 0.5
    assert rule_rows.any()
    assert not ((stripped < 128).mean(axis=1) > 0.5).any()
    assert (stripped < 128).sum() > 0.5 * (clean[~rule_rows] < 128).sum()  # the words are still there


def test_the_same_seed_gives_the_same_set_and_another_seed_another(corpus: Path, tmp_path: Path) -> None:
    first = write_set([corpus], tmp_path / "a", seed=7, kinds_per_page=4)
    second = write_set([corpus], tmp_path / "b", seed=7, kinds_per_page=4)
    assert (tmp_path / "a" / "MANIFEST.tsv").read_text() == (tmp_path / "b" / "MANIFEST.tsv").read_text()
    for case in first:
        name = f"{case.case_id}/{case.case_id}.pdf"
        assert np.array_equal(_pixels(tmp_path / "a" / name), _pixels(tmp_path / "b" / name))
    assert [c.case_id for c in first] == [c.case_id for c in second]
    others = [write_set([corpus], tmp_path / f"s{seed}", seed=seed, kinds_per_page=4) for seed in range(8, 12)]
    plans = {tuple((c.case_id, c.detail) for c in run) for run in others}
    assert len(plans) > 1


def test_the_command_writes_the_set_and_says_what_it_holds(corpus: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from services.cli import main

    out = tmp_path / "cli"
    result = CliRunner().invoke(main, ["calibrate-set", str(corpus), "--out", str(out), "--per-page", "2"])
    assert result.exit_code == 0, result.output
    assert "4 cases from 2 source pages" in result.output
    assert len(read_manifest(out)) == 4


def _word_lefts(path: Path) -> dict[str, float]:
    """The left edge (PDF points) of each source's first line, found by its number-and-name words."""
    pdf = pdfium.PdfDocument(path)
    try:
        textpage = pdf[0].get_textpage()
        found: dict[str, float] = {}
        for name in ("alpha", "beta"):
            searcher = textpage.search(f"1 {name}")
            hit = searcher.get_next()
            if hit is not None:
                found[name] = textpage.get_charbox(hit[0])[0]
            searcher.close()
        textpage.close()
        return found
    finally:
        pdf.close()


def test_column_pages_place_sources_side_by_side_and_leave_the_other_cases_alone(corpus: Path,
                                                                                  tmp_path: Path) -> None:
    plain = write_set([corpus], tmp_path / "plain", seed=5, kinds_per_page=3)
    cases = write_set([corpus], tmp_path / "cols", seed=5, kinds_per_page=3, columns=2)
    assert [(c.case_id, c.detail) for c in cases[:len(plain)]] == [(c.case_id, c.detail) for c in plain]
    columns = cases[len(plain):]
    assert [c.degradation for c in columns] == ["columns", "columns_scan"]
    manifest = {c.case_id: c for c in read_manifest(tmp_path / "cols")}
    for case in columns:
        assert {p.case.case_id for p in case.placed} == {"alpha", "beta"}  # two distinct sources
        entry = manifest[case.case_id]
        assert entry.text_reference() is not None
        reference = entry.text_reference().path.read_text(encoding="utf-8").strip()
        assert reference == "\n\n".join(p.text for p in case.placed)
        layer = _text(entry.input_path)
        if case.degradation == "columns_scan":
            assert layer == ""  # image only
            continue
        assert all(p.text.split("\n")[0] in layer for p in case.placed)  # the text layer survives placing
        lefts = _word_lefts(entry.input_path)
        first, second = (p.case.case_id for p in case.placed)
        assert lefts[second] > lefts[first] + 200  # the second source is a column to the right of the first


@pytest.fixture()
def long_corpus(tmp_path: Path) -> Path:
    """Three born-digital pages of 50 lines each: enough words for a card's columns."""
    root = tmp_path / "long"
    rows = []
    for name in ("alpha", "beta", "delta"):
        (root / name).mkdir(parents=True)
        lines = [f"{number} {name} {SENTENCE}" for number in range(1, 51)]
        (root / name / f"{name}.pdf").write_bytes(make_pdf(lines=lines, size=8.0))
        rows.append(f"{name}/{name}.pdf\t-\t-\t-\tMIT\tdigital\t1\t-\t[GT:none]\n")
    (root / "MANIFEST.tsv").write_text(HEADER + "".join(rows), encoding="utf-8")
    return root


def _baselines(path: Path) -> tuple[float, list[tuple[float, float]]]:
    """The page's width and each drawn character's origin (x, y), in PDF points."""
    pdf = pdfium.PdfDocument(path)
    try:
        textpage = pdf[0].get_textpage()
        origins = []
        for index in range(textpage.count_chars()):
            if textpage.get_text_range(index, 1).strip():
                x, y = ctypes.c_double(), ctypes.c_double()
                pdfium_c.FPDFText_GetCharOrigin(textpage.raw, index, x, y)
                origins.append((x.value, y.value))
        textpage.close()
        return pdf[0].get_size()[0], origins
    finally:
        pdf.close()


def _added(corpus: Path, tmp_path: Path, kinds: tuple[str, str], base: dict[str, int],
           **added: int) -> tuple[list[GeneratedCase], dict[str, Case]]:
    """The cases `added` (four of one laid-out kind) puts into seed 5's set beside `base`, and the set's manifest;
    the set's other cases must be those written without them, and the four alternate with and without a layer."""
    plain = write_set([corpus], tmp_path / "plain", seed=5, kinds_per_page=3, **base)
    cases = write_set([corpus], tmp_path / "added", seed=5, kinds_per_page=3, **base, **added)
    assert [(c.case_id, c.detail) for c in cases[:len(plain)]] == [(c.case_id, c.detail) for c in plain]
    new = cases[len(plain):]
    assert [c.degradation for c in new] == [*kinds, *kinds]
    return new, {c.case_id: c for c in read_manifest(tmp_path / "added")}


def test_cards_set_entries_on_one_baseline_grid_in_columns_and_leave_the_other_cases_alone(long_corpus: Path,
                                                                                            tmp_path: Path) -> None:
    cards, manifest = _added(long_corpus, tmp_path, CARD_KINDS, {"columns": 2}, cards=4)
    assert set(CARD_KINDS) == {"cards", "cards_scan"}
    source_words = set(" ".join(p.text for p in cards[0].placed).split())
    for case in cards:
        entry = manifest[case.case_id]
        reference = entry.text_reference()
        assert reference is not None and entry.tier == "generated"
        text = reference.path.read_text(encoding="utf-8").strip()
        assert text == case.source.text and len(text.split()) > 100
        assert set(text.split()) <= source_words  # the card says only what its sources say
        layer = _text(entry.input_path)
        if case.degradation == "cards_scan":
            assert layer == "" and (_pixels(entry.input_path) < 128).any()  # image only, and ink on it
            continue
        assert sorted(layer.split()) == sorted(text.split())  # every word of the reference is on the page
        pitch = float(case.detail.split("pitch=")[1].split("pt")[0])
        columns = int(case.detail.split("columns=")[1].split()[0])
        width, origins = _baselines(entry.input_path)
        top = max(y for _, y in origins)
        rows = {round((top - y) / pitch, 3) for _, y in origins}
        assert all(abs(row - round(row)) < 0.01 for row in rows)  # every line on the one grid
        lefts = sorted({round(x) for x, _ in origins})
        assert any(x > width / columns for x in lefts)  # a second column, right of the first
        first_row = [x for x, y in origins if abs(y - top) < 0.01]
        assert max(first_row) > width / 2  # the columns' first lines share the top baseline
        if "two_parts=1" in case.detail:  # syntax parts end at the first column's right edge (36 pt margin)
            gutter = float(case.detail.split("gutter=")[1].split("pt")[0])
            edge = 36 + (width - 72 - gutter * (columns - 1)) / columns
            assert any(edge - 8 < x <= edge for x, _ in origins)


@pytest.mark.parametrize("kind", ["cards", "indexes"])
def test_laid_out_pages_are_the_same_for_the_same_seed(wordy_corpus: Path, tmp_path: Path, kind: str) -> None:
    first = write_set([wordy_corpus], tmp_path / "a", seed=9, kinds_per_page=1, **{kind: 2})
    second = write_set([wordy_corpus], tmp_path / "b", seed=9, kinds_per_page=1, **{kind: 2})
    assert [(c.case_id, c.detail, c.source.text) for c in first] == [(c.case_id, c.detail, c.source.text)
                                                                      for c in second]
    assert sum(1 for c in first if c.degradation.startswith(kind)) == 2
    for case in first:
        name = f"{case.case_id}/{case.case_id}.pdf"
        assert np.array_equal(_pixels(tmp_path / "a" / name), _pixels(tmp_path / "b" / name))


def _font_sizes(path: Path) -> set[float]:
    """The sizes the page's text objects are set in."""
    pdf = pdfium.PdfDocument(path)
    try:
        sizes = set()
        for obj in pdf[0].get_objects():
            if obj.type == pdfium_c.FPDF_PAGEOBJ_TEXT:
                size = ctypes.c_float()
                assert pdfium_c.FPDFTextObj_GetFontSize(obj.raw, ctypes.byref(size))
                sizes.add(round(size.value, 2))
        return sizes
    finally:
        pdf.close()


def _card_variants(corpus: Path, tmp_path: Path, name: str,
                   **option: Any) -> list[tuple[GeneratedCase, GeneratedCase]]:
    """Seed 5's cards written without and with a card `option` (the second set in `tmp_path / name`), paired; the
    set's other cases must be those written without it."""
    same = write_set([corpus], tmp_path / "same", seed=5, kinds_per_page=1, cards=2)
    varied = write_set([corpus], tmp_path / name, seed=5, kinds_per_page=1, cards=2, **option)
    assert [c.case_id for c in varied] == [c.case_id for c in same]
    for before, after in zip(same, varied, strict=True):
        if before.degradation not in CARD_KINDS:
            assert after.detail == before.detail
    return [(b, a) for b, a in zip(same, varied, strict=True) if b.degradation in CARD_KINDS]


def test_larger_card_headings_stand_without_a_blank_line(long_corpus: Path, tmp_path: Path) -> None:
    for before, after in _card_variants(long_corpus, tmp_path, "larger", card_headings=1.5):
        assert after.detail.replace(" headings=1.5x", "") == before.detail and "headings=1.5x" in after.detail
        columns = int(after.detail.split("columns=")[1].split()[0])
        assert after.source.text.count("\n\n") == columns - 1  # blank lines only between the columns
        if after.degradation == "cards":
            size = float(after.detail.split("size=")[1].split("pt")[0])
            path = tmp_path / "larger" / after.case_id / f"{after.case_id}.pdf"
            assert _font_sizes(path) == {size, 1.5 * size}  # entries at the card's size, headings larger


def _left_edges(path: Path) -> set[float]:
    """Where the page's text objects start: their ink's left edges, those within 3 pt of one another (a glyph's
    side bearing) kept once."""
    pdf = pdfium.PdfDocument(path)
    try:
        lefts = sorted(obj.get_bounds()[0] for obj in pdf[0].get_objects() if obj.type == pdfium_c.FPDF_PAGEOBJ_TEXT)
    finally:
        pdf.close()
    return {round(x) for n, x in enumerate(lefts) if n == 0 or x - lefts[n - 1] > 3.0}


def test_tabbed_cards_set_every_syntax_at_its_column_s_tab_stop(long_corpus: Path, tmp_path: Path) -> None:
    for before, after in _card_variants(long_corpus, tmp_path, "tabbed", card_tabs=True):
        assert "two_parts=1 tab=" in after.detail and "tab=" not in before.detail
        columns = int(after.detail.split("columns=")[1].split()[0])
        if after.degradation == "cards":  # descriptions and headings at each column's edge, syntax at its tab
            assert len(_left_edges(tmp_path / "tabbed" / after.case_id / f"{after.case_id}.pdf")) == 2 * columns
            assert len(_left_edges(tmp_path / "same" / before.case_id / f"{before.case_id}.pdf")) > 2 * columns


def test_degraded_cards_are_the_same_cards_scanned_badly(long_corpus: Path, tmp_path: Path) -> None:
    pairs = _card_variants(long_corpus, tmp_path, "degraded", card_degrade=True)
    assert {after.degradation for _, after in pairs} == set(CARD_KINDS)
    for before, after in pairs:
        assert after.source.text == before.source.text  # the same card, the same reference
        made = tmp_path / "degraded" / after.case_id / f"{after.case_id}.pdf"
        clean = tmp_path / "same" / before.case_id / f"{before.case_id}.pdf"
        if after.degradation == "cards":  # the text-layer card is untouched
            assert after.detail == before.detail
            with pdfium.PdfDocument(made) as kept, pdfium.PdfDocument(clean) as first:
                assert page_text(kept[0]) == page_text(first[0])
            continue
        kind, rest = after.detail.split(" ", 1)
        assert kind in CARD_DEGRADATIONS and rest.endswith(before.detail.removeprefix("dpi=150 "))
        with pdfium.PdfDocument(made) as degraded, pdfium.PdfDocument(clean) as scanned:
            assert not degraded[0].get_textpage().get_text_range().strip()  # still an image only
            turned = kind in ("rotate", "skew") and degraded[0].get_size() != scanned[0].get_size()
            looks = np.asarray(degraded[0].render(scale=0.5).to_pil().convert("L"), dtype=np.int16)
            was = np.asarray(scanned[0].render(scale=0.5).to_pil().convert("L"), dtype=np.int16)
            assert turned or looks.shape != was.shape or np.abs(looks - was).mean() > 1.0, kind


def _headings(path: Path) -> int:
    """How many of the page's text objects are set in the cards' heading font."""
    pdf = pdfium.PdfDocument(path)
    try:
        names = []
        for obj in pdf[0].get_objects():
            if obj.type == pdfium_c.FPDF_PAGEOBJ_TEXT:
                name = ctypes.create_string_buffer(64)
                pdfium_c.FPDFFont_GetBaseFontName(pdfium_c.FPDFTextObj_GetFont(obj.raw), name, 64)
                names.append(name.value)
    finally:
        pdf.close()
    return names.count(b"Helvetica-Bold")


def test_long_sections_set_a_heading_every_30_entries_or_more(long_corpus: Path, tmp_path: Path) -> None:
    for before, after in _card_variants(long_corpus, tmp_path, "long", card_long_sections=True):
        assert after.detail.replace(" sections=long", "") == before.detail and "sections=long" in after.detail
        if after.degradation == "cards":
            long = _headings(tmp_path / "long" / after.case_id / f"{after.case_id}.pdf")
            short = _headings(tmp_path / "same" / before.case_id / f"{before.case_id}.pdf")
            entries = sum(1 for line in after.source.text.splitlines() if line.strip()) - long
            assert 1 <= long <= entries // 30 + 1 and 3 * long <= short, (long, short, entries)


def test_wordy_cards_pair_sentence_long_descriptions_with_their_syntax(long_corpus: Path, tmp_path: Path) -> None:
    pairs = _card_variants(long_corpus, tmp_path, "wordy", card_tabs=True, card_wordy=True)
    plain = _card_variants(long_corpus, tmp_path, "tabbed", card_tabs=True)
    for (_, after), (_, tabbed) in zip(pairs, plain, strict=True):
        assert after.detail.replace(" descriptions=wordy", "").split(" tab=")[0] == tabbed.detail.split(" tab=")[0]
        stop = float(after.detail.split("tab=")[1].split("pt")[0])
        width = float(tabbed.detail.split("tab=")[1].split("pt")[0])
        assert stop > width  # the tab stop further across (65-80 % of the column, not 50-65 %)
        descriptions = [len(line.split()) for line in after.source.text.splitlines() if len(line.split()) > 3]
        shorter = [len(line.split()) for line in tabbed.source.text.splitlines() if len(line.split()) > 3]
        assert sum(descriptions) / len(descriptions) > sum(shorter) / len(shorter)


def test_index_pages_set_sorted_entries_under_letters_with_leaders_to_their_page_numbers(wordy_corpus: Path,
                                                                                          tmp_path: Path) -> None:
    indexes, manifest = _added(wordy_corpus, tmp_path, INDEX_KINDS, {"cards": 2}, indexes=4)
    assert set(INDEX_KINDS) == {"indexes", "indexes_scan"}
    for case in indexes:
        entry = manifest[case.case_id]
        text = entry.input_path.parent.joinpath(f"{case.case_id}.txt").read_text(encoding="utf-8").strip()
        assert text == case.source.text
        title, *columns = text.split("\n\n")
        lines = [line for column in columns for line in column.split("\n") if line]
        letters = [line for line in lines if len(line) == 1]
        entries = [line.rsplit(" ", 1)[0].rstrip(",").split(" ")[0] for line in lines if len(line) > 1]
        assert len(letters) >= 2 and len(entries) > 30 and "." * 4 not in text  # no leaders in the reference
        assert letters == sorted(letters) and [e[0].upper() for e in entries] == sorted(e[0].upper() for e in entries)
        assert all(line.split(" ", 1)[1].replace(", ", "").isdigit() for line in lines if len(line) > 1)
        if case.degradation == "indexes_scan":
            assert _text(entry.input_path) == "" and (_pixels(entry.input_path) < 128).any()
            continue
        pdf = pdfium.PdfDocument(entry.input_path)
        try:
            textpage = pdf[0].get_textpage()
            layer = textpage.get_text_range()  # as drawn: `page_text`, the reference reader, leaves leaders out
            textpage.close()
        finally:
            pdf.close()
        assert "." * 20 in layer  # the leaders are drawn, as dots
        shown = [word.strip(".") for word in layer.replace("..", " ").split()]
        assert sorted(word for word in shown if word) == sorted(text.split())  # every word, and only those
        size = float(case.detail.split("size=")[1].split("pt")[0])
        scale = float(case.detail.split("letters=")[1].split("x")[0])
        assert _font_sizes(entry.input_path) == {size, round(scale * size, 2), 2 * size}


def test_the_reference_leaves_dot_leaders_out_and_keeps_other_dots(tmp_path: Path) -> None:
    path = tmp_path / "toc.pdf"
    path.write_bytes(make_pdf(lines=["1 Introduction . . . . . . . . . 5", "2.1 Basic types.............. 12",
                                     "So it goes... and on. The end."], size=10.0))
    pdf = pdfium.PdfDocument(path)
    try:
        text = page_text(pdf[0])
    finally:
        pdf.close()
    assert text.split("\n") == ["1 Introduction 5", "2.1 Basic types 12", "So it goes... and on. The end."]
