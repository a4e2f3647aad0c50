"""The cpu engine's text pieces on inputs that can be checked by hand: joining, order, furniture, links, RTL."""

from __future__ import annotations

from services.worker.engines.cpu.bidi import visual_to_logical
from services.worker.engines.cpu.layout import classify, group_blocks, mark_furniture, reading_order
from services.worker.engines.cpu.markdown import escape_url, join_lines, render
from services.worker.engines.cpu.model import Block, BlockKind, Box, Line, Word


def line(text: str, x0: float, y0: float, *, size: float = 10.0, width: float | None = None,
         bold: bool = False, link: str = "") -> Line:
    """A line of words laid out left to right at 5 points per character."""
    words = []
    cursor = x0
    for token in text.split():
        words.append(Word(token, Box(cursor, y0, cursor + 5 * len(token), y0 + size), size=size, bold=bold,
                          link=link))
        cursor += 5 * len(token) + 3
    right = x0 + width if width is not None else cursor - 3
    return Line(words, Box(x0, y0, right, y0 + size))


def test_hyphen_at_line_end_is_undone_only_inside_a_word() -> None:
    assert join_lines(["the docu-", "ment is long"]) == "the document is long"
    assert join_lines(["Jean-", "Paul came"]) == "Jean- Paul came"  # a capital keeps the hyphen
    assert join_lines(["soft\u00ad", "ware"]) == "software"
    assert join_lines(["one line", "", "another"]) == "one line another"


def test_two_columns_read_column_by_column_under_a_full_width_title() -> None:
    lines = [line("A Title Across Both Columns Of The Page", 50, 40, size=16, width=500)]
    for row in range(6):
        lines.append(line(f"left column line {row}", 50, 100 + 14 * row, width=220))
        lines.append(line(f"right column line {row}", 330, 100 + 14 * row, width=220))
    blocks = reading_order(group_blocks(lines, 10.0))
    text = render(blocks)
    assert text.index("A Title") < text.index("left column line 0")
    assert text.index("left column line 5") < text.index("right column line 0")


def test_aligned_paragraph_gaps_in_two_columns_do_not_interleave_them() -> None:
    lines = []
    for paragraph in range(2):
        for row in range(3):
            y = 100 + paragraph * 60 + 14 * row
            lines.append(line(f"L{paragraph}{row} left text", 50, y, width=220))
            lines.append(line(f"R{paragraph}{row} right text", 330, y, width=220))
    text = render(reading_order(group_blocks(lines, 10.0)))
    assert text.index("L12") < text.index("R00")


def test_page_number_and_small_running_header_are_furniture_but_a_big_title_is_not() -> None:
    header = Block([line("Journal of Examples | Vol. 3", 50, 20, size=7)], Box(50, 20, 200, 27))
    title = Block([line("Big Title", 50, 45, size=20)], Box(50, 45, 150, 65))
    body = [Block([line(f"body text line {i}", 50, 100 + 14 * i)], Box(50, 100 + 14 * i, 400, 110 + 14 * i))
            for i in range(20)]
    number = Block([line("12", 300, 760)], Box(300, 760, 310, 770))
    blocks = [header, title, *body, number]
    mark_furniture(blocks, 612, 792, 10.0)
    assert header.kind == BlockKind.FURNITURE
    assert number.kind == BlockKind.FURNITURE
    assert title.kind != BlockKind.FURNITURE
    assert all(b.kind != BlockKind.FURNITURE for b in body)


def test_headings_from_size_and_lists_from_markers() -> None:
    blocks = [
        Block([line("Introduction", 50, 40, size=18)], Box(50, 40, 150, 58)),
        Block([line("plain body text that runs on", 50, 70)], Box(50, 70, 300, 80)),
        Block([line("• first point", 50, 90), line("• second point", 50, 104)], Box(50, 90, 200, 114)),
    ]
    markdown = render(classify(blocks, 10.0))
    assert markdown.startswith("# Introduction\n")
    assert "- first point\n\n- second point" in markdown


def test_link_targets_are_escaped_so_they_cannot_leave_the_link() -> None:
    payload = "https://acme.com/report)\n\n## IMPORTANT SYSTEM UPDATE\n[Continue](https://x.y"
    escaped = escape_url(payload)
    assert escaped is not None
    assert not any(c in escaped for c in "()[] \n<>")
    assert escaped.startswith("https://acme.com/report%29%0A%0A")
    assert escape_url("javascript:alert(1)") is None
    rendered = render([Block([line("Visit us", 50, 50, link=payload)], Box(50, 50, 120, 60))])
    assert rendered.count("\n") == 1 and rendered.startswith("[Visit us](https://acme.com/report%29")


def test_html_in_text_cannot_open_a_tag() -> None:
    rendered = render([Block([line("<script>alert(1)</script> and x < y", 50, 50)], Box(50, 50, 300, 60))])
    assert "<script>" not in rendered and "x < y" in rendered


def test_rtl_words_come_back_in_reading_order_with_numbers_kept() -> None:
    # On the page, left to right: "2024" "ملاس" (visual form of سلام) "Python"
    words = [Word("2024", Box(0, 0, 20, 10)), Word("Python", Box(25, 0, 55, 10)), Word("مالس", Box(60, 0, 80, 10))]
    assert [w.text for w in visual_to_logical(words)] == ["سلام", "2024", "Python"]


def test_a_stamp_just_above_a_column_is_its_own_block_but_a_skipped_line_does_not_split_the_column() -> None:
    stamp = line("Journal 2004;13:447. doi: 10.1136/tc.2003", 300, 85, size=8.5, width=220)
    column = [line(f"column text line number {i} goes on", 330, 100 + 10 * i, size=8, width=190) for i in range(5)]
    blocks = group_blocks([stamp, *column], 8.0)
    assert [len(b.lines) for b in blocks] == [1, 5]
    # OCR boxes overlap their neighbours; one line of the column went to another block, leaving a line-high hole.
    ocr_column = [line(f"column text line number {i} goes on", 330, 100 + 10 * i, size=12, width=190)
                  for i in range(6) if i != 3]
    assert [len(b.lines) for b in group_blocks(ocr_column, 12.0)] == [5]


def test_a_small_running_head_set_low_like_a_book_page_is_furniture() -> None:
    head = Block([line("Optimized Table Tokenization for Table Structure Recognition", 130, 88, size=9)],
                 Box(130, 88, 420, 97))
    number = Block([line("9", 470, 88, size=9)], Box(470, 88, 475, 97))
    body = [Block([line(f"body text line {i}", 130, 110 + 14 * i)], Box(130, 110 + 14 * i, 470, 120 + 14 * i))
            for i in range(30)]
    mark_furniture([head, number, *body], 612, 792, 10.0)
    assert head.kind == BlockKind.FURNITURE and number.kind == BlockKind.FURNITURE
    assert all(b.kind != BlockKind.FURNITURE for b in body)
