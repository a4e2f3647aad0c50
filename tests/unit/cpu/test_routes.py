"""What the engine wrote against what the page holds, right-to-left cells, and the confidence AUROC."""

from __future__ import annotations

import pytest

from pagemill_eval.calibration import Sample, auroc, case_samples, roc_curve, spearman
from services.core.settings import EngineKind, Settings
from services.worker.engines.base import PageOutput
from services.worker.engines.cpu import grid, tuning
from services.worker.engines.cpu.bidi import cell_text, visual_to_logical
from services.worker.engines.cpu.confidence import structure_factor, structure_signals, table_consistency
from services.worker.engines.cpu.model import Box, Line, Word
from services.worker.engines.cpu.ocr import OcrPage, is_doubtful, reading_strength
from services.worker.engines.cpu.routes import TEXT_DROPPED, Held, settle
from services.worker.routing import escalation_engine


def output(markdown: str, confidence: float = 0.9) -> PageOutput:
    return PageOutput(markdown=markdown, engine="cpu", confidence=confidence)


def test_an_output_that_lost_the_text_layers_words_is_flagged_text_dropped() -> None:
    settled = settle(output(""), Held(layer_words=120), ink=0.08)
    assert settled.warnings == [TEXT_DROPPED]
    assert settled.confidence is not None and settled.confidence <= tuning.DROPPED_CONFIDENCE_FLOOR + 1e-9
    # A few words kept out of a full page is text dropped too, with a confidence that stays low.
    partial = settle(output("Only the title survived here\n"), Held(layer_words=300), ink=None)
    assert partial.warnings == [TEXT_DROPPED] and (partial.confidence or 1) < 0.1
    # Keeping most of the words is no drop (furniture and figure labels go on purpose).
    kept = settle(output(" ".join(["word"] * 80)), Held(layer_words=100), ink=None)
    assert kept.warnings == [] and kept.confidence == 0.9


def test_boxes_ocr_detected_but_could_not_read_are_text_dropped_not_a_blank_page() -> None:
    settled = settle(output("", confidence=0.9), Held(ocr_boxes=4), ink=0.05)
    assert settled.warnings == [TEXT_DROPPED] and (settled.confidence or 1) < 0.2


def test_a_blank_page_is_confidently_empty_and_an_inked_page_without_text_is_not() -> None:
    blank = settle(output("", confidence=0.9), Held(), ink=0.0005)
    assert blank.signals["blank"] == 1.0 and blank.confidence == 0.9 and blank.warnings == []
    inked = settle(output("", confidence=0.9), Held(), ink=0.2)
    assert inked.signals["blank"] == 0.0 and inked.confidence == tuning.EMPTY_INKED_CONFIDENCE
    assert inked.warnings == []  # no route saw text: nothing was dropped, but nothing is vouched for either


def test_an_rtl_line_reads_right_to_left_with_numbers_and_latin_words_in_place() -> None:
    # Left to right on the page: "עולם" (its glyphs in visual order), "PDF 2024", "שלום" (visual order).
    on_page = ["םלוע", "PDF", "2024", "םולש"]
    words = [Word(text, Box(40.0 * i, 0, 40.0 * i + 30, 10)) for i, text in enumerate(on_page)]
    assert [w.text for w in visual_to_logical(words)] == ["שלום", "PDF", "2024", "עולם"]


def test_an_rtl_table_cell_keeps_its_words_in_reading_order() -> None:
    # (line centre y, left x, word text in logical order): one cell, two lines.
    placed = [(5.0, 10.0, "עולם"), (5.0, 50.0, "2024"), (5.0, 90.0, "שלום"), (20.0, 60.0, "ABC"),
              (20.0, 10.0, "מחיר"), (20.0, 90.0, "Ltd")]
    # Right to left, and the Latin run "ABC Ltd" left to right inside it.
    assert cell_text(placed) == "שלום 2024 עולם ABC Ltd מחיר"
    assert cell_text([(5.0, 50.0, "world"), (5.0, 10.0, "hello")]) == "hello world"


def test_an_rtl_table_row_is_cut_along_the_page_and_each_cell_read_right_to_left() -> None:
    # The line's words in reading order: the right cell ("שלום עולם") first, then the left one ("12 kg").
    words = [Word("שלום", Box(300, 0, 330, 10)), Word("עולם", Box(260, 0, 290, 10)),
             Word("12", Box(20, 0, 32, 10)), Word("kg", Box(36, 0, 48, 10))]
    line = Line(words, Box(20, 0, 330, 10), rtl=True)
    pieces = grid._cut(line, lambda left, right, height: right.box.x0 - left.box.x1 > 3 * height)
    assert [piece.text for piece in pieces] == ["12 kg", "שלום עולם"]


def test_a_table_with_cells_of_several_figures_or_an_empty_grid_lowers_confidence() -> None:
    clean = "<table><tr><td>Year</td><td>Cost</td></tr><tr><td>2020</td><td>12.5</td></tr></table>"
    packed = "<table><tr><td>Mean SD Median</td></tr><tr><td>55.3 40.0 59</td></tr><tr><td>76 91 45</td></tr></table>"
    empty = ("<table><tr><td>8.4</td><td></td><td></td><td></td></tr>"
             "<tr><td></td><td></td><td></td><td></td></tr></table>")
    assert table_consistency(clean) == 1.0
    assert table_consistency(packed) < 0.75
    assert table_consistency(empty) < 0.8


def test_figures_left_in_short_paragraphs_without_a_table_lower_confidence() -> None:
    from services.core.elements import Element, ElementType

    texts = ["Trait SCS", "Mean 0.10", "Standard deviation 0.38", "Minimum -1.2", "Maximum 1.07", "Count 1058"]
    tree = [Element(id=f"p1-e{i}", type=ElementType.PARAGRAPH, page=1, bbox=None, text=t,
                    markdown=t)
            for i, t in enumerate(texts)]
    signals = structure_signals(tree)
    assert signals["loose_figure_lines"] == 5 and structure_factor(signals) == tuning.LOOSE_FIGURE_PENALTY
    prose = [Element(id="p1-e1", type=ElementType.PARAGRAPH, page=1, bbox=None, text="A sentence of running text.",
                     markdown="A sentence of running text.")]
    assert structure_factor(structure_signals(prose)) == 1.0


def test_a_reading_is_doubted_when_its_scores_are_low_or_most_boxes_unread() -> None:
    sure = OcrPage(lines=[Line([Word("Invoice", Box(0, 0, 10, 5))], Box(0, 0, 10, 5))], scores=[0.97],
                   boxes_found=1)
    unsure = OcrPage(lines=sure.lines, scores=[0.6], boxes_found=1)
    unread = OcrPage(lines=sure.lines, scores=[0.97], boxes_found=5)
    assert not is_doubtful(sure) and is_doubtful(unsure) and is_doubtful(unread)
    assert not is_doubtful(OcrPage())  # nothing detected: blank, not turned
    assert reading_strength(sure) > reading_strength(unsure)


def test_the_auroc_counts_good_cases_ranked_above_bad_ones() -> None:
    separated = [Sample("a", 0.9, 0.95), Sample("b", 0.8, 0.9), Sample("c", 0.3, 0.2), Sample("d", 0.2, 0.4)]
    assert auroc(separated) == 1.0
    inverted = [Sample("a", 0.1, 0.95), Sample("c", 0.9, 0.2)]
    assert auroc(inverted) == 0.0
    assert auroc([Sample("a", 0.5, 0.9), Sample("c", 0.5, 0.1)]) == 0.5  # a tie counts half
    mixed = [Sample("a", 0.9, 0.9), Sample("b", 0.4, 0.8), Sample("c", 0.5, 0.1)]
    assert auroc(mixed) == pytest.approx(0.5)
    assert auroc([Sample("a", 0.9, 0.9)]) is None  # no bad case: nothing to rank
    curve = roc_curve(separated)
    assert curve[0] == {"threshold": 0.0, "tpr": 0.0, "fpr": 0.0} and curve[-1]["tpr"] == 1.0
    assert curve[-1]["fpr"] == 1.0 and {"threshold": 0.3, "tpr": 1.0, "fpr": 0.0} in curve
    assert spearman(separated) == pytest.approx(0.8)  # ranks (4,3,2,1) against (4,3,1,2)
    assert spearman([Sample("a", 0.1, 0.1), Sample("b", 0.2, 0.2), Sample("c", 0.3, 0.3)]) == pytest.approx(1.0)


def test_samples_take_teds_before_text_similarity_and_keep_rule_cases_apart() -> None:
    cases = [{"case_id": "t", "min_confidence": 0.9, "teds": 0.3, "text_similarity": 0.9},
             {"case_id": "x", "min_confidence": 0.8, "teds": None, "text_similarity": 0.7},
             {"case_id": "r", "min_confidence": 0.7, "teds": None, "text_similarity": None, "rule_pass_rate": 0.0},
             {"case_id": "n", "min_confidence": None, "teds": 0.9}]
    assert case_samples(cases) == [Sample("t", 0.9, 0.3), Sample("x", 0.8, 0.7)]
    assert case_samples(cases, rules_only=True) == [Sample("r", 0.7, 0.0)]


def test_a_page_that_dropped_text_goes_to_vllm_in_balanced_and_accurate_mode_only() -> None:
    vllm = Settings(engine={"kind": EngineKind.VLLM})
    cpu = Settings(engine={"kind": EngineKind.CPU})
    assert escalation_engine("balanced", vllm, "cpu", [TEXT_DROPPED]) == "vllm"
    assert escalation_engine("accurate", vllm, "cpu", [TEXT_DROPPED]) == "vllm"
    assert escalation_engine("fast", vllm, "cpu", [TEXT_DROPPED]) is None
    assert escalation_engine("balanced", cpu, "cpu", [TEXT_DROPPED]) is None  # no vLLM configured
    assert escalation_engine("balanced", vllm, "cpu", []) is None
    assert escalation_engine("balanced", vllm, "vllm", [TEXT_DROPPED]) is None


def test_the_stored_page_result_carries_the_warning_to_the_page_a_client_reads() -> None:
    from services.core.contracts import PageResult, to_dict
    from services.core.db.models import Page
    from services.core.pages import page_read

    stored = to_dict(PageResult(document_id="doc_1", page_index=0, page_number=1, markdown="", engine="cpu",
                                confidence=0.05, warnings=[TEXT_DROPPED]))
    row = Page(document_id="doc_1", index=0, page_number=1, status="succeeded", attempts=1, engine="cpu",
               is_fallback=False, confidence=0.05, details={})
    assert page_read(row, stored, needs_review_below=0.8).warnings == [TEXT_DROPPED]
    assert page_read(row, stored, needs_review_below=0.8).needs_review  # 0.05: a page worth a reader's look
    assert page_read(row, None, needs_review_below=0.8).warnings == []


def test_running_heads_left_out_of_the_markdown_on_purpose_are_not_text_dropped() -> None:
    from services.core.elements import Element, ElementType

    heads = "Journal of Examples Volume 12 Issue 3 pages 101 to 140 ISSN 1234"
    tree = [Element(id="p1-e1", type=ElementType.PAGE_HEADER, page=1, bbox=None, text=heads, markdown=heads),
            Element(id="p1-e2", type=ElementType.PARAGRAPH, page=1, bbox=None, text="Figure 3", markdown="Figure 3")]
    page = PageOutput(markdown="Figure 3\n", engine="cpu", confidence=0.95, elements=tree)
    assert settle(page, Held(layer_words=14), ink=None).warnings == []


def test_a_page_whose_text_went_to_a_running_head_longer_than_one_can_be_is_text_dropped() -> None:
    from services.core.elements import Element, ElementType

    body = " ".join(["the basis remains dual feasible and thus optimal for the variable"] * 8)  # 88 words
    tree = [Element(id="p1-e1", type=ElementType.PAGE_HEADER, page=1, bbox=None, text=body, markdown=body),
            Element(id="p1-e2", type=ElementType.PAGE_FOOTER, page=1, bbox=None, text="118", markdown="118")]
    out = settle(PageOutput(markdown="", engine="cpu", confidence=0.97, elements=tree), Held(layer_words=89),
                 ink=None)
    assert out.warnings == [TEXT_DROPPED] and (out.confidence or 0.0) < 0.35
    assert out.signals["output_words"] == 1.0  # the page number


def test_a_page_whose_words_sit_in_sentence_long_table_cells_says_so() -> None:
    from services.core.elements import Element, ElementType

    # Two page columns of definitions taken for one table: every row holds a sentence from each column.
    merged = ("<table><tr><td>boolean value that is true or false bool</td><td>modulus of the two operands, "
              "the remainder</td></tr><tr><td>integer number of the machine word size</td><td>comparison of two "
              "values for equality</td></tr></table>")
    figures = "<table><tr><td>Year</td><td>Cost</td></tr><tr><td>2020</td><td>12.5</td></tr></table>"
    heading = Element(id="p1-e0", type=ElementType.HEADING, page=1, bbox=None, text="Reference card",
                      markdown="# Reference card")
    footer = Element(id="p1-e3", type=ElementType.PAGE_FOOTER, page=1, bbox=None, text="page 1 of 12 copyright",
                     markdown="")

    def table(html: str) -> Element:
        from pagemill_eval.table_prose_fit import saved_share

        element = Element(id="p1-e1", type=ElementType.TABLE, page=1, bbox=None, html=html, markdown=html,
                          text=" ".join(html.replace("<", " <").replace(">", "> ").split()))
        element.text = " ".join(w for w in element.text.split() if not w.startswith("<"))
        # what the engine records is what the fit recomputes from a saved page's Markdown and elements
        saved = [{"type": e.type.value, "text": e.text} for e in (heading, element, footer)]
        assert saved_share(html, saved) == structure_signals([heading, element, footer])["table_prose_share"]
        return element

    wordy = structure_signals([heading, table(merged), footer])["table_prose_share"]
    assert 0.85 < wordy <= 1.0  # all but the heading's two words; the footer is not the page's text
    assert structure_signals([heading, table(figures), footer])["table_prose_share"] == 0.0
    assert "table_prose_share" not in structure_signals([heading, footer])


def test_sentences_in_table_cells_take_the_fitted_penalty_off_and_the_fit_adds_it_back(
        monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    import json
    from pathlib import Path

    from services.core.elements import Element, ElementType

    cells = "".join(f"<tr><td>the {n} column of the page read across as a row</td><td>another sentence of six "
                    "words here</td></tr>" for n in ("first", "second"))
    html = f"<table>{cells}</table>"
    text = " ".join(w for w in html.replace("<", " <").replace(">", "> ").split() if not w.startswith("<"))

    def read(weight: float) -> PageOutput:
        monkeypatch.setattr(tuning, "TABLE_PROSE_PENALTY", weight)
        tree = [Element(id="p1-e1", type=ElementType.TABLE, page=1, bbox=None, html=html, markdown=html, text=text)]
        return settle(PageOutput(markdown=html, engine="cpu", confidence=0.96, elements=tree),
                      Held(layer_words=len(text.split())), ink=None)

    before, after = read(0.0), read(0.4)
    assert before.signals["table_prose_share"] == 1.0 and "table_prose_penalty" not in before.signals
    assert after.signals["table_prose_penalty"] == 0.4
    assert after.confidence == pytest.approx((before.confidence or 0.0) - 0.4, abs=1e-4)
    assert after.markdown == before.markdown  # the reading is untouched

    from pagemill_eval.table_prose_fit import load

    folder = Path(str(tmp_path))
    saved = {"pages": [html], "confidences": [after.confidence], "signals": [after.signals], "warnings": [[]],
             "blocks": [[{"type": "table", "text": text}]]}
    (folder / "c1.json").write_text(json.dumps(saved))
    report = {"cases": [{"case_id": "c1", "min_confidence": after.confidence, "text_similarity": 0.3, "pages": 1,
                         "status": "ok"}]}
    (folder / "r.json").write_text(json.dumps(report))
    rows = load("x", folder / "r.json", folder)
    assert [page[0] for page in rows[0].pages] == [before.confidence]  # read as the engine without the penalty
