"""Text similarity: 1 - normalized Levenshtein distance on normalized text, on inputs checkable by hand."""

from __future__ import annotations

import pytest

from pagemill_eval.textsim import normalize, similarity, split_zones, zoned_similarity


@pytest.mark.parametrize(("prediction", "reference", "expected"), [
    ("abc", "abc", 1.0),
    ("abcd", "abce", 0.75),  # one substitution in four characters
    ("abc", "abcdef", 0.5),  # three insertions, longer text has six characters
    ("", "", 1.0),
    ("", "abc", 0.0),
])
def test_similarity_known_values(prediction: str, reference: str, expected: float) -> None:
    assert similarity(prediction, reference) == pytest.approx(expected)


def test_markup_and_typography_are_normalized_away() -> None:
    markdown = "<!-- page 1 -->\n\n# The Title\n\n**Bold** and *italic* \u201cquoted\u201d \u2014 text\n\n- item"
    assert normalize(markdown) == 'The Title Bold and italic "quoted" - text item'
    assert similarity(markdown, 'The Title\nBold and italic "quoted" - text\nitem') == 1.0


def test_line_end_hyphenation_is_rejoined_on_both_sides() -> None:
    assert similarity("historians remain ignorant", "historians remain igno-\nrant") == 1.0


def test_html_table_reads_as_its_cell_text() -> None:
    assert normalize("<table><tr><th>a</th><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>") == "a b c d"


def test_zones_ignore_text_outside_them() -> None:
    zones = split_zones("hello world\n\n\nfoo bar\n")
    assert zones == ["hello world", "foo bar\n"]
    assert zoned_similarity("PAGE 54 hello world CAPTION foo bar", zones) == 1.0
    # one wrong letter in 18 zone characters
    assert zoned_similarity("hello world and foo baz", zones) == pytest.approx(1 - 1 / 18)
    assert zoned_similarity("", zones) == 0.0
