"""Splitting a several-page answer back into pages, and what runs across a page break kept whole, once."""

from __future__ import annotations

from services.worker.engines.vllm.presets import PRESETS
from services.worker.pipeline.group import mend_page_breaks, split_pages


def test_an_answer_marked_page_by_page_splits_into_its_pages() -> None:
    answer = "<!-- page 1 -->\n# Title\n\nFirst page.\n<!-- page 2 -->\nSecond page.\n\n<!-- page 3 -->\nThird."
    assert split_pages(answer, 3) == ["# Title\n\nFirst page.", "Second page.", "Third."]
    assert split_pages("```markdown\n<!-- page 1 -->\nA.\n<!-- Page 2 -->\nB.\n```", 2) == ["A.", "B."]


def test_an_answer_not_marked_as_asked_does_not_split() -> None:
    assert split_pages("First page.\n\nSecond page.", 2) is None  # no markers at all
    assert split_pages("<!-- page 1 -->\nA.\n<!-- page 3 -->\nB.", 2) is None  # a page number skipped
    assert split_pages("<!-- page 2 -->\nB.\n<!-- page 1 -->\nA.", 2) is None  # out of order
    assert split_pages("<!-- page 1 -->\nA.", 2) is None  # a page missing
    assert split_pages("Here are the pages:\n<!-- page 1 -->\nA.\n<!-- page 2 -->\nB.", 2) is None  # text of no page
    assert split_pages("<!-- page 1 -->\nA. <!-- page 2 --> B.", 2) is None  # a marker inside a line is text


def test_a_sentence_cut_by_the_break_is_joined_on_the_page_where_it_starts() -> None:
    pages = mend_page_breaks(["Intro.\n\nThe results of the second experi-", "ment were clear.\n\nNext paragraph."])
    assert pages == ["Intro.\n\nThe results of the second experiment were clear.", "Next paragraph."]
    pages = mend_page_breaks(["We measured the", "speed twice. Then we stopped."])
    assert pages == ["We measured the speed twice. Then we stopped.", ""]


def test_a_finished_sentence_or_a_new_capitalised_one_stays_where_it_is() -> None:
    pages = ["It ended here.", "a lower-case start after a full stop"]
    assert mend_page_breaks(pages) == pages
    pages = ["# A heading without a stop", "continues? no: a heading is not prose"]
    assert mend_page_breaks(pages) == pages
    pages = ["A sentence without a stop", "Capitalised Start Of Something Else."]
    assert mend_page_breaks(pages) == pages


def test_a_paragraph_written_on_both_pages_is_kept_once_on_the_first() -> None:
    run_over = "This paragraph runs over the page break and the model wrote it out on both of the pages."
    pages = mend_page_breaks([f"Start.\n\n{run_over}", f"{run_over[30:]}\n\nThe next page's own text."])
    assert pages == [f"Start.\n\n{run_over}", "The next page's own text."]


def test_a_table_continued_without_a_header_becomes_one_table_on_the_first_page() -> None:
    first = "Text.\n\n<table><tr><th>Year</th><th>Sales</th></tr><tr><td>2021</td><td>4</td></tr></table>"
    second = "<table><tr><td>2022</td><td>5</td></tr></table>\n\nAfter the table."
    pages = mend_page_breaks([first, second])
    assert pages[0].count("<table") == 1 and pages[0].count("</table>") == 1
    assert pages[0].index("2021") < pages[0].index("2022") < pages[0].index("</table>")
    assert pages[1] == "After the table."
    # A table with its own header on the next page is a table of its own.
    headed = "<table><tr><th>Name</th></tr><tr><td>x</td></tr></table>"
    assert mend_page_breaks([first, headed]) == [first, headed]


def test_the_multi_page_preset_asks_for_the_markers_it_is_split_at() -> None:
    preset = PRESETS["hunyuan_ocr"]
    assert preset.pages_per_request == 2
    prompt = preset.pages_text(2)
    assert "<!-- page k -->" in prompt and preset.prompt in prompt
    assert all(p.pages_per_request == 1 for name, p in PRESETS.items() if name != "hunyuan_ocr")
