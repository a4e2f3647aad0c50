"""Page furniture, heading plausibility and list items on synthetic pages whose right answer is known by hand."""

from __future__ import annotations

from services.worker.engines.cpu.engine import lay_out
from services.worker.engines.cpu.layout import attach_bullets, classify, mark_furniture, plausible_heading
from services.worker.engines.cpu.markdown import render
from services.worker.engines.cpu.model import Block, BlockKind, Box, Line, Word


def line(text: str, x0: float, y0: float, *, size: float = 10.0, bold_words: int = 0) -> Line:
    """A line of words at 5 points per character; the first `bold_words` words are bold."""
    words, cursor = [], x0
    for index, token in enumerate(text.split()):
        words.append(Word(token, Box(cursor, y0, cursor + 5 * len(token), y0 + size), size=size,
                          bold=index < bold_words))
        cursor += 5 * len(token) + 3
    return Line(words, Box(x0, y0, cursor - 3, y0 + size))


def block(text: str, y0: float, *, size: float = 10.0, x0: float = 50) -> Block:
    only = line(text, x0, y0, size=size)
    return Block([only], only.box)


def body(y0: float, rows: int = 12) -> list[Line]:
    return [line(f"body text of the page that runs on in row {i} and on", 50, y0 + 14 * i) for i in range(rows)]


def test_a_real_heading_is_a_heading_but_a_big_font_date_or_revision_line_is_not() -> None:
    assert plausible_heading("2 Related Work") and plausible_heading("The Rise of Personal Computers (1980s)")
    assert plausible_heading("Revision History") and plausible_heading("Results 2019")
    assert not plausible_heading("October 14, 1998")
    assert not plausible_heading("Download date: 15. Sep. 2023")
    assert not plausible_heading("Rev. B") and not plausible_heading("Doc. No. 4471-2")
    assert not plausible_heading("of 55,000 housing units, including apartments,")  # mid-sentence
    assert not plausible_heading("If you believe that this document breaches copyright please contact us now.")
    assert not plausible_heading("In addition to the 349 participating schools from the")
    assert not plausible_heading("Appendix 5 Page 8 of 11") and not plausible_heading("A-3")
    assert plausible_heading("APPENDIX A")
    blocks = [block("Introduction", 100, size=16), *[Block([ln], ln.box) for ln in body(130, 3)],
              block("March 3, 2021", 200, size=16)]
    kinds = [(b.kind, " ".join(ln.text for ln in b.lines)[:13]) for b in classify(blocks, 10.0)]
    assert kinds[0] == (BlockKind.HEADING, "Introduction")
    assert kinds[-1] == (BlockKind.PARAGRAPH, "March 3, 2021")


def test_a_stack_of_same_sized_axis_labels_is_not_a_row_of_headings() -> None:
    labels = [block(text, 120 + 30 * i, size=12) for i, text in enumerate(["Under 15", "15 to 24", "25 to 44",
                                                                            "45 to 54"])]
    out = classify([block("Figure 2. Prevalence by age", 80, size=16), *labels], 10.0)
    assert out[0].kind == BlockKind.HEADING
    assert [b.kind for b in out[1:]] == [BlockKind.PARAGRAPH] * 4
    bold = []
    for i, text in enumerate(["Under 15", "15 to 24", "25 to 44"]):
        label = line(text, 50, 120 + 30 * i, size=8, bold_words=3)
        bold.append(Block([label], label.box))
    assert [b.kind for b in classify(bold, 10.0)] == [BlockKind.PARAGRAPH] * 3  # bold, small: still labels
    alone = line("Methods", 50, 120, size=8, bold_words=1)
    assert classify([Block([alone], alone.box)], 10.0)[0].kind == BlockKind.HEADING  # one bold line heads


def test_glyph_noise_of_a_logo_font_is_furniture() -> None:
    out = classify([block("zyxwvutsrqponm", 40, size=20), block("Annual Report", 80, size=16)], 10.0)
    assert out[0].kind == BlockKind.FURNITURE
    assert out[1].kind == BlockKind.HEADING
    assert "zyx" not in render(out)


def test_letters_stepping_back_and_forth_are_words_not_glyph_noise() -> None:
    text = "the basis is non-optimal and the variable reaches its bound first"
    paragraph = [line(text, 50, 100 + 14 * i) for i in range(8)]
    out = classify([Block(paragraph, paragraph[0].box.union(paragraph[-1].box))], 10.0)
    assert out[0].kind == BlockKind.PARAGRAPH and "non-optimal" in render(out)
    assert classify([block("abcdefg", 40, size=20)], 10.0)[0].kind == BlockKind.FURNITURE
    assert classify([block("ponmlk", 40, size=20)], 10.0)[0].kind == BlockKind.FURNITURE


def test_a_page_number_and_a_date_line_at_the_page_foot_are_furniture() -> None:
    blocks = [Block([ln], ln.box) for ln in body(100, 30)]
    date = block("Download date: 15. Sep. 2023", 760, size=11)
    number = block("- 7 -", 775)
    mark_furniture([*blocks, date, number], 612, 792, 10.0)
    assert date.kind == BlockKind.FURNITURE and number.kind == BlockKind.FURNITURE
    assert all(b.kind != BlockKind.FURNITURE for b in blocks)


def test_a_bullet_glyph_set_apart_joins_its_text_so_no_item_is_empty_or_merged() -> None:
    lines = [
        line("• Accessibility: writers no longer needed expensive", 90, 100, bold_words=1),
        line("equipment to create polished work.", 108, 114),
        line("Education: word processors became a cornerstone", 108, 127.6),  # its bullet is a glyph of its own
        line("of education and of teaching.", 108, 141),
        line("• Creative Writing: writers gained powerful tools.", 90, 155),
    ]
    bullet = Line([Word("•", Box(90, 128.2, 94.6, 137.2), size=9.2)], Box(90, 128.2, 94.6, 137.2))
    lines.insert(3, bullet)
    assert len(attach_bullets(lines)) == len(lines) - 1
    markdown = render(lay_out([*lines, *body(200, 8)], 612, 792))
    items = [p for p in markdown.split("\n\n") if p.startswith("- ")]
    assert items == ["- Accessibility: writers no longer needed expensive equipment to create polished work.",
                     "- Education: word processors became a cornerstone of education and of teaching.",
                     "- Creative Writing: writers gained powerful tools."]
    assert "\n\n-\n" not in markdown + "\n" and not markdown.rstrip().endswith("-")


def test_an_item_whose_first_words_are_bold_keeps_its_wrapped_lines() -> None:
    lines = [line("• IBM MT/ST (Magnetic Tape Typewriter): Introduced in 1964, this", 90, 100, bold_words=6),
             line("machine combined the typewriter with magnetic tape storage.", 108, 114),
             line("• Wang Laboratories: In the 1970s, Wang introduced machines.", 90, 128)]
    markdown = render(lay_out([*lines, *body(200, 8)], 612, 792))
    assert ("- IBM MT/ST (Magnetic Tape Typewriter): Introduced in 1964, this machine combined the typewriter with "
            "magnetic tape storage.") in markdown.split("\n\n")
