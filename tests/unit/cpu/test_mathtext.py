"""Inline math from text-layer glyphs: scripts from size and height, the vocabulary, formulas in a line."""

from __future__ import annotations

from services.worker.engines.cpu.markdown import line_markdown
from services.worker.engines.cpu.mathtext import Glyph, sized_delimiters, word_latex
from services.worker.engines.cpu.model import Box, Line, Word


def test_a_lowered_small_letter_is_a_subscript_and_a_raised_smaller_prime_its_superscript() -> None:
    glyphs = [Glyph("λ", 12.0, 10.0, math_font=True), Glyph("g", 9.0, 12.0), Glyph("′", 7.3, 9.5, math_font=True)]
    assert word_latex(glyphs) == (r"\lambda_{g^{\prime}}", "")


def test_limits_beside_a_sum_split_into_sub_and_superscript() -> None:
    # In x order: i (low), k (high), =, 1 (low), all at script size after the sum sign.
    glyphs = [Glyph("∑", 12.0, 10.0, math_font=True), Glyph("i", 9.0, 13.0), Glyph("k", 9.0, 6.0),
              Glyph("=", 9.3, 13.0), Glyph("1", 9.0, 13.0)]
    assert word_latex(glyphs) == (r"\sum_{i=1}^{k}", "")


def test_upright_letter_runs_are_operator_names_and_script_letters_of_a_cal_font_are_calligraphic() -> None:
    ann = [Glyph("A", 12, 10, upright=True), Glyph("n", 12, 10, upright=True), Glyph("n", 12, 10, upright=True),
           Glyph("R", 9, 12), Glyph("(", 12.5, 10, math_font=True), Glyph("x", 12, 10), Glyph(")", 12.5, 10)]
    assert word_latex(ann) == (r"\operatorname{Ann}_{R}(x)", "")
    log = [Glyph("l", 12, 10, upright=True), Glyph("o", 12, 10, upright=True), Glyph("g", 12, 10, upright=True),
           Glyph("x", 12, 10, math_font=True)]
    assert word_latex(log) == (r"\log x", "")
    assert word_latex([Glyph("I", 12, 10, math_font=True, alphabet="cal"), Glyph("i", 9, 12)]) == (
        r"\mathcal{I}_{i}", "")


def test_words_that_are_not_math_or_use_unknown_glyphs_stay_text() -> None:
    assert word_latex([Glyph("w", 12, 10), Glyph("o", 12, 10)]) is None  # no math font, no script
    assert word_latex([Glyph("x", 12, 10, math_font=True), Glyph("☃", 12, 10)]) is None
    assert word_latex([Glyph(",", 12, 10, math_font=True)]) is None
    assert word_latex([Glyph("x", 12, 10, math_font=True), Glyph("2", 8, 7), Glyph(".", 12, 10)]) == ("x^{2}", ".")


def test_base_level_brackets_are_sized_only_when_they_pair_up() -> None:
    assert sized_delimiters(r"c(g, R/A_{R}(x_{i}))") == r"c\left(g, R/A_{R}\left(x_{i}\right)\right)"
    assert sized_delimiters(r"\zeta^{\psi(gs)}") == r"\zeta^{\psi(gs)}"  # inside a script: left as it is
    assert sized_delimiters(r"(a, b]") == r"(a, b]"
    assert sized_delimiters(r"\Gamma(R") == r"\Gamma(R"


def _word(text: str, x: float, *, math: tuple[str, str] | None = None, italic: bool = False) -> Word:
    return Word(text, Box(x, 0, x + 5 * len(text), 10), italic=italic, math=math)


def test_a_formula_in_a_line_becomes_one_inline_equation_and_item_numbers_stay_outside() -> None:
    words = [_word("Then", 0), _word("λg", 30, math=(r"\lambda_{g}", "")), _word("=", 45),
             _word("λg′.", 55, math=(r"\lambda_{g^{\prime}}", "."))]
    assert line_markdown(Line(words, Box(0, 0, 80, 10))) == r"Then $\lambda_{g} = \lambda_{g^{\prime}}$."
    words = [_word("150.", 0), _word("s(t)", 25, math=(r"s(t)", "")), _word("=", 50),
             _word("2t3", 60, math=("2t^{3}", "")), _word("−", 80), _word("8.", 90)]
    assert line_markdown(Line(words, Box(0, 0, 100, 10))) == r"150. $s\left(t\right) = 2t^{3} - 8$."
    assert line_markdown(Line([_word("x", 0, italic=True), _word("is", 10)], Box(0, 0, 20, 10))) == "x is"


def test_a_formula_cannot_open_a_markdown_link_and_linked_words_stay_links() -> None:
    words = [_word("[a", 0, math=("[a", "")), _word("](x)", 20, math=("](x)", ""))]
    rendered = line_markdown(Line(words, Box(0, 0, 40, 10)))
    assert "](" not in rendered and rendered.startswith("$")
    linked = Word("x2", Box(0, 0, 10, 10), math=("x^{2}", ""), link="https://example.com/x")
    assert line_markdown(Line([linked], Box(0, 0, 10, 10))) == "[x2](https://example.com/x)"
