"""The checks that keep a bad generation from becoming a page: length, loops, emptiness; and anchor clipping."""

from __future__ import annotations

from services.worker.pipeline.quality import clip_anchor, find_repetition, invalid_reason, same_line_run, tail_loop

PROSE = (
    "Revenue rose by 12% in the third quarter, driven by the new product line. Costs were flat, and the "
    "board expects the coming year to bring steady growth in every region.\n\n"
)


def test_a_generation_that_loops_at_its_end_is_caught() -> None:
    looped = PROSE + "the the the " * 40
    found = tail_loop(looped)
    assert found is not None and found.period == 4 and found.repeats >= 5
    assert invalid_reason(looped, "stop", page_has_text=True) == "repetition"


def test_a_long_unit_repeated_is_caught_and_its_unit_reported() -> None:
    unit = "| 1 | Widget | 3 | 9.99 |\n"
    found = find_repetition(PROSE + unit * 12)
    assert found is not None and found.unit.strip() == unit.strip()


def test_short_legitimate_runs_are_not_loops() -> None:
    toc = "Introduction " + "." * 60 + " 1\nMethods " + "." * 60 + " 7\n"
    table = "<table><tr>" + "<td></td>" * 12 + "</tr></table>\n"
    rule = "| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n"
    for text in (PROSE * 5, toc, table + PROSE, rule * 3, "-" * 150 + "\n" + PROSE):
        assert find_repetition(text) is None, text[:80]
        assert invalid_reason(text, "stop", page_has_text=True) is None


def test_the_same_line_many_times_in_a_row_is_caught_but_not_blank_or_markup_lines() -> None:
    assert same_line_run(PROSE + "Signature of the applicant\n" * 12 + PROSE) is not None
    assert same_line_run("Signature of the applicant\n" * 11) is None
    assert same_line_run("|   |   |\n" * 30) is None  # empty table rows: no words in them


def test_length_wins_and_empty_counts_only_where_the_page_has_text() -> None:
    assert invalid_reason(PROSE, "length", page_has_text=True) == "length"
    assert invalid_reason("  \n", "stop", page_has_text=True) == "empty"
    assert invalid_reason("", "stop", page_has_text=False) is None  # a blank page reads as nothing


def test_the_anchor_is_tidied_and_clipped_at_a_word_within_its_budget() -> None:
    raw = "Title   of\tthe page\r\n\n\n\nFirst    paragraph " + "word " * 200
    clipped = clip_anchor(raw, 120)
    assert clipped is not None and len(clipped) <= 120
    assert clipped.startswith("Title of the page\n\nFirst paragraph word")
    assert clipped.endswith("word")
    assert clip_anchor(raw, 0) is None and clip_anchor("   ", 50) is None and clip_anchor(None, 50) is None
    assert clip_anchor("short text", 50) == "short text"


def test_a_usable_text_layer_has_words_and_is_not_mojibake() -> None:
    from services.worker.pipeline.quality import usable_text_layer

    assert usable_text_layer(PROSE)
    assert not usable_text_layer("12")  # a page number on a scan
    assert not usable_text_layer(" ".join(["\ufffd\ufffd\ufffd\ufffd"] * 6))  # glyphs without a Unicode map
